"""Serving helpers shared by the administrator and the apps."""

from __future__ import annotations

import subprocess
import sys

import pytest

from roadkit.servers import bound_socket, wait_until_up


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
