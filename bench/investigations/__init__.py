"""One-off investigations: each answers one question about roadkit's cost, with the harness's pieces only.

Run from the repository root: ``python -m bench.investigations.<module>``. An investigation imports the
harness (``bench.common``, ``bench.servers``, ``bench.config``), never another investigation or a
comparison script.
"""
