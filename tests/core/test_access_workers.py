"""Quotas of ``[access]`` across the two worker processes of a real service (OSRM Monaco): exact under load."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from openapi_spec_validator import validate

from roadkit.auth.tokens import API_KEY_PREFIX, add_token
from roadkit.process.administrator import Administrator
from tests.core.test_children import ROUTE, Example, health

QUOTA = 30
ANONYMOUS_QUOTA = 10


async def start(tmp_path: Path, osrm_example: Path, access: str) -> tuple[Example, Administrator, dict[str, str]]:
    """The Monaco example in two worker processes with ``access`` appended to its service file; keys alice, bob, carol."""
    example = Example(tmp_path / "monaco", osrm_example)
    keys = {name: add_token(example.root / "keys.txt", name, prefix=API_KEY_PREFIX) for name in ("alice", "bob", "carol")}
    service = example.root / "service.toml"
    service.write_text(service.read_text() + "\n" + access)
    admin = example.administrator()
    await admin.start()
    return example, admin, keys


@pytest.fixture(params=["uvicorn", "hypercorn"])
async def rated(
    request: pytest.FixtureRequest, tmp_path: Path, osrm_example: Path
) -> AsyncIterator[tuple[Example, Administrator, dict[str, str]]]:
    access = (
        f'[http]\nserver = "{request.param}"\n'
        '[access]\nkeys_file = "keys.txt"\nanonymous = true\n'
        f"[access.quota]\nrequests = {QUOTA}\nwindow = 600\n"
        f"[access.anonymous_quota]\nrequests = {ANONYMOUS_QUOTA}\nwindow = 600\n"
    )
    example, admin, keys = await start(tmp_path, osrm_example, access)
    try:
        yield example, admin, keys
    finally:
        await admin.stop()


async def burst(url: str, headers: dict[str, str], requests: int, parallel: int) -> list[httpx.Response]:
    """``requests`` routes sent ``parallel`` at a time, each on a new connection (so that both workers get some)."""
    answers: list[httpx.Response] = []
    queue = list(range(requests))

    async def client() -> None:
        async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_keepalive_connections=0)) as http:
            while queue:
                queue.pop()
                answers.append(await http.get(f"{url}/simple/1.0.0/route", params=ROUTE, headers=headers))

    await asyncio.gather(*(client() for _ in range(parallel)))
    return answers


async def test_rate_quotas_are_exact_across_two_workers_under_concurrent_load(rated: tuple[Example, Administrator, dict[str, str]]) -> None:
    example, _, keys = rated
    alice, bob, anonymous = await asyncio.gather(
        burst(example.service, {"X-Api-Key": keys["alice"]}, 90, 8),
        burst(example.service, {"X-Api-Key": keys["bob"]}, 90, 8),
        burst(example.service, {}, 40, 4),
    )
    for answers, quota in ((alice, QUOTA), (bob, QUOTA), (anonymous, ANONYMOUS_QUOTA)):
        statuses = Counter(answer.status_code for answer in answers)
        assert statuses == {200: quota, 429: len(answers) - quota}, statuses  # exact: every worker counts in one table
        counted = [re.fullmatch(r'"default";r=(\d+);t=\d+', a.headers["ratelimit"]) for a in answers if a.status_code == 200]
        remaining = sorted(int(match[1]) for match in counted if match is not None)
        assert remaining == list(range(quota))  # each count seen once: no two workers gave the same one
        for answer in answers:
            assert answer.headers["ratelimit-policy"] == f'"default";q={quota};w=600'
            if answer.status_code == 429:
                assert 0 < int(answer.headers["retry-after"]) <= 600
                assert answer.headers["ratelimit"].startswith('"default";r=0;')
    async with httpx.AsyncClient() as client:
        workers = (await health(client, example))["services"][0]["workers"]
    assert len(workers) == 2 and all(w["connections"]["accepted"] > 0 for w in workers), workers  # both workers answered
    async with httpx.AsyncClient() as client:  # the documents stay open to all, uncounted
        for path in ("/simple/1.0.0/openapi.json", "/simple/1.0.0/openapi", "/"):
            assert (await client.get(example.service + path)).status_code == 200
        assert (
            await client.get(f"{example.service}/simple/1.0.0/route", params=ROUTE, headers={"X-Api-Key": keys["carol"]})
        ).status_code == 200


async def _slow_body(release: asyncio.Event, sent: asyncio.Event | None = None) -> AsyncIterator[bytes]:
    yield b'{"resource": "monaco-osrm", '
    if sent is not None:
        sent.set()  # asked for the next chunk: the head and the first chunk are written
    await release.wait()
    yield b'"start": "7.41337,43.72956", "end": "7.41983,43.73115"}'


async def test_concurrency_quota_counts_requests_in_progress_in_every_worker(tmp_path: Path, osrm_example: Path) -> None:
    example, admin, keys = await start(tmp_path, osrm_example, '[access]\nkeys_file = "keys.txt"\n[access.quota]\nconcurrent = 2\n')
    url = f"{example.service}/simple/1.0.0/route"
    headers = {"X-Api-Key": keys["alice"], "content-type": "application/json"}
    release = asyncio.Event()
    try:
        async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_keepalive_connections=0)) as http:
            # Two requests in progress (their bodies held back), on connections that the workers share out.
            sent = [asyncio.Event(), asyncio.Event()]
            slow = [asyncio.create_task(http.post(url, content=_slow_body(release, s), headers=headers)) for s in sent]
            await asyncio.gather(*(s.wait() for s in sent))
            await asyncio.sleep(0.5)  # the workers read the heads: both requests are in progress (a check sent earlier would take a place)

            async def refused() -> bool:
                answer = await http.get(url, params=ROUTE, headers={"X-Api-Key": keys["alice"]})
                return answer.status_code == 429

            await _eventually(refused)
            for _ in range(6):  # whichever worker takes it
                third = await http.get(url, params=ROUTE, headers={"X-Api-Key": keys["alice"]})
                assert third.status_code == 429 and third.headers["retry-after"] == "1"
                assert "at most 2 in progress" in third.json()["error"]["message"]
                assert "ratelimit" not in third.headers  # no rate quota: no rate headers
            other = await http.get(url, params=ROUTE, headers={"X-Api-Key": keys["bob"]})
            assert other.status_code == 200  # bob has his own count
            release.set()
            assert [(await task).status_code for task in slow] == [200, 200]
            assert (await http.get(url, params=ROUTE, headers={"X-Api-Key": keys["alice"]})).status_code == 200
            missing = await http.get(url, params=ROUTE)
            assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("ApiKey ")
            # The native OSRM API: the same keys; its OpenAPI document states them and stays open.
            native = f"{example.service}/osrm/1.0.0/monaco-osrm/route/v1/car/7.41337,43.72956;7.41983,43.73115"
            assert (await http.get(native)).status_code == 401
            answer = await http.get(native, params={"apikey": keys["bob"], "overview": "false"})
            assert answer.status_code == 200 and answer.json()["code"] == "Ok"  # apikey never reached the API's option parser
            document = (await http.get(f"{example.service}/osrm/1.0.0/openapi.json")).json()
            validate(document)
            assert set(document["components"]["securitySchemes"]) == {"apiKeyHeader", "apiKeyQuery"}
            assert document["security"] == [{"apiKeyHeader": []}, {"apiKeyQuery": []}]
    finally:
        release.set()
        await admin.stop()


async def _eventually(check: Callable[[], Awaitable[bool]], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "not true in time"
        await asyncio.sleep(0.05)


async def test_requests_of_a_crashed_worker_no_longer_count_as_in_progress(tmp_path: Path, osrm_example: Path) -> None:
    example, admin, keys = await start(tmp_path, osrm_example, '[access]\nkeys_file = "keys.txt"\n[access.quota]\nconcurrent = 1\n')
    url = f"{example.service}/simple/1.0.0/route"
    headers = {"X-Api-Key": keys["alice"]}
    release = asyncio.Event()
    try:
        async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_keepalive_connections=0)) as http:
            sent = asyncio.Event()
            held = asyncio.create_task(
                http.post(url, content=_slow_body(release, sent), headers={**headers, "content-type": "application/json"})
            )
            await sent.wait()
            await asyncio.sleep(0.5)  # the worker read the head: the request is in progress

            async def refused() -> bool:
                return (await http.get(url, params=ROUTE, headers=headers)).status_code == 429

            await _eventually(refused)
            for process in admin.handle("main").describe()["processes"]:
                os.kill(process["pid"], signal.SIGKILL)  # whichever worker holds the request
            release.set()  # the client sends the rest of the body to a closed connection
            with pytest.raises(httpx.HTTPError):
                await held

            async def served() -> bool:
                try:
                    return (await http.get(url, params=ROUTE, headers=headers)).status_code == 200
                except httpx.HTTPError:
                    return False  # the workers are starting again

            await _eventually(served, timeout=30)
    finally:
        release.set()
        await admin.stop()
