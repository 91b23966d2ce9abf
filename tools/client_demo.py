"""Start the client demo: the development IAM, the routing service, the backend and the browser app.

Run through ``./dev client``. Every part is its own process, started in order and checked before
the next; the first one to fail stops the others. Ctrl-C (or SIGTERM) stops them all.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from roadkit_client.config import load_config as load_client_config
from roadkit_deviam.config import load_config as load_iam_config
from roadkit_support.serving import wait_until_up

ROOT = Path(__file__).resolve().parents[1]
IAM_CONFIG = ROOT / "apps" / "deviam" / "example.toml"
CLIENT_CONFIG = ROOT / "apps" / "client" / "example.toml"
SERVER_CONFIG = ROOT / "examples" / "monaco" / "server.toml"


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM stops the demo the way Ctrl-C does: children terminated, then exit


def _running(process: subprocess.Popen[bytes]) -> Callable[[], bool]:
    return lambda: process.poll() is None


def main() -> int:
    signal.signal(signal.SIGTERM, _stop)
    iam = load_iam_config(IAM_CONFIG)
    client = load_client_config(CLIENT_CONFIG)
    parts = [
        (
            "development IAM",
            ["roadkit_deviam", "serve", "--config", str(IAM_CONFIG)],
            f"{client.iam.issuer}/.well-known/openid-configuration",
        ),
        ("routing service", ["roadkit.cli", "serve", str(SERVER_CONFIG)], f"{client.app.routing_url}/getcapabilities"),
        ("backend and app", ["roadkit_client", "serve", "--config", str(CLIENT_CONFIG)], f"{client.app.public_url}/settings.json"),
    ]
    processes: list[tuple[str, subprocess.Popen[bytes]]] = []
    try:
        for name, module_args, url in parts:
            process = subprocess.Popen([sys.executable, "-m", *module_args], cwd=ROOT)
            processes.append((name, process))
            try:
                wait_until_up(url, timeout=180.0, alive=_running(process))
            except (RuntimeError, TimeoutError) as exc:
                print(f"client demo: the {name} did not start: {exc}", file=sys.stderr)
                return 1
        app_url = client.app.public_url
        remote = (
            f"{app_url}/login?mode=remote" if client.allow_mode_override else f'set mode = "remote" in {CLIENT_CONFIG.relative_to(ROOT)}'
        )
        users = ", ".join(f"{u.username} / {u.password}" for u in iam.users)
        lines = [
            f"roadkit client demo: open {app_url}/ (mode {client.mode})",
            f"remote mode (portal):  {remote}",
            f"sign in as:            {users} (development IAM at {client.iam.issuer}; development only)",
            f"routing service:       {client.app.routing_url} (resource {client.app.routing_resource})",
            "Ctrl-C stops everything.",
        ]
        print("\n" + "\n".join(f"  {line}" for line in lines) + "\n", flush=True)
        while all(p.poll() is None for _, p in processes):
            time.sleep(0.5)
        name, stopped = next((n, p) for n, p in processes if p.poll() is not None)
        print(f"client demo: the {name} exited with status {stopped.returncode}; stopping the others", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        for _, process in reversed(processes):
            if process.poll() is None:
                process.terminate()
        for _, process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    sys.exit(main())
