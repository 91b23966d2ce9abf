"""The administrator: admin API up before the service is ready, health, services, projections."""

from __future__ import annotations

import asyncio
import contextlib
import errno
from pathlib import Path

import httpx
import pytest
from openapi_spec_validator import validate

from roadkit import __version__
from roadkit.config import load_server
from roadkit.plugins import Plugins
from roadkit.process import allocator
from roadkit.process.administrator import Administrator
from roadkit.server import administrator
from tests.core.conftest import StraightLineSource, free_port, make_service, write


def server_file(tmp_path: Path, admin_port: int, service_port: int) -> Path:
    make_service(tmp_path, port=service_port)
    write(tmp_path / "cors.toml", 'origins = ["https://app.example"]\n')
    return write(
        tmp_path / "server.toml",
        f"""
[administrator]
cors = "cors.toml"
[administrator.listener]
port = {admin_port}
[[services]]
id = "main"
configuration = "service.toml"
mode = "same-process"
""",
    )


async def _wait_green(client: httpx.AsyncClient, url: str) -> httpx.Response:
    for _ in range(200):
        response = await client.get(url)
        if response.status_code == 200:
            return response
        await asyncio.sleep(0.02)
    raise AssertionError(response.text)


async def test_admin_answers_during_start_up_and_health_turns_green(tmp_path: Path, plugins: Plugins) -> None:
    admin_port, service_port = free_port(), free_port()
    admin = administrator(load_server(server_file(tmp_path, admin_port, service_port)), plugins)
    StraightLineSource.gate = asyncio.Event()
    starting = asyncio.create_task(admin.start())
    base = f"http://127.0.0.1:{admin_port}/admin/1.0.0"
    try:
        async with httpx.AsyncClient(timeout=5) as client:
            for _ in range(200):  # the admin listener comes up while the source is still connecting
                try:
                    response = await client.get(f"{base}/health?verbose=true")
                    break
                except httpx.ConnectError:
                    await asyncio.sleep(0.02)
            assert response.status_code == 503
            body = response.json()
            assert body["state"] == "red"
            assert body["services"][0]["state"] == "init"
            assert (await client.get(f"{base}/version")).json() == {"version": __version__}
            with pytest.raises(httpx.ConnectError):
                await client.get(f"http://127.0.0.1:{service_port}/")
            StraightLineSource.gate.set()
            # Road2's default answer is the state alone; verbose=true gives every service and source.
            assert (await _wait_green(client, f"{base}/health")).json() == {"state": "green"}
            assert (await client.get(f"{base}/health?verbose=false")).json() == {"state": "green"}
            bad = await client.get(f"{base}/health?verbose=yes")
            assert bad.status_code == 400
            assert bad.json()["error"]["message"] == "Parameter 'verbose' is invalid: value should be 'true' or 'false'"
            green = (await client.get(f"{base}/health?verbose=true")).json()
            assert green == {
                "state": "green",
                "administrator": {"state": "green"},
                "services": [
                    {
                        "id": "main",
                        "state": "green",
                        "lifecycle": "ready",
                        "sources": [{"id": "a", "type": "straightline", "state": "green"}],
                    }
                ],
            }
            await starting
            route = await client.get(
                f"http://127.0.0.1:{service_port}/simple/1.0.0/route",
                params={"resource": "lines", "start": "0,0", "end": "1,1"},
                headers={"origin": "https://app.example"},
            )
            assert route.status_code == 200
            assert route.headers["access-control-allow-origin"] == "https://app.example"
            projection = (await client.get(f"{base}/services/main/projections/EPSG:4326")).json()
            assert projection == {"id": "EPSG:4326", "parameters": "+proj=longlat +datum=WGS84 +no_defs"}
            missing = await client.get(f"{base}/services/main/projections/EPSG:9999")
            assert missing.status_code == 404 and missing.json()["error"]["message"] == "Can't find projection EPSG:9999"
            services = (await client.get(f"{base}/services")).json()
            assert services[0]["id"] == "main" and services[0]["configuration"]["application"]["name"] == "test"
            # Road2's service description: the file's keys and id first, roadkit's fields beside them.
            assert list(services[0])[:2] == ["application", "listeners"] and services[0]["application"]["name"] == "test"
            one = (await client.get(f"{base}/services/main")).json()
            assert one["application"] == services[0]["application"] and one["lifecycle"] == "ready"
            # Same process: the administrator's own allocator, read from its memory map (the setting can't change it).
            assert services[0]["allocator"] == "auto" and services[0]["processes"][0]["allocator"] == allocator.loaded()
            assert (await client.get(f"{base}/services/nope")).status_code == 404
            configuration = (await client.get(f"{base}/configuration")).json()
            assert configuration["administration"]["services"][0]["id"] == "main"
            assert configuration["administration"]["api"] == {"name": "admin", "version": "1.0.0"}
            assert configuration["administration"]["network"]["server"]["port"] == admin_port
            assert configuration["administration"]["cors"] == "cors.toml"
            assert (await client.post(f"{base}/version")).status_code == 405
            assert (await client.get(f"{base}/nothing")).json()["error"]["errorType"] == "not_found"
            document = (await client.get(f"{base}/openapi.json")).json()
            validate(document)
            assert {"/health", "/version", "/services", "/services/{service}/projections/{projection}"} <= set(document["paths"])
            assert "openapi.json" in (await client.get(f"{base}/openapi")).text
    finally:
        StraightLineSource.gate.set()
        await admin.stop()


