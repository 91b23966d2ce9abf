"""Serving: the core's server on its listeners, and the helpers shared by the apps, tests and tools."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import errno
import socket
import ssl
import subprocess
import sys
import warnings
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from roadkit.config.models import Listener
from roadkit.process.listen import ListeningSockets, SocketServer
from roadkit_support.serving import bound_socket, reserve_port, wait_until_up


def test_wait_until_up_reports_a_server_that_died_at_once() -> None:
    with bound_socket("127.0.0.1", 0) as sock:  # a port nobody answers on
        port = sock.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    process.wait()
    with pytest.raises(RuntimeError, match="exited before it answered"):
        wait_until_up(f"http://127.0.0.1:{port}/", timeout=30.0, alive=lambda: process.poll() is None)


def test_wait_until_up_times_out_when_nothing_answers() -> None:
    with bound_socket("127.0.0.1", 0) as sock:
        port = sock.getsockname()[1]
    with pytest.raises(TimeoutError):
        wait_until_up(f"http://127.0.0.1:{port}/", timeout=0.3)


def _self_signed(folder: Path, name: str) -> tuple[Path, Path, bytes]:
    """A self-signed certificate for ``name``: (certfile, keyfile, the certificate in DER)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    certfile, keyfile = folder / f"{name}.crt", folder / f"{name}.key"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return certfile, keyfile, cert.public_bytes(serialization.Encoding.DER)


def _presented_certificate(port: int) -> bytes:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, context.wrap_socket(raw) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return der


def _lifespan_app(events: list[str]) -> Starlette:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        events.append("startup")
        yield
        events.append("shutdown")

    async def hello(request: Request) -> PlainTextResponse:
        return PlainTextResponse(request.url.scheme)

    return Starlette(routes=[Route("/", hello)], lifespan=lifespan)


@pytest.mark.parametrize("http_server", ["hypercorn", "uvicorn"])
async def test_each_https_listener_presents_its_own_certificate(tmp_path: Path, http_server: str) -> None:
    one_cert, one_key, one_der = _self_signed(tmp_path, "one.example")
    two_cert, two_key, two_der = _self_signed(tmp_path, "two.example")
    port = {name: reserve_port() for name in ("plain", "one", "two", "one-again")}
    listeners = [
        Listener(port=port["plain"], id="plain"),
        Listener(port=port["one"], id="one", certfile=one_cert, keyfile=one_key),
        Listener(port=port["two"], id="two", certfile=two_cert, keyfile=two_key),
        Listener(port=port["one-again"], id="one-again", certfile=one_cert, keyfile=one_key),
    ]
    events: list[str] = []
    bound = ListeningSockets()
    bound.update(listeners).commit()
    server = SocketServer(_lifespan_app(events), [(lst, bound.sockets[lst.bind]) for lst in listeners], http_server=http_server)
    await server.start()
    try:
        presented = await asyncio.gather(*(asyncio.to_thread(_presented_certificate, port[name]) for name in ("one", "two", "one-again")))
        assert presented == [one_der, two_der, one_der]
        async with httpx.AsyncClient(verify=False, timeout=5) as client:
            for name, scheme in (("plain", "http"), ("one", "https"), ("two", "https"), ("one-again", "https")):
                response = await client.get(f"{scheme}://127.0.0.1:{port[name]}/")
                assert (response.status_code, response.text) == (200, scheme)
        assert events == ["startup"]  # the app starts once, however many certificates it is served with
    finally:
        await server.stop()
        bound.close()
    assert events == ["startup", "shutdown"]


