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


def _install_project(session: nox.Session, *, apps: bool, testing: bool = False) -> None:
    # core's ``testing`` extra brings what roadkit.testing (the plugin authors' helpers) imports.
    dists = ["./libs/support", "./core[testing]" if testing else "./core", *_existing(ENGINE_PLUGINS)]
    if apps:
        dists += _existing(APPS)
    # Non-editable installs: tests run against installed metadata (entry points).
    session.install("--disable-pip-version-check", "--force-reinstall", "--no-deps", *dists)
    session.install("--disable-pip-version-check", *dists)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Lint first (fails fast), then install every distribution and run the whole test suite on the real
    engines with coverage measured (its figure printed; below ``fail_under`` the session fails).

    ``ROADKIT_LINT=0 ./dev tests -- tests/core -x`` skips the lint while iterating; CI never does.
    """
    _install_project(session, apps=True, testing=True)
    session.install("--disable-pip-version-check", "-r", "tests/requirements.txt")
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
    session.install("--disable-pip-version-check", "-r", "tools/lint-requirements.txt")
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
    session.install("--disable-pip-version-check", "-r", "tools/docs-requirements.txt")
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
def bench(session: nox.Session) -> None:
    """roadkit against the engines' own servers, whole machine, over concurrency and workers: CSV, PNG, the documentation's table.

    ``./dev bench`` (full sweep), ``./dev bench -- --quick``, ``./dev bench -- --one-core``; the other
    benchmarks run on their own from the repository root (``python -m bench.bench_pgrouting``...).
    """
    _install_project(session, apps=False)
    session.install("aiohttp", "matplotlib", "uvloop", "py-spy")
    env = {"ROADKIT_CACHE": str(ROOT / ".cache")}
    # ``bench`` is a package of the repository: run as modules from its root (nox runs sessions from
    # the noxfile's folder, the root; ``-m`` puts the working directory first on the module path).
    with session.chdir(ROOT):
        session.run("python", "-m", "bench.sweep", *session.posargs, env=env)
        if not session.posargs:  # the full sweep: the documentation's table and plot follow its CSV
            csv = str(ROOT / "bench" / "results" / "sweep-whole-machine.csv")
            session.run("python", "-m", "bench.table", csv, "--page", str(ROOT / "docs" / "benchmarks.md"))
