"""A restart asked while the service file on disk is broken: the file is checked first and the running service
keeps serving (Road2 checks the configuration before it stops a service; roadkit also keeps it answering)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.core.test_children import ROUTE, Example, green, pids

BROKEN = "\n[http]\nserver = 3\n"


@pytest.mark.parametrize("mode", ["child-process", "same-process"])
async def test_a_restart_with_a_broken_service_file_names_the_problem_and_the_service_keeps_serving(
    tmp_path: Path, osrm_example: Path, mode: str
) -> None:
    import httpx

    example = Example(tmp_path / "monaco", osrm_example, mode=mode, workers=1)
    service = example.root / "service.toml"
    admin = example.administrator()
    await admin.start()
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            assert await green(client, example)
            before = pids(admin)
            good = service.read_text()
            service.write_text(good + BROKEN)
            restart = await client.get(f"{example.admin}/services/main/restart", timeout=60)
            assert restart.status_code == 503, restart.text
            error = restart.json()["error"]
            assert error["errorType"] == "reload_failed"
            assert f"{service}: http.server: expected one of 'hypercorn', 'uvicorn', got 3" in error["message"], error["message"]
            assert "the previous one keeps serving" in error["message"], error["message"]
            # The running service was never stopped: same processes, still answering, health green.
            assert (await client.get(f"{example.service}/simple/1.0.0/route", params=ROUTE)).status_code == 200
            assert pids(admin) == before
            assert await green(client, example)
            described = (await client.get(f"{example.admin}/services/main")).json()
            assert described["lifecycle"] == "ready"
            # Once the file is repaired, the next restart applies it.
            service.write_text(good)
            old = getattr(admin.handle("main"), "service", None)  # the Service object of a same-process service
            restart = await client.get(f"{example.admin}/services/main/restart", timeout=60)
            assert restart.status_code == 200 and restart.json()["lifecycle"] == "ready", restart.text
            if old is not None:
                # The sources of the replaced service were disconnected (child processes log it: test_children).
                assert old is not admin.handle("main").service  # type: ignore[attr-defined]
                assert old.state == "stopped" and {str(s.state) for s in old.sources.values()} == {"init"}
            assert (await client.get(f"{example.service}/simple/1.0.0/route", params=ROUTE)).status_code == 200
    finally:
        await admin.stop()
