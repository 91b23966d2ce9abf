"""What roadkit adds to a Valhalla call, in CPU time per request, without an HTTP server.

    python -m bench.investigations.overhead route|isochrone [--requests 200] [--rounds 7]

The bench's Valhalla service (same process, one Actor) is called as an ASGI app with the sweep's
random Monaco requests, in alternated rounds: the Actor alone on the request bodies roadkit sent,
the app with the real engine, and the app with the engine replaced by the answers it recorded
(roadkit's own CPU: parsing, the engine hand-off, the answer's reading, the response). The
minimum of the rounds is printed; it is steadier than the sweep's figures on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import random_pairs
from bench.config import roadkit_files


class Recorder:
    """An Actor stand-in: records the real Actor's answers (or errors), then replays them in order."""

    def __init__(self, actor: Any) -> None:
        self.actor, self.answers, self.bodies, self.replay, self.index = actor, [], [], False, 0

    def _answer(self, action: str, body: str) -> Any:
        if not self.replay:
            try:
                answer: Any = getattr(self.actor, action)(body)
            except RuntimeError as exc:
                answer = exc
            self.bodies.append((action, body))
            self.answers.append(answer)
        else:
            answer = self.answers[self.index % len(self.answers)]
            self.index += 1
        if isinstance(answer, Exception):
            raise answer
        return answer

    def route(self, body: str) -> Any:
        return self._answer("route", body)

    def isochrone(self, body: str) -> Any:
        return self._answer("isochrone", body)


async def main(args: argparse.Namespace) -> None:
    from roadkit.config import load_service
    from roadkit.plugins import Plugins
    from roadkit.serving.app import create_app
    from roadkit.testing.asgi import asgi_messages, http_scope
    from roadkit_valhalla.engine_threads import EngineThreads

    workdir = Path(tempfile.mkdtemp())
    roadkit_files(workdir, "valhalla", 1, 2, workers=0, threads=1)
    service = load_service(workdir / "service.toml")
    app = create_app(service, Plugins.create())
    pairs = random_pairs(args.requests)
    if args.operation == "isochrone":
        path = "/simple/1.0.0/isochrone"
        queries = [f"resource=monaco&point={a[0]},{a[1]}&costValue=300&costType=time&timeUnit=second" for a, _ in pairs]
    else:
        path = "/simple/1.0.0/route"
        queries = [f"resource=monaco&start={a[0]},{a[1]}&end={b[0]},{b[1]}&getSteps=true&getBbox=false" for a, b in pairs]

    async def call(query: str) -> None:
        await asgi_messages(app, http_scope(path, query, host="127.0.0.1"))

    async with app.router.lifespan_context(app):
        source: Any = next(iter(app.state.service.sources.values()))
        actor = source._create_actors()[0]
        recorder = Recorder(actor)
        real_engine = source._engine
        source._engine = EngineThreads([recorder], "recorder")
        for query in queries:
            await call(query)
        recorder.replay = True
        replaying = source._engine
        figures: dict[str, list[float]] = {"Actor alone": [], "app, real engine": [], "app, recorded answers": []}
        for _ in range(args.rounds):
            started = time.process_time()
            for action, body in recorder.bodies:
                with contextlib.suppress(RuntimeError):  # no route between these points: as the app's call
                    getattr(actor, action)(body)
            figures["Actor alone"].append(time.process_time() - started)
            for name, engine in (("app, real engine", real_engine), ("app, recorded answers", replaying)):
                source._engine, recorder.index = engine, 0
                started = time.process_time()
                for query in queries:
                    await call(query)
                figures[name].append(time.process_time() - started)
        source._engine = real_engine
        replaying.close()
    for name, values in figures.items():
        print(f"{args.operation} {name:<22} {1000 * min(values) / len(queries):.3f} ms CPU per request")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("operation", choices=["route", "isochrone"])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    asyncio.run(main(parser.parse_args()))
