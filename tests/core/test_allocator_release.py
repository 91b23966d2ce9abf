"""A worker gives the memory its allocator keeps free back to the system once it is idle after some work."""

from __future__ import annotations

import subprocess
import sys

import pytest

from roadkit.config import allocator as settings
from roadkit.process import allocator

# Blocks of 100 kB, written, then freed but the last: each allocator keeps most of that memory (glibc
# cannot shrink its heap below the last block), and the release gives it back.
FREED_THEN_RELEASED = """
import ctypes, re
from pathlib import Path
from roadkit.process import allocator

def dirty():
    return int(re.search(r"^Private_Dirty:\\s+(\\d+) kB", Path("/proc/self/smaps_rollup").read_text(), re.M).group(1)) // 1024

libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes, libc.memset.argtypes = [ctypes.c_void_p], [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
blocks = [libc.malloc(100_000) for _ in range(641)]
for block in blocks:
    libc.memset(block, 1, 100_000)
used = dirty()
for block in blocks[:-1]:
    libc.free(block)
kept = dirty()
allocator.releaser()()
print(allocator.own(), used, kept, dirty())
"""


@pytest.mark.parametrize("name", ["system", "tcmalloc", "jemalloc"])
def test_each_allocator_gives_the_memory_it_keeps_back(name: str) -> None:
    library = None if name == "system" else settings.find(name)
    assert name == "system" or library is not None, f"{name} is installed by the project (tools/apt-packages.txt)"
    env = allocator.environment(library)
    out = subprocess.run([sys.executable, "-c", FREED_THEN_RELEASED], env=env, capture_output=True, text=True, check=True).stdout
    own, used, kept, released = out.split()
    assert own == name
    assert int(kept) > int(released) + 40, f"64 MiB freed: {used} MiB used, {kept} kept after free, {released} after the release"


class Stop(Exception):
    """The fake clock ran out."""


async def test_the_memory_goes_back_after_work_once_idle_and_not_while_busy() -> None:
    # The process's CPU seconds at each look, one look a period (and one after each release).
    seconds = [0.0, 0.2, 0.5, 0.5, 0.5, 0.5, 0.9, 1.3, 1.3, 1.3]
    looks: list[float] = []
    releases: list[int] = []

    def cpu() -> float:
        if len(looks) == len(seconds):
            raise Stop
        looks.append(seconds[len(looks)])
        return looks[-1]

    with pytest.raises(Stop):
        await allocator.give_back_when_idle(lambda: releases.append(len(looks)), period=0.01, cpu=cpu)
    # 0.5 s of work, then the first idle look releases (the 4th), the next idle ones do not (nothing
    # worked since); 0.8 s of work again, and the next idle look (the 9th) releases.
    assert releases == [4, 9]


def test_an_allocator_given_by_path_has_no_release() -> None:
    assert allocator.releaser("libmine.so") is None
