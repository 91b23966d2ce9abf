"""``roadkit-deviam serve --config FILE``: run the development IAM (development and tests only)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from collections.abc import Sequence

import attrs

from roadkit_support.serving import bound_socket, serve_all
from roadkit_support.serving import socket_config as hypercorn_config

from .app import create_app
from .config import ConfigError, IamConfig, config_from_mapping, example_mapping, load_config

log = logging.getLogger("roadkit_deviam")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="roadkit-deviam", description="roadkit development IAM (NOT for production).")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the IAM")
    serve.add_argument("--config", help="TOML configuration file (default: the packaged example)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8180)
    serve.add_argument("--public-url", help="public base URL; the issuer is PUBLIC_URL/realms/REALM")
    return parser


def _config(args: argparse.Namespace) -> IamConfig:
    config = load_config(args.config) if args.config else config_from_mapping(example_mapping(), source="example.toml")
    if args.public_url:
        config = attrs.evolve(config, public_url=args.public_url.rstrip("/"))
    return config


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m roadkit_deviam`` and the ``roadkit-deviam`` script."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = _config(args)
    except ConfigError as exc:
        print(f"roadkit-deviam: {exc}", file=sys.stderr)
        return 2
    try:
        sock = bound_socket(args.host, args.port)
    except OSError as exc:
        print(f"roadkit-deviam: cannot listen on {args.host}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 2
    log.warning("development IAM -- for development and tests only; production uses Keycloak")
    log.info("issuer %s (listening on %s:%s, testing controls %s)", config.issuer, args.host, args.port, "ON" if config.testing else "off")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_all([(create_app(config), hypercorn_config(sock, access_log=True))]))
    return 0
