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


# Eight threads each allocate then free 5 MB of small blocks and stay alive: what tcmalloc keeps in
# their caches (freed at a thread's end only, and not given back by a release).
THREAD_CACHES = """
import ctypes, threading
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
done, stop = threading.Barrier(9), threading.Event()

def work():
    blocks = [libc.malloc(256) for _ in range(20_000)]
    for block in blocks:
        libc.free(block)
    done.wait()
    stop.wait()

threads = [threading.Thread(target=work) for _ in range(8)]
for thread in threads:
    thread.start()
done.wait()
value = ctypes.c_size_t()
assert libc.MallocExtension_GetNumericProperty(b"tcmalloc.current_total_thread_cache_bytes", ctypes.byref(value))
print(value.value)
stop.set()
"""


def test_tcmalloc_threads_keep_little_free_memory_unless_the_environment_says_otherwise() -> None:
    library = settings.find("tcmalloc")
    assert library is not None, "tcmalloc is installed by the project (tools/apt-packages.txt)"

    def kept(env: dict[str, str]) -> int:
        return int(subprocess.run([sys.executable, "-c", THREAD_CACHES], env=env, capture_output=True, text=True, check=True).stdout)

    assert kept(allocator.environment(library)) < 4 << 20
    # An operator's own setting is kept: here tcmalloc's default, under which the eight threads keep 10 MB.
    assert kept(allocator.environment(library, {"TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES": str(32 << 20)})) > 8 << 20


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
