"""SIGTERM to a worker process under load: not ready at once, serving on for ``stop_delay``, then drained; nothing fails."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from tests.core.test_children import ROUTE, Example

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("server", ["uvicorn", "hypercorn"])
async def test_a_worker_stopped_under_load_turns_unready_and_fails_no_request(tmp_path: Path, osrm_example: Path, server: str) -> None:
    example = Example(tmp_path / "monaco", osrm_example, workers=1)
    service_file = example.root / "service.toml"
    service_file.write_text(service_file.read_text() + f'\n[http]\nserver = "{server}"\n[probes]\nstop_delay = 1.5\n')
    admin = example.administrator()
    await admin.start()
    answers: list[int] = []
    failures: list[BaseException] = []
    done = asyncio.Event()

    async def load() -> None:
        # Kept-alive connections, as a load balancer's: each must be told to close, never cut.
        async with httpx.AsyncClient(timeout=30) as http:
            while not done.is_set():
                try:
                    answers.append((await http.get(f"{example.service}/simple/1.0.0/route", params=ROUTE)).status_code)
                except httpx.HTTPError as exc:
                    failures.append(exc)

    try:
        async with httpx.AsyncClient(timeout=30) as probe:
            assert (await probe.get(f"{example.service}/readyz")).status_code == 200
            clients = [asyncio.create_task(load()) for _ in range(4)]
            await asyncio.sleep(0.5)
            (worker,) = admin.handle("main").describe()["processes"]
            os.kill(worker["pid"], signal.SIGTERM)
            signalled = time.monotonic()
            # At once (once the worker's loop ran the signal handler), and for the whole stop delay:
            # the readiness probe says 503 while routes are answered.
            while (unready := await probe.get(f"{example.service}/readyz", headers={"Connection": "close"})).status_code == 200:
                assert time.monotonic() - signalled < 0.5, "still ready 0.5 s after SIGTERM"
            assert (unready.status_code, unready.json()["status"]) == (503, "stopping")
            await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - signalled)))
            during = len(answers)
            await asyncio.sleep(0.3)
            assert len(answers) > during  # still serving within the delay
            # The administrator starts a new worker on the same socket: ready again, and the load went on.
            deadline = time.monotonic() + 60
            while (await probe.get(f"{example.service}/readyz", headers={"Connection": "close"})).status_code != 200:
                assert time.monotonic() < deadline, "no new ready worker"
                await asyncio.sleep(0.1)
            (new,) = admin.handle("main").describe()["processes"]
            assert new["pid"] != worker["pid"]
            await asyncio.sleep(0.5)
            done.set()
            await asyncio.gather(*clients)
    finally:
        done.set()
        await admin.stop()
    assert failures == []
    assert answers and set(answers) == {200}
