"""The differential harness of the native OSRM API: osrm-routed from the same wheel, same data, same URLs.

``Routed`` runs osrm-routed from the osrm-bindings wheel on the cached Monaco car dataset with small limits (so that the
generated URLs reach them); ``native_app`` serves a resource ``diff`` on the same dataset with the
same limits. ``generate(service, rng)`` makes one URL, valid or not; ``compare`` asserts the two
answers are equal but for the fields that depend on the build (hints, data_version).
"""

from __future__ import annotations

import http.client
import json
import random
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import osrm

from tests.core.conftest import free_port

#: osrm-routed's command-line limits and the same limits in the resource file
LIMITS = {
    "max-viaroute-size": 12,
    "max-trip-size": 6,
    "max-table-size": 7,
    "max-matching-size": 9,
    "max-nearest-size": 5,
    "max-nearest-locations": 3,
    "max-alternatives": 2,
    "max-matching-radius": 150,
}
BBOX = (7.405, 43.725, 7.440, 43.750)
B64 = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
SAFE = "/?=&;,:@()!$'*+-._~"


class Routed:
    """osrm-routed on one dataset, on a free port, answering over a kept-alive connection."""

    def __init__(self, dataset: Path, algorithm: str = "CH") -> None:
        self.port = free_port()
        # The wheel's osrm-routed binary itself (``python -m osrm routed`` would leave it running when
        # the wrapper is terminated), in its own session so that nothing it starts outlives the tests.
        binary = Path(osrm.__file__).parent / "bin" / "osrm-routed"
        args = [str(binary), str(dataset), "-i", "127.0.0.1", "-p", str(self.port), "-t", "1", "-a", algorithm]
        for key, value in LIMITS.items():
            args += [f"--{key}", str(value)]
        self.process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={"DISABLE_ACCESS_LOGGING": "1"}, start_new_session=True
        )
        self.connection: http.client.HTTPConnection | None = None
        deadline = time.monotonic() + 60
        while True:
            try:
                self._get("/nearest/v1/x/7.41,43.73")
                return
            except OSError:
                self.connection = None
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("osrm-routed did not start") from None
                time.sleep(0.1)

    def get(self, url: str) -> tuple[int, str, bytes]:
        """Status, content type and body of ``url`` (already percent-encoded)."""
        try:
            return self._get(url)
        except (http.client.HTTPException, OSError):
            if self.process.poll() is not None:
                raise
            return self._get(url)  # osrm-routed closes a kept-alive connection after 512 requests

    def post(self, url: str, body: bytes, content_type: str) -> tuple[int, str, bytes]:
        """Status, content type and body of a POST of ``body`` to ``url``."""
        try:
            return self._get(url, body, content_type)
        except (http.client.HTTPException, OSError):
            if self.process.poll() is not None:
                raise
            return self._get(url, body, content_type)

    def _get(self, url: str, body: bytes | None = None, content_type: str = "") -> tuple[int, str, bytes]:
        if self.connection is None:
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            if body is None:
                self.connection.request("GET", url)
            else:
                self.connection.request("POST", url, body=body, headers={"content-type": content_type} if content_type else {})
            response = self.connection.getresponse()
            return response.status, response.getheader("content-type") or "", response.read()
        except (http.client.HTTPException, OSError):
            self.connection.close()
            self.connection = None
            raise

    def stop(self) -> None:
        if self.connection is not None:
            self.connection.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)


def write_native_service(example: Path, target: Path) -> Path:
    """A service on the Monaco OSRM sources with resources ``diff`` (car, CH) and ``diffmld`` (pedestrian, MLD) limited like ``Routed``."""
    target.mkdir(parents=True, exist_ok=True)
    (target / "resources").mkdir(exist_ok=True)
    limits = "\n".join(f"{k.replace('-', '_')} = {v}" for k, v in LIMITS.items())
    for rid, source, profile in (("diff", "monaco-osrm-car-fastest", "car"), ("diffmld", "monaco-osrm-pedestrian-fastest", "pedestrian")):
        (target / "resources" / f"{rid}.resource").write_text(
            f'id = "{rid}"\ntype = "osrm"\ndescription = "differential tests"\nsources = ["{source}"]\n'
            "[operations.nearest]\n"
            f'[apis.osrm]\nprofiles = {{ driving = "{profile}" }}\n'
            f"[apis.osrm.limits]\n{limits}\n"
        )
    service = (example / "service.toml").read_text()
    service = service.replace('resources = ["resources"]', f'resources = ["resources", "{target / "resources"}"]')
    path = example / "service-native.toml"
    path.write_text(service)
    return path


