"""Engine servers for the remote-source tests: osrm-routed and valhalla_service on free ports, and a loopback proxy.

Every server runs in its own process group and is stopped by its pid, so a test that kills one
never touches another engineer's (or another test's) servers.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import attrs
import pytest
from aiohttp import web

from roadkit_support.serving import reserve_port

# urllib without the environment's proxies: a test that sets HTTP_PROXY still reaches its servers directly.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port() -> int:
    """A loopback port reserved for an engine server (osrm-routed, valhalla_service set SO_REUSEADDR)."""
    return reserve_port()


class EngineServer:
    """One engine server process on ``host:port`` (a loopback address); ``probe`` is a path it answers when ready."""

    def __init__(
        self, name: str, command: Sequence[str], port: int, probe: str, *, log: Path | None = None, host: str = "127.0.0.1"
    ) -> None:
        self.name = name
        self.command = list(command)
        self.port = port
        self.probe = probe
        self.log = log
        self.host = host
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 60.0) -> EngineServer:
        """Start the process and wait until it answers ``probe`` (any HTTP status)."""
        out = self.log.open("ab") if self.log else subprocess.DEVNULL
        try:
            self.process = subprocess.Popen(self.command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            if self.log:
                out.close()  # the server holds its own copy of the file
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode} before it answered: {self.command}")
            try:
                with _DIRECT.open(self.url + self.probe, timeout=2):
                    return self
            except urllib.error.HTTPError:
                return self
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise TimeoutError(f"{self.name} did not answer on {self.url} within {timeout} s") from None
                time.sleep(0.05)

    def kill(self) -> None:
        """Kill the server at once (SIGKILL), as a crash would."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 5 s)."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            self.kill()


def osrm_routed(
    dataset: Path, algorithm: str = "CH", port: int | None = None, *, host: str = "127.0.0.1", log: Path | None = None
) -> EngineServer:
    """osrm-routed of the osrm-bindings wheel on ``dataset`` (not started).

    ``host``: the loopback address it listens on (all of 127.0.0.0/8 is this machine's on Linux);
    ``log``: a file that receives its output with one line per request it answers.
    """
    port = port or reserve_port(host)
    command = [sys.executable, "-m", "osrm", "routed", "--ip", host, "--port", str(port), "--threads", "2"]
    command += ["--algorithm", algorithm, "--verbosity", "INFO" if log else "WARNING", str(dataset)]
    return EngineServer("osrm-routed", command, port, "/nearest/v1/driving/0,0", log=log, host=host)


def valhalla_service(config: Path, workdir: Path, port: int | None = None, threads: int = 2) -> EngineServer:
    """valhalla_service of the pyvalhalla wheel on the tiles of ``config`` (not started)."""
    import valhalla

    port = port or free_port()
    data = json.loads(config.read_text())
    data["httpd"]["service"].update(
        {
            "listen": f"tcp://127.0.0.1:{port}",
            "loopback": f"ipc://{workdir}/loopback-{port}",
            "interrupt": f"ipc://{workdir}/interrupt-{port}",
        }
    )
    path = workdir / f"valhalla-service-{port}.json"
    path.write_text(json.dumps(data))
    binary = Path(valhalla.__file__).parent / "bin" / "valhalla_service"
    return EngineServer("valhalla_service", [str(binary), str(path), str(threads)], port, "/status")


@contextmanager
def running(*servers: EngineServer) -> Iterator[list[EngineServer]]:
    """Start every server; stop them all on the way out, whatever happened."""
    started: list[EngineServer] = []
    try:
        for server in servers:
            started.append(server.start())
        yield started
    finally:
        for server in servers:
            server.stop()


