"""The memory of a group of processes while something happens: their summed PSS, sampled every 50 ms.

The proportional set size (PSS) splits a page that several processes share between them, so that the
sum over the processes counts each page once: memory-mapped data that every worker maps counts once.
"""

from __future__ import annotations

import threading
from pathlib import Path

MIB = 1 << 20


def pss(pid: int) -> int:
    """A process's proportional set size in bytes (0 when it is gone)."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) * 1024 for line in text.splitlines() if line.startswith("Pss:")), 0)


def mapped_rss(pid: int, data: str) -> dict[str, int]:
    """The resident bytes of a process's mappings of each file whose path contains ``data``."""
    try:
        text = Path(f"/proc/{pid}/smaps").read_text()
    except OSError:
        return {}
    found: dict[str, int] = {}
    path: str | None = None
    for line in text.splitlines():
        head = line.split(maxsplit=5)
        if "-" in head[0] and len(head) >= 5:  # a mapping's header: address perms offset dev inode [path]
            path = head[5] if len(head) == 6 and data in head[5] else None
        elif path is not None and head[0] == "Rss:":
            found[path] = found.get(path, 0) + int(head[1]) * 1024
    return found


def mapped(pids: set[int], data: str) -> int:
    """The memory the files whose path contains ``data`` take in all: each file counted once, at the most
    any process has of it resident (a sum of PSS read process after process would count a file more than
    once while a second process maps it between two reads)."""
    most: dict[str, int] = {}
    for pid in pids:
        for path, rss in mapped_rss(pid, data).items():
            most[path] = max(most.get(path, 0), rss)
    return sum(most.values())


def family(pids: list[int]) -> set[int]:
    """``pids`` and their descendants (a worker's engine children included)."""
    found, todo = set(), list(pids)
    while todo:
        pid = todo.pop()
        found.add(pid)
        for children in Path(f"/proc/{pid}/task").glob("*/children"):
            try:
                todo.extend(int(child) for child in children.read_text().split())
            except OSError:  # the thread or the process ended meanwhile
                continue
    return found


class Sampler:
    """The summed PSS of a set of processes and their descendants, every 50 ms in a thread, and the
    memory of the files whose path contains ``data`` (the data being switched) they map."""

    def __init__(self, pids: list[int], data: str) -> None:
        self.pids = pids
        self.data = data
        self.samples: list[int] = []
        self.mapped: list[int] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()  # held while a sample is taken: a mark falls between two samples
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.05):
            with self.lock:
                pids = family(self.pids)
                self.samples.append(sum(pss(pid) for pid in pids))
                self.mapped.append(mapped(pids, self.data))

    def __enter__(self) -> Sampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()

    def mark(self) -> int:
        """The number of samples taken so far (to split them in phases), once the one under way is taken:
        a sample begun before the mark belongs to the phase before it."""
        with self.lock:
            return len(self.samples)