async def test_a_service_that_fails_to_start_is_red_with_its_reason(tmp_path: Path, plugins: Plugins) -> None:
    admin_port, service_port = free_port(), free_port()
    path = server_file(tmp_path, admin_port, service_port)
    write(
        tmp_path / "resources" / "lines.resource",
        'id = "lines"\ntype = "straightline"\nsources = ["a"]\n[operations.route]\nprofile = { values = 3 }\n',
    )
    admin = administrator(load_server(path), plugins)
    await admin.start()
    try:
        async with httpx.AsyncClient() as client:
            response = await client.get(f"http://127.0.0.1:{admin_port}/admin/1.0.0/health?verbose=true")
        assert response.status_code == 503
        service = response.json()["services"][0]
        assert service["state"] == "red" and "operations.route.profile.values" in service["reason"]
    finally:
        await admin.stop()


async def test_the_admin_port_in_use_is_a_clear_error(tmp_path: Path, plugins: Plugins) -> None:
    blocker = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = blocker.sockets[0].getsockname()[1]
    try:
        admin = administrator(load_server(server_file(tmp_path, port, free_port())), plugins)
        assert admin.config.administrator.listener.port == port
        with pytest.raises(OSError) as raised:
            await admin.start()
        await admin.stop()
        # The error names the address and why, not a bare traceback from deep in the server.
        assert raised.value.errno == errno.EADDRINUSE
        assert f"cannot listen on 127.0.0.1:{port}" in str(raised.value)
    finally:
        blocker.close()


async def test_a_service_listens_with_https_on_a_self_signed_expired_certificate(tmp_path: Path, plugins: Plugins) -> None:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    # Self-signed and expired in 2020: a certificate's validity is the operator's business, never a start-up error.
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC))
        .not_valid_after(datetime.datetime(2020, 1, 2, tzinfo=datetime.UTC))
        .sign(key, hashes.SHA256())
    )
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    admin_port, https_port, http_port = free_port(), free_port(), free_port()
    path = server_file(tmp_path, admin_port, http_port)
    service = tmp_path / "service.toml"
    service.write_text(
        service.read_text() + f'\n[[listeners]]\nid = "secure"\nport = {https_port}\ncertfile = "cert.pem"\nkeyfile = "key.pem"\n'
    )
    admin = administrator(load_server(path), plugins)
    await admin.start()
    try:
        async with httpx.AsyncClient(verify=False) as client:
            secure = await client.get(
                f"https://127.0.0.1:{https_port}/simple/1.0.0/route", params={"resource": "lines", "start": "0,0", "end": "1,1"}
            )
            plain = await client.get(
                f"http://127.0.0.1:{http_port}/simple/1.0.0/route", params={"resource": "lines", "start": "0,0", "end": "1,1"}
            )
        assert secure.status_code == plain.status_code == 200
        assert secure.headers["strict-transport-security"] == "max-age=31536000"
    finally:
        await admin.stop()