class LoopbackProxy:
    """A forward HTTP proxy on the loopback that records the URL of every request it forwards."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.url = ""
        self._runner: web.ServerRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    async def _forward(self, request: web.BaseRequest) -> web.StreamResponse:
        # A forward proxy receives the absolute URL in the request line.
        target = str(request.url)
        self.seen.append(target)
        assert self._session is not None
        body = await request.read()
        async with self._session.request(
            request.method, target, data=body or None, headers={"Content-Type": request.content_type}
        ) as answer:
            payload = await answer.read()
            return web.Response(status=answer.status, body=payload, content_type=answer.content_type)

    async def start(self) -> LoopbackProxy:
        # trust_env=False: the proxy itself connects directly, whatever the test put in HTTP_PROXY.
        self._session = aiohttp.ClientSession(trust_env=False)
        self._runner = web.ServerRunner(web.Server(self._forward))
        await self._runner.setup()
        port = free_port()
        await web.TCPSite(self._runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost: (certfile, keyfile) in PEM."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "roadkit test engine server")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]), critical=False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    certfile, keyfile = folder / "server.crt", folder / "server.key"
    certfile.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return certfile, keyfile


class TlsProxy:
    """A TLS-terminating reverse proxy on the loopback: ``https://127.0.0.1:port/...`` -> ``target/...`` over HTTP.

    What an engine server behind a load balancer with a certificate looks like to a remote source.
    ``seen`` records the path (with query) of every request it forwarded.
    """

    def __init__(self, target: str, certfile: Path, keyfile: Path) -> None:
        self.target = target
        self.certfile, self.keyfile = certfile, keyfile
        self.seen: list[str] = []
        self.url = ""
        self._runner: web.ServerRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    async def _forward(self, request: web.BaseRequest) -> web.StreamResponse:
        self.seen.append(request.raw_path)
        assert self._session is not None
        body = await request.read()
        headers = {"Content-Type": request.content_type} if body else None
        async with self._session.request(request.method, self.target + request.raw_path, data=body or None, headers=headers) as answer:
            return web.Response(status=answer.status, body=await answer.read(), content_type=answer.content_type)

    async def start(self) -> TlsProxy:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.certfile, self.keyfile)
        self._session = aiohttp.ClientSession(trust_env=False)
        self._runner = web.ServerRunner(web.Server(self._forward))
        await self._runner.setup()
        port = free_port()
        await web.TCPSite(self._runner, "127.0.0.1", port, ssl_context=context).start()
        self.url = f"https://127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()


#: The proxy variables aiohttp (trust_env) and urllib read: a proxy test starts from none of them.
PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY")


def without_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Remove every proxy variable for the test (the machine's may point anywhere)."""
    for variable in PROXY_VARIABLES:
        monkeypatch.delenv(variable, raising=False)


async def wait_for(condition: Callable[[], bool], timeout: float = 15.0) -> None:
    """Poll ``condition()`` until it is true (health probes run in the background)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not true after {timeout} s"
        await asyncio.sleep(0.05)


@attrs.frozen
class LoadResult:
    """What :func:`kill_under_load` saw: each call's answer or exception, and how many were in when the server died."""

    results: list[Any]
    killed_after: int

    @property
    def failures(self) -> list[BaseException]:
        return [r for r in self.results if isinstance(r, BaseException)]


async def kill_under_load(
    call: Callable[[], Awaitable[Any]], victim: EngineServer, *, clients: int = 8, calls: int = 25, freeze: float = 0.0
) -> LoadResult:
    """``clients`` concurrent loops of ``calls`` calls each; ``victim`` is SIGKILLed once a quarter of them answered.

    Failover must hide the death: the caller asserts ``failures == []`` and that the kill came
    while requests were still coming (``killed_after`` well below the total). ``freeze``: seconds
    the victim is stopped (SIGSTOP) before it is killed, so that it dies with requests in flight.
    """
    results: list[Any] = []
    killed_after = 0
    total = clients * calls

    async def client() -> None:
        for _ in range(calls):
            try:
                results.append(await call())
            except Exception as exc:  # collected: the caller's assertion names them
                results.append(exc)

    async def killer() -> None:
        nonlocal killed_after
        while len(results) < total // 4:
            await asyncio.sleep(0.002)
        if freeze and victim.process is not None:
            os.killpg(victim.process.pid, signal.SIGSTOP)
            await asyncio.sleep(freeze)
        victim.kill()
        killed_after = len(results)

    await asyncio.gather(*(client() for _ in range(clients)), killer())
    return LoadResult(results, killed_after)


@contextmanager
def silent_listener() -> Iterator[str]:
    """A base URL whose socket accepts connections (kernel backlog) but never answers: a hung server."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


def plain(value: Any) -> Any:
    """Responses (attrs classes), tuples and lists as plain dicts and lists, to compare."""
    if attrs.has(type(value)):
        return {k: plain(v) for k, v in attrs.asdict(value, recurse=False).items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def same(a: Any, b: Any, path: str = "") -> None:
    """Assert ``a`` equals ``b``, numbers to 10 significant digits (osrm-routed prints ``%.10g``).

    An engine server's JSON prints its doubles with fewer digits than the binding returns them
    (370.7 against 370.70000000000005): the rest must be equal.
    """
    a, b = plain(a), plain(b)
    if isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, int | float) and isinstance(b, int | float), f"{path}: {a!r} != {b!r}"
        assert a == pytest.approx(b, rel=1e-9, abs=1e-9), f"{path}: {a!r} != {b!r}"
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for key in a:
            same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{path}: {len(a)} items != {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"
