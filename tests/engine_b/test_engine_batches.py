"""Batches of engine calls: under load, the waiting calls run back to back and their answers come back together."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from roadkit.config.loader import read_source
from roadkit.routing.model import Cost, IsochroneRequest
from roadkit_valhalla import ValhallaSource, engine_threads
from roadkit_valhalla.engine_threads import Batching, EngineThreads, InlineEngine
from tests.engine_b.conftest import connected, edit_source


@pytest.fixture
def handed_back(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of each hand-off of answers to the loop (EngineThreads calls ``_settle`` once per batch)."""
    sizes: list[int] = []
    settle = engine_threads._settle

    def recording(answers: list[Any]) -> None:
        sizes.append(len(answers))
        settle(answers)

    monkeypatch.setattr(engine_threads, "_settle", recording)
    return sizes


async def _behind_a_busy_engine(engine: EngineThreads, count: int) -> tuple[list[int], list[int]]:
    """One call holds the engine while ``count`` more are handed over; then all are answered: (answers, threads)."""
    release = threading.Event()
    threads: list[int] = []

    def call(i: int) -> int:
        threads.append(threading.get_ident())
        if i == 0:
            assert release.wait(10)
        time.sleep(0.002)
        return i

    first = asyncio.ensure_future(engine.run(call, 0))
    await asyncio.sleep(0.05)  # the engine is in the first call
    rest = [asyncio.ensure_future(engine.run(call, i)) for i in range(1, count + 1)]
    await asyncio.sleep(0)
    release.set()
    try:
        return list(await asyncio.gather(first, *rest)), threads
    finally:
        engine.close()


def test_a_batch_ends_when_full_or_when_one_more_call_would_take_its_first_answer_past_the_delay() -> None:
    batching = Batching(4, 0.050)
    assert not batching.full(1, first_answered=10.000, last_started=9.990, now=10.000)  # 0 + 10 ms
    assert not batching.full(3, first_answered=10.000, last_started=10.020, now=10.030)  # 30 + 10 ms
    assert batching.full(3, first_answered=10.000, last_started=10.020, now=10.041)  # 41 + 21 ms
    assert batching.full(4, first_answered=10.000, last_started=10.001, now=10.002)  # full
    assert batching.full(1, first_answered=10.000, last_started=9.900, now=10.000)  # one long call: alone
    assert Batching(0, -1).batch == 1 and Batching(0, -1).delay == 0.0
    assert Batching().full(1, first_answered=10.0, last_started=10.0, now=10.0)  # the default: no batches


def test_a_batch_counts_its_answers_and_times_from_the_first() -> None:
    batch = Batching(3, 10.0).start()
    now = time.monotonic()
    assert not batch.answer(now) and not batch.answer(now)
    assert batch.answer(now) and batch.answered == 3  # full at 3
    late = Batching(8, 0.050).start()
    assert not late.answer(time.monotonic())
    assert late.answer(time.monotonic() - 0.060)  # a 60 ms call: one more would take the first answer past 50 ms


async def test_the_calls_waiting_behind_a_busy_engine_run_back_to_back_and_come_back_in_one_wake_up(handed_back: list[int]) -> None:
    engine = EngineThreads([object()], "batch", Batching(8, 10.0))
    answers, threads = await _behind_a_busy_engine(engine, 5)
    assert answers == [0, 1, 2, 3, 4, 5]
    assert handed_back == [6]  # the first call's answer waits for the five that were waiting when it ended
    assert len(set(threads)) == 1


async def test_a_batch_holds_at_most_its_size(handed_back: list[int]) -> None:
    engine = EngineThreads([object()], "batch", Batching(2, 10.0))
    answers, _ = await _behind_a_busy_engine(engine, 5)
    assert answers == [0, 1, 2, 3, 4, 5]
    assert handed_back == [2, 2, 2]


async def test_without_batches_each_answer_comes_back_on_its_own(handed_back: list[int]) -> None:
    for batching in (Batching(1, 10.0), Batching(8, 0.0)):
        handed_back.clear()
        engine = EngineThreads([object()], "batch", batching)
        answers, _ = await _behind_a_busy_engine(engine, 4)
        assert answers == [0, 1, 2, 3, 4]
        assert handed_back == [1, 1, 1, 1, 1], batching.batch


