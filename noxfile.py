"""Every task of the project. `./dev <session>` bootstraps nox and runs one of these."""

from __future__ import annotations

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


def _install_project(session: nox.Session, *, apps: bool) -> None:
    dists = ["./core", *_existing(ENGINE_PLUGINS)]
    if apps:
        dists += _existing(APPS)
    # Non-editable installs: tests run against installed metadata (entry points).
    session.install("--disable-pip-version-check", "--force-reinstall", "--no-deps", *dists)
    session.install("--disable-pip-version-check", *dists)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Install every distribution and run the whole test suite on the real engines."""
    _install_project(session, apps=True)
    session.install("--disable-pip-version-check", "-r", "tests/requirements.txt")
    args = session.posargs or ["tests"]
    session.run(
        "pytest",
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


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff on the whole tree, mypy on the public plugin API."""
    _install_project(session, apps=False)
    session.install("ruff", "mypy")
    session.run("ruff", "check", ".")
    session.install("./apps/deviam", "./apps/client")
    session.run(
        "mypy",
        "core/src/roadkit",
        "plugins/engine_a/src/roadkit_osrm",
        "plugins/engine_b/src/roadkit_valhalla",
        "plugins/engine_c/src/roadkit_pgrouting",
        "apps/deviam/src/roadkit_deviam",
        "apps/client/src/roadkit_client",
    )


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """roadkit against the engines' own servers, whole machine, over concurrency and workers: CSV, PNG, README table.

    ``./dev bench`` (full sweep), ``./dev bench -- --quick``, ``./dev bench -- --one-core``; the other
    bench_*.py scripts run on their own (``python bench/bench_pgrouting.py``...).
    """
    _install_project(session, apps=False)
    session.install("aiohttp", "matplotlib", "uvloop", "py-spy")
    env = {"ROADKIT_CACHE": str(ROOT / ".cache")}
    session.run("python", str(ROOT / "bench" / "sweep.py"), *session.posargs, env=env)
