"""Every task of the project. `./dev <session>` bootstraps nox and runs one of these."""

from __future__ import annotations

import os
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True

ROOT = Path(__file__).parent
PYTHON = "3.12"

# Distributions in install order; a missing folder is skipped so that a checkout
# that lacks an optional app still runs.
ENGINE_PLUGINS = ["plugins/engine_a", "plugins/engine_b", "plugins/engine_c"]
APPS = ["apps/deviam", "apps/client"]


def _existing(paths: list[str]) -> list[str]:
    return [f"./{p}" for p in paths if (ROOT / p / "pyproject.toml").exists()]


#: Every third-party distribution, pinned with its hashes: the dependencies of the project's distributions
#: and the test, lint and documentation tools (``./dev lock`` regenerates it from requirements/lock.in).
LOCK = "requirements/lock.txt"
#: The project's own distributions, which the lock leaves out (they are installed from their folders).
OWN = ["roadkit", "roadkit-support", "roadkit-osrm", "roadkit-valhalla", "roadkit-pgrouting", "roadkit-deviam", "roadkit-client"]


def _install_locked(session: nox.Session) -> None:
    """The lock's distributions, each checked against its hashes (pip refuses any file whose hash differs)."""
    session.install("--disable-pip-version-check", "--require-hashes", "-r", LOCK)


