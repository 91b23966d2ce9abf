"""Workers forked from the service's zygote on the real OSRM Monaco data: shared memory, exits, the zygote's death."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from roadkit.process.children import ChildProcessService
from roadkit.process.metrics import process_memory
from roadkit.process.worker import renumbered
from tests.core.test_children import ROUTE, Example, gone, green, health, wait_for
from tests.pss import MIB, family


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_a_spec_is_renumbered_to_the_descriptors_the_zygote_received() -> None:
    spec = {
        "channel": 13,
        "listeners": {"127.0.0.1:80": 11, "[::1]:80": 12},
        "connections": {"fd": 14, "slot": 1},
        "quotas": 15,
        "worker": 0,
    }
    mapping = {13: 5, 11: 6, 12: 7, 14: 8, 15: 9}
    assert renumbered(spec, mapping) == {
        "channel": 5,
        "listeners": {"127.0.0.1:80": 6, "[::1]:80": 7},
        "connections": {"fd": 8, "slot": 1},
        "quotas": 9,
        "worker": 0,
    }
    with pytest.raises(KeyError):  # a descriptor that was not sent is an error, never a number of the zygote's own
        renumbered({**spec, "quotas": 99}, mapping)


async def test_workers_are_forked_from_one_zygote_and_share_its_memory(tmp_path: Path, osrm_example: Path) -> None:
    example = Example(tmp_path / "monaco", osrm_example)
    admin = example.administrator()
    await admin.start()
    try:
        handle = admin.handle("main")
        assert isinstance(handle, ChildProcessService)
        async with httpx.AsyncClient(timeout=10) as client:
            assert await green(client, example)
            described = (await client.get(f"{example.admin}/services/main")).json()
            [zygote] = handle.zygotes.values()
            assert zygote.process is not None and parent(zygote.process.pid) == os.getpid()
            for process in described["processes"]:
                assert parent(process["pid"]) == zygote.process.pid
                memory = process["memory"]
                # What the admin API shows is what /proc says, and a forked worker shares most of its pages.
                assert 0 < memory["uss"] < memory["pss"]
                rss = int(
                    next(
                        line for line in Path(f"/proc/{process['pid']}/status").read_text().splitlines() if line.startswith("VmRSS")
                    ).split()[1]
                )
                assert memory["pss"] < rss * 1024 * 0.8, (memory, rss)
            route = await client.get(f"{example.service}/simple/1.0.0/route", params=ROUTE)
            assert route.status_code == 200 and route.json()["distance"] > 0
    finally:
        await admin.stop()
    assert zygote.process.returncode is not None  # stopped with its service
    assert all(gone(p["pid"]) for p in described["processes"])


async def test_a_worker_killed_is_reported_with_its_signal_and_started_again(tmp_path: Path, osrm_example: Path) -> None:
    example = Example(tmp_path / "monaco", osrm_example)
    admin = example.administrator()
    await admin.start()
    try:
        handle = admin.handle("main")
        assert isinstance(handle, ChildProcessService)
        victim = handle.workers[1].pid
        assert victim is not None
        os.kill(victim, signal.SIGKILL)
        async with httpx.AsyncClient(timeout=10) as client:
            await wait_for(lambda: _restarted(handle, victim))
            assert handle.last_exit is not None
            assert handle.last_exit["pid"] == victim and handle.last_exit["signal"] == "SIGKILL" and not handle.last_exit["expected"]
            await wait_for(lambda: green(client, example))
    finally:
        await admin.stop()


async def _restarted(handle: ChildProcessService, victim: int) -> bool:
    return len(handle.workers) == 2 and victim not in [w.pid for w in handle.workers] and all(w.alive for w in handle.workers)


async def test_the_zygote_killed_takes_its_workers_and_the_service_recovers_with_a_new_one(tmp_path: Path, osrm_example: Path) -> None:
    example = Example(tmp_path / "monaco", osrm_example)
    admin = example.administrator()
    await admin.start()
    try:
        handle = admin.handle("main")
        assert isinstance(handle, ChildProcessService)
        [zygote] = handle.zygotes.values()
        assert zygote.process is not None
        workers = [w.pid for w in handle.workers]
        zygote.process.send_signal(signal.SIGKILL)
        async with httpx.AsyncClient(timeout=10) as client:
            # The workers die with it (PR_SET_PDEATHSIG), the service turns red, then recovers with a new zygote.
            await wait_for(lambda: _all_gone(workers), timeout=10)
            await wait_for(lambda: green(client, example), timeout=60)
            [again] = handle.zygotes.values()
            assert again is not zygote and again.process is not None and again.process.pid != zygote.process.pid
            body = await health(client, example)
            assert {w["pid"] for w in body["services"][0]["workers"]}.isdisjoint(workers)
            route = await client.get(f"{example.service}/simple/1.0.0/route", params=ROUTE)
            assert route.status_code == 200
    finally:
        await admin.stop()


async def _all_gone(pids: list[int | None]) -> bool:
    await asyncio.sleep(0)
    return all(pid is not None and gone(pid) for pid in pids)


def test_the_memory_of_a_process_is_read_from_proc() -> None:
    memory = process_memory(os.getpid())
    assert memory is not None and 0 < memory["uss"] <= memory["pss"]
    assert process_memory(2**22 + 1) is None  # above pid_max's default: no such process


async def _service_pss(tmp_path: Path, osrm_example: Path, workers: int) -> int:
    """The summed PSS of a started service's zygote and workers (after each answered routes), in bytes."""
    example = Example(tmp_path / f"monaco-{workers}", osrm_example, workers=workers)
    admin = example.administrator()
    await admin.start()
    try:
        handle = admin.handle("main")
        assert isinstance(handle, ChildProcessService)
        [zygote] = handle.zygotes.values()
        assert zygote.process is not None
        async with httpx.AsyncClient(timeout=10, limits=httpx.Limits(max_keepalive_connections=0)) as client:
            for _ in range(10 * workers):
                assert (await client.get(f"{example.service}/simple/1.0.0/route", params=ROUTE)).status_code == 200
        await asyncio.sleep(0.3)
        return sum((process_memory(pid) or {"pss": 0})["pss"] for pid in family([zygote.process.pid]))
    finally:
        await admin.stop()


