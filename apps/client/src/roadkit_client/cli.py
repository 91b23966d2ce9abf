"""``roadkit-client serve --config FILE``: the backend API and the static app in one process."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from collections.abc import Sequence

from roadkit_support.serving import bound_socket, serve_all
from roadkit_support.serving import socket_config as hypercorn_config

from .backend import create_backend_app
from .config import ConfigError, load_config
from .static_app import create_static_app

log = logging.getLogger("roadkit_client")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="roadkit-client", description="roadkit client app and backend")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the backend API and the browser app")
    serve.add_argument("--config", required=True, help="TOML configuration file")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m roadkit_client`` and the ``roadkit-client`` script."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"roadkit-client: {exc}", file=sys.stderr)
        return 2
    sockets = []
    for what, host, port in (("backend", config.backend.host, config.backend.port), ("app", config.app.host, config.app.port)):
        try:
            sockets.append(bound_socket(host, port))
        except OSError as exc:
            print(f"roadkit-client: {what}: cannot listen on {host}:{port}: {exc.strerror}", file=sys.stderr)
            return 2
    apps = [
        (create_backend_app(config), hypercorn_config(sockets[0], access_log=True)),
        (create_static_app(config), hypercorn_config(sockets[1], access_log=True)),
    ]
    log.info(
        "backend API on %s, browser app on %s (IAM %s, mode %s)",
        config.backend.public_url,
        config.app.public_url,
        config.iam.issuer,
        config.mode,
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_all(apps))
    return 0