def _install_project(session: nox.Session, *, apps: bool) -> None:
    _install_locked(session)
    dists = ["./libs/support", "./core", *_existing(ENGINE_PLUGINS)]
    if apps:
        dists += _existing(APPS)
    # Non-editable installs: tests run against installed metadata (entry points). Their dependencies come
    # from the lock only (--no-deps), and so does their build backend (hatchling: --no-build-isolation).
    session.install("--disable-pip-version-check", "--force-reinstall", "--no-deps", "--no-build-isolation", *dists)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Lint first (fails fast), then install every distribution and run the whole test suite on the real
    engines with coverage measured (its figure printed; below ``fail_under`` the session fails).

    ``ROADKIT_LINT=0 ./dev tests -- tests/core -x`` skips the lint while iterating; CI never does.
    """
    _install_project(session, apps=True)  # the lock holds tests/requirements.txt too
    if os.environ.get("ROADKIT_LINT", "1") != "0":
        _lint(session)
        _docs(session)
    args = session.posargs or ["tests"]
    # Coverage of the INSTALLED distributions (non-editable): [tool.coverage.run] names them by
    # package, never by path; the floor (fail_under) applies to the whole suite only.
    coverage = ["--cov", "--cov-report=term:skip-covered"]
    if session.posargs:
        coverage.append("--cov-fail-under=0")
    session.run(
        "pytest",
        *coverage,
        *args,
        env={"ROADKIT_CACHE": str(ROOT / ".cache"), "PYTHONDONTWRITEBYTECODE": "1"},
    )


@nox.session(python=PYTHON)
def demo(session: nox.Session) -> None:
    """Build the Monaco data when missing and serve the demo (simple API :8080, admin API :8079)."""
    _install_project(session, apps=False)
    example = ROOT / "examples" / "monaco"
    session.run("roadkit", "prepare", "--config", str(example / "server.toml"))
    session.run("roadkit", "serve", str(example / "server.toml"), *session.posargs)


@nox.session(python=PYTHON)
def client(session: nox.Session) -> None:
    """The client demo: development IAM, routing service, backend and browser app; prints the URL and users."""
    _install_project(session, apps=True)
    session.run("roadkit", "prepare", "--config", str(ROOT / "examples" / "monaco" / "server.toml"))
    session.run("python", str(ROOT / "tools" / "client_demo.py"))


#: The packages mypy checks (strict): core and every plugin and app distribution present.
TYPED = [
    "libs/support/src/roadkit_support",
    "core/src/roadkit",
    "plugins/engine_a/src/roadkit_osrm",
    "plugins/engine_b/src/roadkit_valhalla",
    "plugins/engine_c/src/roadkit_pgrouting",
    "apps/deviam/src/roadkit_deviam",
    "apps/client/src/roadkit_client",
]


def _lint(session: nox.Session) -> None:
    """ruff (rules and line length), ruff format --check on the whole tree, mypy --strict on the packages, core's layers."""
    _install_locked(session)  # the lock holds tools/lint-requirements.txt
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy", *[path for path in TYPED if (ROOT / path).is_dir()])
    session.run("lint-imports", "--no-cache")  # core's layers: [tool.importlinter] in pyproject.toml


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff on the whole tree, mypy on the public plugin API (also the first step of ``tests``)."""
    _install_project(session, apps=True)
    _lint(session)


def _docs(session: nox.Session) -> None:
    """The documentation site (mkdocs.yml, docs/) built with every warning an error, into .cache/site (not committed)."""
    _install_locked(session)  # the lock holds tools/docs-requirements.txt
    # NO_MKDOCS_2_WARNING: mkdocs-material's banner about its successor, printed on every build.
    session.run(
        "mkdocs",
        "build",
        "--strict",
        "--config-file",
        str(ROOT / "mkdocs.yml"),
        "--site-dir",
        str(ROOT / ".cache" / "site"),
        env={"NO_MKDOCS_2_WARNING": "1"},
    )


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """Build the documentation site with ``--strict`` (also a step of ``tests``); open .cache/site/index.html."""
    _docs(session)


@nox.session(python=PYTHON)
def lock(session: nox.Session) -> None:
    """Regenerate requirements/lock.txt (and ./dev's nox pin, the resolver's pin) with hashes, for Python 3.12.

    ``./dev lock`` after changing a dependency in a pyproject.toml or a requirements file; ``./dev lock --
    --upgrade`` moves every pin to its newest release. The lock leaves the project's own distributions out.
    """
    session.install("--disable-pip-version-check", "--require-hashes", "-r", "tools/uv-requirements.txt")
    compile_ = ["uv", "pip", "compile", "--generate-hashes", "--python-version", PYTHON, "--quiet", *session.posargs]
    with session.chdir(ROOT):
        session.run(*compile_, *[f"--no-emit-package={name}" for name in OWN], "requirements/lock.in", "-o", LOCK)
        session.run(*compile_, "-c", LOCK, "tools/bench-requirements.txt", "-o", "requirements/bench-lock.txt")
        for tool in ("nox", "uv"):
            session.run(*compile_, f"tools/{tool}-requirements.in", "-o", f"tools/{tool}-requirements.txt")


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """roadkit against the engines' own servers, whole machine, over concurrency and workers: CSV, PNG, the documentation's table.

    ``./dev bench`` (full sweep, then pgRouting's routes and isochrones against the same SQL sent
    directly), ``./dev bench -- --quick``, ``./dev bench -- --one-core`` (the sweep only); the other
    benchmarks run on their own from the repository root (``python -m bench.scale``...).
    """
    _install_project(session, apps=False)
    session.install("--disable-pip-version-check", "--require-hashes", "-r", "requirements/bench-lock.txt")  # matplotlib, py-spy
    env = {"ROADKIT_CACHE": str(ROOT / ".cache")}
    # ``bench`` is a package of the repository: run as modules from its root (nox runs sessions from
    # the noxfile's folder, the root; ``-m`` puts the working directory first on the module path).
    with session.chdir(ROOT):
        session.run("python", "-m", "bench.sweep", *session.posargs, env=env)
        if not session.posargs:  # the full sweep: the documentation's table and plot follow its CSV
            csv = str(ROOT / "bench" / "results" / "sweep-whole-machine.csv")
            session.run("python", "-m", "bench.table", csv, "--page", str(ROOT / "docs" / "benchmarks.md"))
            # pgRouting has no server of its own: roadkit against its own statements sent directly with asyncpg.
            pgrouting = ["--ops", "route", "isochrone", "--concurrency", "1", "8", "--rounds", "10", "--duration", "4", "--sizes"]
            session.run("python", "-m", "bench.bench_pgrouting", *pgrouting, env=env)
