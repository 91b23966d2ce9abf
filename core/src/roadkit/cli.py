"""The ``roadkit`` command: ``serve``, ``check``, ``prepare`` and the commands plugins contribute."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from roadkit import __version__, hookimpl
from roadkit.errors import ConfigurationError, RoadkitError
from roadkit.hookspecs import Command
from roadkit.plugins import Plugins


def _service_files(path: Path) -> list[tuple[str, Path, Path | None]]:
    """(service id, service file, CORS file) for a server file, or for a single service file."""
    from roadkit.config import load_server
    from roadkit.config.files import read_document

    data = read_document(path)
    if "administrator" in data or "services" in data or "administration" in data:
        server = load_server(path)
        return [(s.id, s.configuration, server.administrator.cors) for s in server.services]
    return [("main", path.resolve(), None)]


def _serve(args: argparse.Namespace) -> int:
    from roadkit.config import load_server
    from roadkit.process.zygote import spawn_zygotes

    # The services' zygotes import the workers' code while this process imports the administrator's.
    zygotes = spawn_zygotes(load_server(args.config))
    from roadkit.server import serve

    return serve(args.config, log_level=args.log_level, zygotes=zygotes)


def _check(args: argparse.Namespace) -> int:
    from roadkit.config import load_service
    from roadkit.serving.service import Service

    plugins = Plugins.create()
    problems: list[str] = []
    for sid, path, cors in _service_files(args.config):
        try:
            service = Service(load_service(path, cors=cors), plugins, id=sid)
            service.load()
        except ConfigurationError as exc:
            problems.extend(exc.problems)
            continue
        problems.extend(service.check_resources())
        for source in service.sources.values():
            for data in type(source).data_paths(source.config, source.options):
                if not data.exists():
                    problems.append(f"{source.config.path}: storage: data file {data} is missing (run 'roadkit prepare')")
        print(f"service {sid}: {len(service.sources)} source(s), {len(service._resource_configs)} resource file(s)")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


def _prepare(args: argparse.Namespace) -> int:
    from roadkit.config import load_service
    from roadkit.routing.source import Progress
    from roadkit.serving.service import Service

    plugins = Plugins.create()
    progress = Progress()
    built = 0
    for sid, path, cors in _service_files(args.config):
        service = Service(load_service(path, cors=cors), plugins, id=sid)
        service.load()
        for source in service.sources.values():
            if args.source and source.id not in args.source:
                continue
            if args.data_version is not None:
                built += _prepare_version(service, source, args.data_version, force=args.force, progress=progress)
            elif type(source).prepare(source.config, source.options, force=args.force, progress=progress):
                built += 1
    print(f"roadkit prepare: {built} dataset(s) built, the others were up to date")
    return 0


def _prepare_version(service: Any, source: Any, wanted: str, *, force: bool, progress: Any) -> int:
    """Build version ``wanted`` (``auto``: date and hash) of a source's data beside the version in use; 1 when built."""
    from roadkit.config.loader import read_sources
    from roadkit.routing.versions import new_version, version_problem

    cls = type(source)
    if not cls.versioned_keys:
        print(f"source {source.id}: kind {cls.kind} keeps no data of its own (nothing to build per version)")
        return 0
    config = next(c for c in read_sources(service.config.folders.sources)[0] if c.id == source.id)  # as written, not read for its version
    if wanted == "auto":
        wanted = new_version(config.options, _input_files(config.path, config.options))
    elif (problem := version_problem(wanted)) is not None:
        raise ConfigurationError([f"--version: {problem}"])
    versioned = cls.versioned(config, wanted)
    built = cls.prepare(versioned, cls.parse_options(versioned), force=force, progress=progress)
    state = "built" if built else "already built"
    print(f"source {source.id}: version {wanted} {state}; in use: {config.version or '(unversioned)'}")
    print(f'    switch to it: POST /admin/1.0.0/services/{service.id}/sources/{source.id}/version with {{"version": "{wanted}"}}')
    return 1 if built else 0