async def test_each_worker_beyond_the_first_costs_at_most_30_mib(tmp_path: Path, osrm_example: Path) -> None:
    one = await _service_pss(tmp_path, osrm_example, 1)
    three = await _service_pss(tmp_path, osrm_example, 3)
    beyond = (three - one) / 2 / MIB
    assert 0 < beyond <= 30, f"each worker beyond the first: {beyond:.1f} MiB (1 worker: {one / MIB:.0f} MiB, 3: {three / MIB:.0f} MiB)"


def test_roadkit_serve_forks_every_generation_from_the_zygote_it_started_first(tmp_path: Path, osrm_example: Path) -> None:
    example = Example(tmp_path / "monaco", osrm_example)
    process = subprocess.Popen(
        [sys.executable, "-m", "roadkit.cli", "serve", str(example.root / "server.toml")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        first = _ready(example)
        zygotes = [pid for pid in family([process.pid]) if pid != process.pid and parent(pid) == process.pid]
        # One zygote, started with the command (before the administrator's own imports), adopted by the service.
        assert len(zygotes) == 1, zygotes
        assert {parent(p["pid"]) for p in first["processes"]} == set(zygotes)
        assert httpx.get(f"{example.admin}/services/main/restart", timeout=60).json()["lifecycle"] == "ready"
        second = httpx.get(f"{example.admin}/services/main").json()
        assert {p["pid"] for p in second["processes"]}.isdisjoint(p["pid"] for p in first["processes"])
        assert {parent(p["pid"]) for p in second["processes"]} == set(zygotes)  # the same zygote, no second one
    finally:
        process.terminate()
        process.wait(60)
    assert all(gone(pid) for pid in zygotes)


def _ready(example: Example) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            described: dict[str, Any] = httpx.get(f"{example.admin}/services/main").json()
            if described.get("lifecycle") == "ready":
                return described
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError("not ready after 60 s")
