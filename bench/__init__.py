"""roadkit's benchmarks, run from the repository root as modules: ``python -m bench.<module>``.

The harness, shared by every benchmark (nothing else is imported from one benchmark by another):

- :mod:`bench.common`: the common settings (the repository's folders, the usable cores, Monaco's box),
  free ports, waiting for a server, the load generator, paired rounds' statistics, CPU accounting,
  py-spy's summary;
- :mod:`bench.servers`: the servers under comparison: the engines' data and servers, a server process
  started and stopped, and the sweep's scenarios (the same request to each server);
- :mod:`bench.config`: the one writer of roadkit's configuration files for a benchmark run;
- :mod:`bench.pgdirect`: roadkit's pgRouting statements recorded and replayed directly with asyncpg, and
  the CPU time of PostgreSQL, of a server's process tree and of the client;
- :mod:`bench.sweep` (``./dev bench``), :mod:`bench.table` (the README's table from a sweep's CSV),
  :mod:`bench.pool_rounds` (the paired rounds of several runs pooled).

The comparisons with each engine's own server or client (``bench_osrm``, ``bench_osrm_native``,
``bench_valhalla``, ``bench_remote``, ``bench_pgrouting``) sit beside the harness; one-off
investigations (profiles, ceilings, a change measured against a revision) in
:mod:`bench.investigations`. See ``bench/README.md``.
"""