def test_the_development_iam_needs_no_routing_core() -> None:
    # It serves with roadkit_support.serving and reads its configuration with roadkit_support.documents:
    # the roadkit distribution is no requirement of it, and no module of roadkit is loaded.
    import re
    from importlib.metadata import requires

    needed = {re.split(r"[ <>=!~;\[]", requirement, maxsplit=1)[0].lower() for requirement in requires("roadkit-deviam") or []}
    assert "roadkit-support" in needed and "roadkit" not in needed, sorted(needed)
    code = (
        "import sys, roadkit_deviam.app, roadkit_deviam.cli, roadkit_deviam.testing;"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('roadkit'))))"
    )
    loaded = set(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split())
    assert "roadkit_support.serving" in loaded and "roadkit_support.documents" in loaded
    assert not {m for m in loaded if m == "roadkit" or m.startswith("roadkit.")}, sorted(loaded)


def test_the_support_library_imports_nothing_of_roadkit() -> None:
    code = (
        "import sys, roadkit_support.serving, roadkit_support.documents;"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('roadkit'))))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    assert loaded == ["roadkit_support", "roadkit_support.documents", "roadkit_support.serving"]


def test_a_reserved_port_is_handed_to_no_one_else_but_binds_with_reuse_address() -> None:
    port = reserve_port()
    # Another bind without SO_REUSEADDR (what the kernel checks before handing a port out) is refused...
    other = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        with pytest.raises(OSError) as raised:
            other.bind(("127.0.0.1", port))
        assert raised.value.errno == errno.EADDRINUSE
    finally:
        other.close()
    # ...while the server it is reserved for, which sets SO_REUSEADDR (bound_socket, hypercorn, the engines), binds it.
    with bound_socket("127.0.0.1", port) as sock:
        sock.listen(1)
        assert sock.getsockname()[1] == port


def test_a_listener_in_use_leaves_no_socket_open(tmp_path: Path) -> None:
    with bound_socket("127.0.0.1", 0) as blocker:
        blocker.listen(1)
        busy = blocker.getsockname()[1]
        free = reserve_port()
        bound = ListeningSockets()
        with warnings.catch_warnings():
            warnings.simplefilter("error", ResourceWarning)
            with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{busy}"):
                bound.update([Listener(port=free, id="free"), Listener(port=busy, id="busy")])
            assert bound.sockets == {}
            # The first listener's port was released: it binds again at once.
            with bound_socket("127.0.0.1", free) as again:
                assert again.getsockname()[1] == free


@pytest.mark.parametrize("http_server", ["hypercorn", "uvicorn"])
async def test_a_replacing_server_takes_the_sockets_over_and_no_request_fails(http_server: str) -> None:
    """A new server on the same socket, the old one stopped (drained): keep-alive clients move over, none fails."""
    listener = Listener(port=reserve_port())
    bound = ListeningSockets()
    bound.update([listener]).commit()

    def serve(answer: str) -> SocketServer:
        async def hello(request: Request) -> PlainTextResponse:
            return PlainTextResponse(answer)

        return SocketServer(Starlette(routes=[Route("/", hello)]), [(listener, bound.sockets[listener.bind])], http_server=http_server)

    old = serve("old")
    await old.start()
    stop = asyncio.Event()

    async def load() -> list[str]:
        seen: list[str] = []
        async with httpx.AsyncClient(timeout=10) as client:
            while not stop.is_set():
                try:
                    seen.append((await client.get(f"http://127.0.0.1:{listener.port}/")).text)
                except httpx.HTTPError as exc:
                    seen.append(type(exc).__name__)
        return seen

    clients = [asyncio.create_task(load()) for _ in range(3)]
    await asyncio.sleep(0.3)
    new = serve("new")
    await new.start()
    await old.stop()
    await asyncio.sleep(0.3)
    stop.set()
    seen = [answer for task in clients for answer in await task]
    await new.stop()
    bound.close()
    assert set(seen) == {"old", "new"} and seen.count("new") > 3, seen[-10:]
    with pytest.raises(httpx.ConnectError):  # stopped: the socket is closed, nothing listens any more
        async with httpx.AsyncClient(timeout=2) as client:
            await client.get(f"http://127.0.0.1:{listener.port}/")