def encode(url: str) -> str:
    """The URL as a client sends it: characters outside a URL's own set percent-encoded."""
    return quote(url, safe=SAFE)


def strip(value: Any) -> Any:
    """An answer without what depends on the dataset build (hints, data_version)."""
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in ("hint", "hints", "data_version")}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def compare(url: str, expected: tuple[int, str, bytes], got: tuple[int, str, bytes]) -> None:
    """Same status and same body (JSON compared parsed, without build-dependent fields)."""
    status, content_type, body = expected
    assert got[0] == status, f"{url}: status {got[0]} != osrm-routed's {status}: {got[2][:300]!r} vs {body[:300]!r}"
    if content_type.startswith("application/json"):
        assert got[1].startswith("application/json"), f"{url}: content type {got[1]}"
        mine, theirs = strip(json.loads(got[2])), strip(json.loads(body))
        assert mine == theirs, f"{url}:\n roadkit    {json.dumps(mine)[:600]}\n osrm-routed {json.dumps(theirs)[:600]}"
    else:
        assert got[2] == body, f"{url}: binary bodies differ ({len(got[2])} vs {len(body)} bytes)"


# ---------------------------------------------------------------- URL generation


def _number(rng: random.Random, low: float, high: float) -> str:
    value = rng.uniform(low, high)
    digits = rng.choice([0, 3, 5, 6, 6, 7])
    text = f"{value:.{digits}f}"
    if rng.random() < 0.03:
        text = text + "."
    return text


