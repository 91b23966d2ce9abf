"""The compiled polyline encoder: Google's format, round trip, and the Python fallback for projected coordinates."""

from __future__ import annotations

import random

from roadkit.routing.geometry import decode_polyline, encode_polyline, python_encode_polyline


def test_googles_reference_example() -> None:
    # The example of Google's "Encoded Polyline Algorithm Format" page.
    assert encode_polyline([(-120.2, 38.5), (-120.95, 40.7), (-126.453, 43.252)]) == "_p~iF~ps|U_ulLnnqC_mqNvxq`@"


def test_random_lines_round_trip_and_match_python_but_for_ties() -> None:
    rng = random.Random(3)
    for _ in range(500):
        line = [(round(rng.uniform(7.40, 7.44), 7), round(rng.uniform(43.72, 43.75), 7)) for _ in range(rng.randint(1, 60))]
        # At a tie (x.5 units of 1e-5) the roundings differ by one unit: half away from zero, Python's to even.
        line = [p for p in line if all(abs((v * 1e5) % 1 - 0.5) > 1e-6 for v in p)] or [(7.4, 43.7)]
        encoded = encode_polyline(line)
        assert encoded == python_encode_polyline(line)
        assert all(abs(a - c) <= 0.5e-5 and abs(b - d) <= 0.5e-5 for (a, b), (c, d) in zip(decode_polyline(encoded), line, strict=True))


def test_projected_coordinates_fall_back_to_python() -> None:
    line = [(650000.5, 6860000.25), (650010.0, 6860020.0)]
    assert encode_polyline(line) == python_encode_polyline(line)
    assert encode_polyline(iter(line)) == python_encode_polyline(line)
    assert encode_polyline([]) == ""