async def test_a_same_process_service_restarts_without_refusing_requests_and_merges_calls(tmp_path: Path, plugins: Plugins) -> None:
    admin_port, service_port = free_port(), free_port()
    admin = administrator(load_server(server_file(tmp_path, admin_port, service_port)), plugins)
    await admin.start()
    handle = admin.handle("main")
    failures: list[str] = []
    served = 0
    stop = asyncio.Event()

    async def load() -> None:
        nonlocal served
        async with httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0)) as client:
            while not stop.is_set():
                try:
                    response = await client.get(
                        f"http://127.0.0.1:{service_port}/simple/1.0.0/route", params={"resource": "lines", "start": "0,0", "end": "1,1"}
                    )
                    served += 1 if response.status_code == 200 else 0
                    if response.status_code != 200:
                        failures.append(response.text)
                except httpx.HTTPError as exc:
                    failures.append(repr(exc))

    clients = [asyncio.create_task(load()) for _ in range(3)]
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            answers = await asyncio.gather(
                *(client.get(f"http://127.0.0.1:{admin_port}/admin/1.0.0/services/main/restart") for _ in range(20))
            )
            assert [a.status_code for a in answers] == [200] * 20
            # Each answer describes the service once its restart is done: ready, or restarting again
            # for the calls that arrived during that restart (merged into the next one).
            assert {a.json()["lifecycle"] for a in answers} <= {"ready", "restarting"}
            assert handle.describe()["lifecycle"] == "ready"  # every call waited for its run: none is left
        assert handle.describe()["starts"] in (2, 3)
        assert StraightLineSource.connections == handle.describe()["starts"]
    finally:
        stop.set()
        await asyncio.gather(*clients)
        await admin.stop()
    assert failures == [] and served > 0