async def test_a_call_whose_request_gave_up_while_waiting_is_skipped_and_a_failed_call_fails_only_its_request(
    handed_back: list[int],
) -> None:
    engine = EngineThreads([object()], "batch", Batching(8, 10.0))
    release = threading.Event()
    ran: list[int] = []

    def call(i: int) -> int:
        ran.append(i)
        if i == 0:
            assert release.wait(10)
        if i == 2:
            raise RuntimeError("no path")
        return i

    tasks = [asyncio.ensure_future(engine.run(call, i)) for i in range(5)]
    await asyncio.sleep(0.05)
    tasks[1].cancel()
    await asyncio.sleep(0)
    release.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    engine.close()
    assert ran == [0, 2, 3, 4]
    assert results[0] == 0 and results[3:] == [3, 4]
    assert isinstance(results[1], asyncio.CancelledError)
    assert isinstance(results[2], RuntimeError) and str(results[2]) == "no path"
    assert handed_back == [4]


async def test_closing_stops_every_thread_after_the_calls_handed_over(handed_back: list[int]) -> None:
    engine = EngineThreads([object(), object()], "batch", Batching(8, 10.0))
    release = threading.Event()

    def call(i: int) -> int:
        assert release.wait(10)
        return i

    tasks = [asyncio.ensure_future(engine.run(call, i)) for i in range(6)]
    await asyncio.sleep(0.05)
    engine.close()
    release.set()
    assert await asyncio.gather(*tasks) == list(range(6))
    deadline = time.monotonic() + 5
    while engine.alive() and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert engine.alive() == 0
    assert sum(handed_back) == 6


@pytest.mark.parametrize(("batch", "per_turn"), [(1, [1] * 6), (4, [4, 2]), (8, [6])])
async def test_inline_calls_run_in_batches_of_the_loop_turns(batch: int, per_turn: list[int]) -> None:
    """Inline: the waiting calls of one batch run in the same turn of the loop; without batches, one per turn."""
    turns = [0]
    loop = asyncio.get_running_loop()

    def tick() -> None:
        turns[0] += 1
        if turns[0] < 1000:
            loop.call_soon(tick)

    engine = InlineEngine(object(), Batching(batch, 10.0))
    seen: list[int] = []

    def call(i: int) -> int:
        seen.append(turns[0])
        return i

    loop.call_soon(tick)
    await asyncio.sleep(0)
    assert await asyncio.gather(*(engine.run(call, i) for i in range(6))) == list(range(6))
    assert [len(list(calls)) for _, calls in itertools.groupby(seen)] == per_turn


async def test_batched_isochrones_of_the_real_engine_are_the_answers_of_single_calls(variant: Path, handed_back: list[int]) -> None:
    """One engine thread, twelve isochrones at once: they run in batches of four, and each answer is its own."""
    rng = random.Random(5)
    requests = [
        IsochroneRequest((rng.uniform(7.41, 7.438), rng.uniform(43.725, 43.748)), Cost("car", cost_type="time"), (rng.choice([120, 300]),))
        for _ in range(12)
    ]
    edit_source(variant, limits={"threads": 1, "batch": 1})
    single = await connected(variant)
    expected = [await single.isochrone(r) for r in requests]
    await single.disconnect()
    assert handed_back == [1] * 12

    handed_back.clear()
    path = variant / "sources" / "monaco-valhalla.source"
    data = json.loads(path.read_text())  # edit_source wrote it as JSON
    path.write_text(json.dumps({**data, "limits": {"threads": 1, "batch": 4, "batch_delay_ms": 60000}}))
    source = ValhallaSource.from_config(read_source(variant / "sources" / "monaco-valhalla.source"))
    await source.connect()
    try:
        answers = await asyncio.gather(*(source.isochrone(r) for r in requests))
    finally:
        await source.disconnect()
    assert [a.geometries for a in answers] == [e.geometries for e in expected]
    assert sum(handed_back) == 12 and max(handed_back) == 4, handed_back
