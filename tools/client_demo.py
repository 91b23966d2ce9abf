"""Start the client demo: the development IAM, the routing service, the backend and the browser app.

Run through ``./dev client``. Every part is its own process, started in order and checked before
the next; the first one to fail stops the others. Ctrl-C stops them all.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IAM_CONFIG = ROOT / "apps" / "deviam" / "example.toml"
CLIENT_CONFIG = ROOT / "apps" / "client" / "example.toml"
SERVER_CONFIG = ROOT / "examples" / "monaco" / "server.toml"


def wait_until_up(name: str, url: str, process: subprocess.Popen[bytes], timeout: float = 180.0) -> None:
    """Poll ``url`` until it answers with any HTTP status; fail when the process exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"client demo: {name} exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answered
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"client demo: {name} did not answer at {url} within {timeout:g} s")


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM stops the demo the way Ctrl-C does: children terminated, then exit


def main() -> int:
    signal.signal(signal.SIGTERM, _stop)
    iam = tomllib.loads(IAM_CONFIG.read_text(encoding="utf-8"))
    client = tomllib.loads(CLIENT_CONFIG.read_text(encoding="utf-8"))
    issuer = f"{client['iam']['url']}/realms/{client['iam']['realm']}"
    parts = [
        ("development IAM", [sys.executable, "-m", "roadkit_deviam", "serve", "--config", str(IAM_CONFIG)],
         f"{issuer}/.well-known/openid-configuration"),
        ("routing service", [sys.executable, "-m", "roadkit.cli", "serve", str(SERVER_CONFIG)],
         client["app"]["routing_url"] + "/getcapabilities"),
        ("backend and app", [sys.executable, "-m", "roadkit_client", "serve", "--config", str(CLIENT_CONFIG)],
         client["app"]["public_url"] + "/settings.json"),
    ]
    processes: list[subprocess.Popen[bytes]] = []
    names: list[str] = []
    try:
        for name, command, url in parts:
            process = subprocess.Popen(command, cwd=ROOT)
            processes.append(process)
            names.append(name)
            wait_until_up(name, url, process)
        users = ", ".join(f"{u['username']} / {u['password']}" for u in iam.get("users", []))
        app_url = client["app"]["public_url"]
        remote = (
            f"{app_url}/login?mode=remote"
            if client.get("allow_mode_override")
            else f'set mode = "remote" in {CLIENT_CONFIG.relative_to(ROOT)}'
        )
        lines = [
            f"roadkit client demo: open {app_url}/ (mode {client.get('mode', 'local')})",
            f"remote mode (portal):  {remote}",
            f"sign in as:            {users} (development IAM at {issuer}; development only)",
            f"routing service:       {client['app']['routing_url']} (resource {client['app']['routing_resource']})",
            "Ctrl-C stops everything.",
        ]
        print("\n" + "\n".join(f"  {line}" for line in lines) + "\n", flush=True)
        while all(p.poll() is None for p in processes):
            time.sleep(0.5)
        name, stopped = next((n, p) for n, p in zip(names, processes, strict=True) if p.poll() is not None)
        print(f"client demo: the {name} exited with status {stopped.returncode}; stopping the others", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    sys.exit(main())