def coordinate(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.95:
        return f"{_number(rng, BBOX[0], BBOX[2])},{_number(rng, BBOX[1], BBOX[3])}"
    if roll < 0.97:
        return f"{_number(rng, 7.0, 7.8)},{_number(rng, 43.4, 44.0)}"  # off the graph
    return rng.choice(["1,100", "200,43.7", "-7.41,43.73", "7.41,-91", "7.41;43.73", "7.41,", ",43.7", "7e1,43.7", "+7.41,43.73"])


def _encode_value(value: int) -> str:
    value = ~(value << 1) if value < 0 else value << 1
    out = []
    while value >= 0x20:
        out.append(chr((0x20 | (value & 0x1F)) + 63))
        value >>= 5
    out.append(chr(value + 63))
    return "".join(out)


def polyline(points: list[tuple[float, float]], precision: int) -> str:
    factor = 10**precision
    out = []
    last = (0, 0)
    for lon, lat in points:
        current = (round(lat * factor), round(lon * factor))
        out.append(_encode_value(current[0] - last[0]) + _encode_value(current[1] - last[1]))
        last = current
    return "".join(out)


def coordinates(rng: random.Random, n: int) -> str:
    roll = rng.random()
    if roll < 0.12:
        points = [(rng.uniform(BBOX[0], BBOX[2]), rng.uniform(BBOX[1], BBOX[3])) for _ in range(n)]
        six = rng.random() < 0.5
        return f"polyline{'6' if six else ''}({polyline(points, 6 if six else 5)})"
    return ";".join(coordinate(rng) for _ in range(n))


def _list(rng: random.Random, n: int, item: Callable[[], str]) -> str:
    size = n if rng.random() < 0.8 else max(0, n + rng.choice([-1, 1, 2]))
    return ";".join(item() for _ in range(size))


def pick(rng: random.Random, valid: list[str], invalid: list[str], p_invalid: float = 0.12) -> str:
    """A valid value, or (with probability ``p_invalid``) an invalid one."""
    return rng.choice(invalid if invalid and rng.random() < p_invalid else valid)


def _base_options(rng: random.Random, n: int) -> dict[str, Callable[[], str]]:
    return {
        "radiuses": lambda: _list(
            rng, n, lambda: pick(rng, ["", "unlimited", _number(rng, 20, 300), "50"], ["-1", "x", "1e3", "inf", "5"], 0.1)
        ),
        "bearings": lambda: _list(
            rng,
            n,
            lambda: rng.choice(
                [
                    "",
                    f"{rng.randint(0, 360)},{rng.randint(0, 180)}",
                    "400,10",
                    "10,200",
                    "90",
                    "-5,10",
                    "99999,1",
                    f"{rng.randint(0, 360)},{rng.randint(0, 180)}",
                ]
            ),
        ),
        "hints": lambda: _list(
            rng,
            n,
            lambda: pick(rng, ["", "".join(rng.choice(B64[:-2]) for _ in range(112 * rng.choice([1, 1, 2])))], ["abc", "B" * 114], 0.1),
        ),
        "approaches": lambda: _list(rng, n, lambda: pick(rng, ["", "curb", "unrestricted", "opposite"], ["foo"], 0.1)),
        "generate_hints": lambda: pick(rng, ["true", "false"], ["TRUE", "1"]),
        "skip_waypoints": lambda: pick(rng, ["true", "false"], ["x"]),
        "exclude": lambda: pick(rng, ["motorway", "toll", "ferry"], ["motorway,toll", "", "foo", "motorway,"]),
        "snapping": lambda: pick(rng, ["default", "any"], ["none"]),
    }


def _route_options(rng: random.Random, n: int) -> dict[str, Callable[[], str]]:
    annotations = ["duration", "nodes", "distance", "weight", "datasources", "speed"]
    return _base_options(rng, n) | {
        "steps": lambda: pick(rng, ["true", "false"], ["truex", "yes"]),
        "geometries": lambda: pick(rng, ["polyline", "polyline6", "geojson"], ["polylinex", "wkt"]),
        "overview": lambda: pick(rng, ["simplified", "full", "false"], ["none"]),
        "annotations": lambda: pick(rng, ["true", "false", ",".join(rng.sample(annotations, rng.randint(1, 3)))], ["", "foo"]),
        "waypoints": lambda: pick(rng, [f"0;{n - 1}", f"0;{max(0, n - 2)};{n - 1}"], ["0;0", "0;5", "", "x"]),
    }


def options_for(service: str, rng: random.Random, n: int) -> dict[str, Callable[[], str]]:
    """Option generators of ``service`` (values valid or not) for ``n`` coordinates."""
    if service == "route":
        return _route_options(rng, n) | {
            "alternatives": lambda: pick(rng, ["true", "false", "0", "1", "2"], ["3", "99999999999", "x"]),
            "continue_straight": lambda: pick(rng, ["default", "true", "false"], ["x"]),
        }
    if service == "nearest":
        return _base_options(rng, n) | {"number": lambda: pick(rng, ["1", "2", "3", "5"], ["6", "0", "x", "99999999999"])}
    if service == "table":

        def indices() -> str:
            return pick(rng, ["all", ";".join(str(rng.randint(0, n - 1)) for _ in range(rng.randint(1, n)))], [str(n), "", "x"])

        return _base_options(rng, n) | {
            "sources": indices,
            "destinations": indices,
            "annotations": lambda: pick(rng, ["duration", "distance", "duration,distance", "distance,duration"], ["foo", ""]),
            "fallback_speed": lambda: pick(rng, ["1", "10.5", "30"], ["0", "-1", "x"]),
            "fallback_coordinate": lambda: pick(rng, ["input", "snapped"], ["x"]),
            "scale_factor": lambda: pick(rng, ["1", "0.5", "2"], ["0", "-1", "x"]),
        }
    if service == "trip":
        return _route_options(rng, n) | {
            "roundtrip": lambda: pick(rng, ["true", "false"], ["x"]),
            "source": lambda: pick(rng, ["any", "first"], ["last"]),
            "destination": lambda: pick(rng, ["any", "last"], ["first"]),
        }
    if service == "match":

        def timestamps() -> str:
            start = rng.randint(1_600_000_000, 1_700_000_000)
            values = [start + 10 * i + rng.randint(0, 9) for i in range(n)]
            if rng.random() < 0.15:
                values = values[:-1]
            if rng.random() < 0.1:
                return "x"
            return ";".join(str(v) for v in values)

        return _route_options(rng, n) | {
            "timestamps": timestamps,
            "gaps": lambda: pick(rng, ["split", "ignore"], ["x"]),
            "tidy": lambda: pick(rng, ["true", "false"], ["x"]),
        }
    raise ValueError(service)


def _mutate(rng: random.Random, text: str) -> str:
    junk = ["&", "?", ";", ",", "=", ".", "x", "%", "%2", "%41", '"', " ", "(", ")", "-", "..", "&&", "{", "^"]
    i = rng.randint(0, len(text))
    if rng.random() < 0.5:
        return text[:i] + rng.choice(junk) + text[i:]
    return text[:i] + text[i + rng.randint(1, 3) :]


def generate(service: str, rng: random.Random) -> str:
    """One OSRM URL for ``service`` (``/{service}/v1/driving/...``), valid or not."""
    if service == "tile":
        z = rng.choice([12, 13, 14, 15, 16, 17, 18, rng.randint(0, 11), 25])
        # Monaco is tile (17059, 11948) at zoom 15
        x, y = (
            (17059 << max(0, z - 15) >> max(0, 15 - z)) + rng.randint(-1, 1),
            (11948 << max(0, z - 15) >> max(0, 15 - z)) + rng.randint(-1, 1),
        )
        path = pick(
            rng, [f"tile({x},{y},{z})"], [f"tile({x},{y})", f"tile({x},-{y},{z})", f"tile({x}, {y},{z})", f"tile({x},{y},{z}"], 0.15
        )
        suffix = pick(rng, [".mvt"], [".png", "", ".mvt?x=1"], 0.1)
        return f"/tile/v1/driving/{path}{suffix}"
    limit = {"route": 12, "nearest": 3, "table": 7, "trip": 6, "match": 9}[service]
    minimum = 1 if service == "nearest" else 2
    n = rng.randint(minimum, min(limit, 5)) if rng.random() < 0.85 else rng.choice([1, limit + 1, limit + 3])
    if service == "match" and rng.random() < 0.8:
        # a plausible trace: points close to each other along a line
        lon, lat = rng.uniform(7.415, 7.43), rng.uniform(43.73, 43.74)
        dlon, dlat = rng.uniform(-0.0004, 0.0004), rng.uniform(-0.0004, 0.0004)
        query = ";".join(f"{lon + dlon * i:.6f},{lat + dlat * i:.6f}" for i in range(n))
    else:
        query = coordinates(rng, n)
    if rng.random() < 0.1:
        query += rng.choice([".json", ".json", ".xml", ".js"])  # flatbuffers: see the README
    generators = options_for(service, rng, n)
    chosen = rng.sample(sorted(generators), rng.randint(0, min(3, len(generators))))
    if chosen:
        query += "?" + "&".join(f"{name}={generators[name]()}" for name in chosen)
    if rng.random() < 0.08:
        query = _mutate(rng, query)
    head = f"/{service}/v1/driving/"
    roll = rng.random()
    if roll < 0.03:
        head = f"/{service}/v2/driving/"
    elif roll < 0.05:
        head = "/routes/v1/driving/"
    return head + query


# ---------------------------------------------------------------- POST bodies (osrm-routed 26)


def _json_options(service: str, rng: random.Random, n: int) -> dict[str, Callable[[], Any]]:
    def per_point(valid: Callable[[], Any], invalid: list[Any]) -> Callable[[], Any]:
        def make() -> Any:
            size = n if rng.random() < 0.85 else n + rng.choice([-1, 1])
            if rng.random() < 0.08:
                return rng.choice(["x", 5, {"a": 1}])
            return [pick_any(rng, [valid()], invalid, 0.1) for _ in range(max(0, size))]

        return make

    base: dict[str, Callable[[], Any]] = {
        "radiuses": per_point(lambda: rng.choice([None, "unlimited", round(rng.uniform(20, 300), 2), 50]), ["5", "inf", True, -1]),
        "bearings": per_point(
            lambda: rng.choice([None, [rng.randint(0, 360), rng.randint(0, 180)]]), [[400, 10], [10], [1.5, 2], "90,10", [70000, 10]]
        ),
        "hints": per_point(lambda: rng.choice([None, "", "".join(rng.choice(B64[:-2]) for _ in range(112))]), ["abc", 3]),
        "approaches": per_point(lambda: rng.choice([None, "curb", "unrestricted", "opposite"]), ["foo", 1]),
        "generate_hints": lambda: pick_any(rng, [True, False], ["true", 1]),
        "skip_waypoints": lambda: pick_any(rng, [True, False], ["x"]),
        "exclude": lambda: pick_any(rng, [["motorway"], ["toll"], []], [["motorway", "toll"], ["foo"], "motorway", [1]]),
        "snapping": lambda: pick_any(rng, ["default", "any"], ["none", 1]),
    }
    if service == "nearest":
        return base | {"number": lambda: pick_any(rng, [1, 2, 3, 5], [6, 0, -1, 1.5, "2"])}
    if service == "table":

        def indices() -> Any:
            return pick_any(rng, [[rng.randint(0, n - 1) for _ in range(rng.randint(1, n))]], [[n], [-1], "all", [1.0]])

        return base | {
            "sources": indices,
            "destinations": indices,
            "annotations": lambda: pick_any(
                rng, [["duration"], ["distance"], ["duration", "distance"], True], [False, ["foo"], "duration", []]
            ),
            "fallback_speed": lambda: pick_any(rng, [1, 10.5, 30], [0, -1, "x"]),
            "fallback_coordinate": lambda: pick_any(rng, ["input", "snapped"], ["x"]),
            "scale_factor": lambda: pick_any(rng, [1, 0.5, 2], [0, "1"]),
        }
    annotations = ["duration", "nodes", "distance", "weight", "datasources", "speed"]
    route = base | {
        "steps": lambda: pick_any(rng, [True, False], ["true"]),
        "geometries": lambda: pick_any(rng, ["polyline", "polyline6", "geojson"], ["wkt", 5]),
        "overview": lambda: pick_any(rng, ["simplified", "full", "false"], ["none", False]),
        "annotations": lambda: pick_any(rng, [True, False, rng.sample(annotations, rng.randint(1, 3))], [["foo"], "speed", [1], []]),
        "waypoints": lambda: pick_any(rng, [[0, n - 1]], [[0, 0], [0, 5], [-1], "0;1"]),
    }
    if service == "route":
        return route | {
            "alternatives": lambda: pick_any(rng, [True, False, 0, 1, 2], [3, -1, "true", 1.5]),
            "continue_straight": lambda: pick_any(rng, ["default", True, False], ["x", 1]),
        }
    if service == "match":
        start = rng.randint(1_600_000_000, 1_700_000_000)
        return route | {
            "timestamps": lambda: pick_any(rng, [[start + 10 * i for i in range(n)]], [[start] * max(0, n - 1), ["x"], [-1] * n]),
            "gaps": lambda: pick_any(rng, ["split", "ignore"], ["x"]),
            "tidy": lambda: pick_any(rng, [True, False], ["x"]),
        }
    return route


def pick_any(rng: random.Random, valid: list[Any], invalid: list[Any], p_invalid: float = 0.12) -> Any:
    """A valid value, or (with probability ``p_invalid``) an invalid one."""
    return rng.choice(invalid if invalid and rng.random() < p_invalid else valid)


def generate_post(service: str, rng: random.Random) -> tuple[str, bytes, str]:
    """One POST request for ``service``: path, body and content type, valid or not."""
    limit = {"route": 12, "nearest": 3, "table": 7, "trip": 6, "match": 9, "tile": 3}[service]
    n = rng.randint(1 if service == "nearest" else 2, min(limit, 5)) if rng.random() < 0.9 else limit + 1
    if service == "match" or rng.random() < 0.3:
        lon, lat = rng.uniform(7.415, 7.43), rng.uniform(43.73, 43.74)
        dlon, dlat = rng.uniform(-0.0004, 0.0004), rng.uniform(-0.0004, 0.0004)
        points: Any = [[round(lon + dlon * i, 6), round(lat + dlat * i, 6)] for i in range(n)]
    else:
        points = [[round(rng.uniform(BBOX[0], BBOX[2]), rng.choice([3, 5, 6])), round(rng.uniform(BBOX[1], BBOX[3]), 6)] for _ in range(n)]
    roll = rng.random()
    if roll < 0.08:
        points = rng.choice([[[1, 100], [7.41, 43.73]], [[7.41]], "polyline(abc", 5, [[7.41, "43.7"]], [[74425, 43.7], [7.41, 43.73]]])
    elif roll < 0.16:
        six = rng.random() < 0.5
        points = f"polyline{'6' if six else ''}({polyline([tuple(p) for p in points], 6 if six else 5)})"
    doc: dict[str, Any] = {"coordinates": points}
    generators = _json_options(service if service in ("route", "nearest", "table", "match") else "route", rng, n)
    for name in rng.sample(sorted(generators), rng.randint(0, min(3, len(generators)))):
        doc[name] = generators[name]()
    if rng.random() < 0.05:
        del doc["coordinates"]
    body = json.dumps(doc).encode()
    if rng.random() < 0.08:
        body = rng.choice(
            [
                b"",
                b"{bad",
                b"[]",
                body + b" x",
                body[:-1],
                b'{"coordinates": [[7.41, 43.7], [7.42, 1e400]]}',
                b'{"coordinates": 01}',
                b'{"a":"\\q"}',
                b'{"coordinates": [1.]}',
            ]
        )
    path = f"/{service}/v1/driving" + rng.choice(["", "", "", "/", "/x"])
    content_type = pick_any(rng, ["application/json", "application/json; charset=utf-8", " Application/JSON"], ["text/plain", ""], 0.06)
    return path, body, content_type