def _input_files(where: Path, options: Any) -> list[Path]:
    """The files a source's options name (its OSM extract, profile...): what a version's hash is made of."""
    from roadkit.config.files import resolve

    found: list[Path] = []
    values = options.values() if isinstance(options, dict) else options if isinstance(options, list) else [options]
    for value in values:
        if isinstance(value, dict | list):
            found.extend(_input_files(where, value))
        elif isinstance(value, str) and "\n" not in value and len(value) < 4096:
            try:
                path = resolve(where, value)
                if path.is_file():
                    found.append(path)
            except (OSError, ValueError):  # text that is no path (a NUL, a name too long)
                continue
    return sorted(set(found))


def _switch_version(args: argparse.Namespace) -> int:
    """POST the switch to the administrator named by the server file (its admin listener, a token from the environment)."""
    import os
    import ssl
    import urllib.error
    import urllib.request
    from urllib.parse import quote

    from roadkit.config import load_server
    from roadkit.routing.versions import version_problem

    if (problem := version_problem(args.version)) is not None:
        raise ConfigurationError([f"version: {problem}"])
    listener = load_server(args.config).administrator.listener
    host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(listener.host, listener.host)
    host = f"[{host}]" if ":" in host else host
    scheme = "https" if listener.https else "http"
    path = f"/admin/1.0.0/services/{quote(args.service, safe='')}/sources/{quote(args.source, safe='')}/version"
    url = f"{scheme}://{host}:{listener.port}{path}"
    headers = {"Content-Type": "application/json"}
    if os.environ.get("ROADKIT_ADMIN_TOKEN"):
        headers["Authorization"] = f"Bearer {os.environ['ROADKIT_ADMIN_TOKEN']}"
    request = urllib.request.Request(url, data=json.dumps({"version": args.version}).encode(), headers=headers, method="POST")
    # A self-signed admin certificate is its own authority: trust it for this call.
    context = ssl.create_default_context(cafile=str(listener.certfile)) if listener.https else None
    try:
        with urllib.request.urlopen(request, timeout=args.timeout, context=context) as response:
            answer = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read())["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = exc.reason
        print(f"roadkit switch-version: {exc.code}: {message}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"roadkit switch-version: can't reach the administrator at {url}: {exc}", file=sys.stderr)
        return 1
    print(f"source {args.source} of service {args.service}: version {answer['version']} (was {answer['previousVersion'] or 'unversioned'})")
    return 0


def _plugins(args: argparse.Namespace) -> int:
    plugins = Plugins.create().describe()
    if args.json:
        print(json.dumps(plugins, indent=2))
        return 0
    for plugin in plugins:
        origin = f"{plugin['distribution']} {plugin['version']}".strip() or "(no distribution)"
        print(f"{plugin['name']}  [{origin}]")
        for label, key in (("source kinds", "sourceKinds"), ("APIs", "apis"), ("commands", "commands"), ("hooks", "hooks")):
            if plugin[key]:
                print(f"    {label}: {', '.join(plugin[key])}")
    return 0


def _admin_token(args: argparse.Namespace) -> int:
    from roadkit.auth.tokens import add_token

    token = add_token(args.file, args.name)
    print(f"roadkit admin-token: token {args.name!r} added to {args.file} (only its salted hash is stored).", file=sys.stderr)
    print("Use it as 'Authorization: Bearer <token>'; it is shown this once:", file=sys.stderr)
    print(token)
    return 0


def _api_key(args: argparse.Namespace) -> int:
    from roadkit.auth.tokens import API_KEY_PREFIX, add_token, read_tokens, remove_token

    if args.action == "create":
        key = add_token(args.file, args.name, prefix=API_KEY_PREFIX, what="API keys")
        print(f"roadkit api-key: key {args.name!r} added to {args.file} (only its salted hash is stored).", file=sys.stderr)
        print("Send it as the header 'X-Api-Key: <key>' or the query parameter 'apikey=<key>'; it is shown this once:", file=sys.stderr)
        print(key)
    elif args.action == "list":
        for stored in read_tokens(args.file) if args.file.exists() else []:
            print(stored.name)
    else:
        if not args.file.exists() or not remove_token(args.file, args.name):
            print(f"roadkit api-key: no key named {args.name!r} in {args.file}", file=sys.stderr)
            return 1
        print(f"roadkit api-key: key {args.name!r} revoked (the services refuse it within a second).", file=sys.stderr)
    return 0


@hookimpl(trylast=True)
def roadkit_commands() -> Sequence[Command]:
    """The commands core contributes (this module is one of core's default plugins)."""

    def serve_args(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("config", type=Path, help="the server file")
        parser.add_argument("--log-level", choices=["debug", "info", "warning", "error"], help="override the file's level")

    def config_arg(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("config", type=Path, help="a server file or a service file")

    def prepare_args(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--config", type=Path, required=True, help="a server file or a service file")
        parser.add_argument("--source", action="append", help="only this source id (repeatable)")
        parser.add_argument("--force", action="store_true", help="rebuild even when the data exists")
        parser.add_argument(
            "--version",
            dest="data_version",
            nargs="?",
            const="auto",
            metavar="VERSION",
            help="build this version of the data beside the one in use (alone: the date and a hash of the inputs)",
        )

    def switch_args(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("config", type=Path, help="the server file (its admin listener is asked)")
        parser.add_argument("service", help="the service id")
        parser.add_argument("source", help="the source id")
        parser.add_argument("version", help="a version built by 'roadkit prepare --version'")
        parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for every worker to switch")

    def token_args(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("name", help="who or what uses the token (shown in the admin log)")
        parser.add_argument("--file", type=Path, required=True, help="the tokens file named by administrator.auth.tokens_file")

    def api_key_args(parser: argparse.ArgumentParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        for action, text in (
            ("create", "make a key; it is printed once, only its salted hash is stored"),
            ("list", "list the names of the keys"),
            ("revoke", "remove a key: the services refuse it from then on"),
        ):
            sub = actions.add_parser(action, help=text, description=text)
            if action != "list":
                sub.add_argument("name", help="who or what uses the key (its quotas are counted under this name)")
            sub.add_argument("--file", type=Path, required=True, help="the keys file named by access.keys_file")

    def plugins_args(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--json", action="store_true", help="print the list as JSON")

    return [
        Command("plugins", "List the installed plugins: distributions, source kinds, APIs, commands and hooks.", plugins_args, _plugins),
        Command("admin-token", "Create an admin API token; its salted hash is appended to the tokens file.", token_args, _admin_token),
        Command("api-key", "Create, list or revoke the API keys of the routing APIs (access.keys_file).", api_key_args, _api_key),
        Command("serve", "Start the administrator and its services.", serve_args, _serve),
        Command("check", "Check a configuration without starting anything.", config_arg, _check),
        Command("prepare", "Build the data of every source that lacks it.", prepare_args, _prepare),
        Command(
            "switch-version",
            "Point a source of a running service at another version of its data, without a restart "
            "(the admin token, if one is needed, in $ROADKIT_ADMIN_TOKEN).",
            switch_args,
            _switch_version,
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``roadkit`` command."""

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        plugins = Plugins.create()
        commands = plugins.commands()
    except RoadkitError as exc:
        print(f"roadkit: {exc.message}", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog="roadkit", description="roadkit routing service framework")
    parser.add_argument("--version", action="version", version=f"roadkit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in commands:
        command.configure(sub.add_parser(command.name, help=command.help, description=command.help))
        sub.choices[command.name].set_defaults(run=command.run)
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except ConfigurationError as exc:
        print("roadkit: configuration problems:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        return 2
    except RoadkitError as exc:
        print(f"roadkit: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