async def test_the_admin_api_closes_a_connection_its_client_closes(tmp_path: Path, plugins: Plugins) -> None:
    # The admin API ran on hypercorn's own serve, which kept such a connection (its task, and its
    # socket in CLOSE_WAIT) for its 75 s keep-alive time-out: the services' servers close it at once.
    from tests.core.test_accept import _server_side, until

    admin_port = free_port()
    admin = administrator(load_server(server_file(tmp_path, admin_port, free_port())), plugins)
    await admin.start()
    clients: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    try:
        clients = [await asyncio.open_connection("127.0.0.1", admin_port) for _ in range(4)]
        for reader, writer in clients:
            writer.write(b"GET /admin/1.0.0/version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
        assert _server_side(admin_port) == ["ESTABLISHED"] * 4
        for _, writer in clients:
            writer.close()
            await writer.wait_closed()
        with contextlib.suppress(TimeoutError):
            await until(lambda: _server_side(admin_port) == [], timeout=5)
        assert _server_side(admin_port) == []
    finally:
        for _, writer in clients:
            writer.close()
        await admin.stop()


async def test_restarts_asked_during_the_first_start_are_merged_into_one_after_it(tmp_path: Path, plugins: Plugins) -> None:
    admin_port, service_port = free_port(), free_port()
    admin = administrator(load_server(server_file(tmp_path, admin_port, service_port)), plugins)
    gate = StraightLineSource.gate = asyncio.Event()
    starting = asyncio.create_task(admin.start())
    base = f"http://127.0.0.1:{admin_port}/admin/1.0.0"
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            for _ in range(200):  # the admin API answers while the source is still connecting
                with contextlib.suppress(httpx.ConnectError):
                    assert (await client.get(f"{base}/services/main")).json()["lifecycle"] == "starting"
                    break
                await asyncio.sleep(0.02)
            restarts = [asyncio.create_task(client.get(f"{base}/services/main/restart")) for _ in range(5)]
            await asyncio.sleep(0.5)
            # The five wait for the first start to end: none started another connection.
            assert not any(r.done() for r in restarts) and StraightLineSource.connections == 1
            gate.set()
            answers = await asyncio.gather(*restarts)
            assert [a.status_code for a in answers] == [200] * 5
            assert {a.json()["lifecycle"] for a in answers} == {"ready"}
        # One start, then ONE restart for the five requests.
        assert admin.handle("main").describe()["starts"] == 2
        assert StraightLineSource.connections == 2
    finally:
        gate.set()
        await starting
        await admin.stop()


def _certificate(folder: Path, *, days: tuple[int, int]) -> Path:
    """A self-signed certificate for 127.0.0.1 valid from ``days[0]`` to ``days[1]`` days from now, beside its key."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now + datetime.timedelta(days=days[0]))
        .not_valid_after(now + datetime.timedelta(days=days[1]))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    (folder / "admin.key").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    path = folder / "admin.crt"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def _https_admin(tmp_path: Path, plugins: Plugins, admin_port: int) -> Administrator:
    path = server_file(tmp_path, admin_port, free_port())
    text = path.read_text()
    assert f"port = {admin_port}\n" in text
    path.write_text(text.replace(f"port = {admin_port}\n", f'port = {admin_port}\ncertfile = "admin.crt"\nkeyfile = "admin.key"\n', 1))
    return administrator(load_server(path), plugins)


async def test_the_admin_api_serves_https_with_a_self_signed_certificate(tmp_path: Path, plugins: Plugins) -> None:
    import ssl

    cert = _certificate(tmp_path, days=(-1, 30))
    admin_port = free_port()
    admin = _https_admin(tmp_path, plugins, admin_port)
    await admin.start()
    health = f"https://127.0.0.1:{admin_port}/admin/1.0.0/health"
    try:
        # A client that trusts the certificate (as its CA) gets the admin API; the CLI does the same.
        async with httpx.AsyncClient(verify=ssl.create_default_context(cafile=str(cert))) as client:
            assert (await client.get(health)).json() == {"state": "green"}
        async with httpx.AsyncClient() as client:  # the system's authorities don't know it
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await client.get(health)
        async with httpx.AsyncClient() as client:  # no plain HTTP on the HTTPS port
            with pytest.raises(httpx.HTTPError):
                await client.get(health.replace("https://", "http://"))
    finally:
        await admin.stop()


async def test_an_expired_admin_certificate_is_served_with_a_warning_and_refused_by_clients(
    tmp_path: Path, plugins: Plugins, caplog: pytest.LogCaptureFixture
) -> None:
    import ssl

    cert = _certificate(tmp_path, days=(-30, -1))
    admin_port = free_port()
    admin = _https_admin(tmp_path, plugins, admin_port)
    # It starts: refusing would also stop the admin API, through which a new certificate is put in place.
    await admin.start()
    health = f"https://127.0.0.1:{admin_port}/admin/1.0.0/health"
    try:
        warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "expired" in r.getMessage()]
        assert warnings and all(f"the certificate {cert} expired on " in w for w in warnings)
        async with httpx.AsyncClient(verify=ssl.create_default_context(cafile=str(cert))) as client:
            with pytest.raises(httpx.ConnectError, match="certificate has expired"):
                await client.get(health)
        async with httpx.AsyncClient(verify=False) as client:  # what is served is that certificate
            assert (await client.get(health)).status_code == 200
    finally:
        await admin.stop()


async def test_an_admin_certificate_that_does_not_load_stops_the_start_naming_both_files(tmp_path: Path, plugins: Plugins) -> None:
    cert = _certificate(tmp_path, days=(-1, 30))
    (tmp_path / "other").mkdir()
    _certificate(tmp_path / "other", days=(-1, 30))
    (tmp_path / "admin.key").write_bytes((tmp_path / "other" / "admin.key").read_bytes())  # another certificate's key
    admin_port = free_port()
    admin = _https_admin(tmp_path, plugins, admin_port)
    try:
        with pytest.raises(OSError, match=f"can't load the certificate {cert} with the key {tmp_path / 'admin.key'}"):
            await admin.start()
    finally:
        await admin.stop()
