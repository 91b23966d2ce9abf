"""Road2's own configuration files load with Road2's meaning, or are refused naming the file and the key."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from roadkit.cli import _service_files
from roadkit.config import load_server, load_service
from roadkit.config.loader import load_cors, read_sources
from roadkit.errors import ConfigurationError
from roadkit.plugins import Plugins
from roadkit.process.administrator import make_handle
from roadkit.process.children import ChildProcessService
from roadkit.routing.projections import ProjectionRegistry
from roadkit.serving.service import Service
from tests.core.conftest import write

ROAD2 = Path(__file__).parent / "road2"


@pytest.fixture
def road2(tmp_path: Path) -> Path:
    """A throw-away copy of Road2's sample configuration."""
    target = tmp_path / "road2"
    shutil.copytree(ROAD2, target)
    return target


def edit(path: Path, change: Any) -> Path:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    return path


def problems_of(load: Any, *args: Any) -> list[str]:
    with pytest.raises(ConfigurationError) as caught:
        load(*args)
    return caught.value.problems


def test_the_administration_file_loads_with_road2s_meaning(road2: Path) -> None:
    # Road2's sample listens on 0.0.0.0 with no authentication: roadkit refuses that for the admin API.
    assert problems_of(load_server, road2 / "road2.json")[0].startswith(
        f"{road2 / 'road2.json'}: administration.network.server.host: the admin API would listen on '0.0.0.0'"
    )
    edit(road2 / "road2.json", lambda d: d["administration"]["network"]["server"].update(host="127.0.0.1"))
    server = load_server(road2 / "road2.json")
    listener = server.administrator.listener
    assert (listener.id, listener.host, listener.port, listener.https) == ("administrator", "127.0.0.1", 8079, False)
    logging_config = server.administrator.logging
    assert (logging_config.level, str(logging_config.file), logging_config.access_log) == ("debug", "/var/log/road2/road2-admin.log", True)
    (service,) = server.services
    assert (service.id, service.configuration, service.mode) == ("main", road2 / "service.json", "same-process")
    assert _service_files(road2 / "road2.json") == [("main", road2 / "service.json", None)]


def test_the_service_file_loads_with_road2s_meaning(road2: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        config = load_service(road2 / "service.json")
    app = config.application
    assert (app.name, app.language, app.keywords, app.contact) == (
        "Road2",
        "Français",
        ("infoMapAccessService",),
        "contact.geoservices@ign.fr",
    )
    assert app.provider is not None and (app.provider.name, app.provider.site, app.provider.mail) == (
        "IGN",
        "www.ign.fr",
        "contact.geoservices@ign.fr",
    )
    (listener,) = config.listeners
    assert (listener.id, listener.host, listener.port, listener.https) == ("internalServer", "0.0.0.0", 8080, False)
    assert config.folders.sources == (road2 / "sources",)  # the empty entry is skipped, with a warning
    assert config.folders.resources == (road2 / "resources",) and config.folders.projections == road2 / "projections"
    assert [(a.name, a.version) for a in config.apis] == [("simple", "1.0.0")]
    assert config.cors is not None and config.cors["allow_origins"] == ["*"]
    assert "application.sources.directories[1]: empty entry skipped" in caplog.text
    assert "application.url: ignored" in caplog.text and "application.logs" in caplog.text


def test_projection_files_without_a_suffix_are_read(road2: Path) -> None:
    registry = ProjectionRegistry.from_folder(road2 / "projections")
    assert set(registry.ids()) == {
        "EPSG:4326",
        "EPSG:2154",
        "EPSG:4559",
        "EPSG:2972",
        "EPSG:2975",
        "EPSG:4471",
        "EPSG:3857",
        "EPSG:32620",
        "EPSG:4467",
    }


def test_an_empty_projections_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "projections").mkdir()
    assert problems_of(ProjectionRegistry.from_folder, tmp_path / "projections") == [
        f"{tmp_path / 'projections'}: expected at least one projection file, found none"
    ]


def test_sources_pgr_type_and_identical_duplicates(road2: Path) -> None:
    configs, problems = read_sources([road2 / "sources"])
    assert problems == []
    assert [(c.id, c.type) for c in configs] == [
        ("bduni-idf-car-fastest", "osrm"),
        ("bduni-idf-pgr", "pgrouting"),
        ("bdtopo-valhalla", "valhalla"),
    ]
    assert configs[0].path == road2 / "sources" / "osrm-copy.source"  # the first file read, by name


def test_a_duplicate_source_id_with_another_definition_is_refused(road2: Path) -> None:
    edit(road2 / "sources" / "osrm.source", lambda d: d.update(bbox="1.8,48.4,3.3,49.1"))
    _, problems = read_sources([road2 / "sources"])
    assert problems == [
        f"{road2 / 'sources' / 'osrm.source'}: id: source id 'bduni-idf-car-fastest' "
        f"is already defined in {road2 / 'sources' / 'osrm-copy.source'}"
    ]


def test_the_whole_road2_service_loads(road2: Path, plugins: Plugins) -> None:
    service = Service(load_service(road2 / "service.json"), plugins)
    service.load()  # osrm, pgrouting and valhalla are not installed in core tests: left out with a warning
    assert "EPSG:2154" in service.projections and [c.id for c in service._resource_configs] == ["bduni-idf-osrm"]


def test_https_servers_take_their_key_and_certificate_from_options(road2: Path) -> None:
    write(road2 / "certs" / "key.pem", "key")
    write(road2 / "certs" / "cert.pem", "cert")

    def https(data: dict[str, Any]) -> None:
        data["application"]["network"]["servers"].append(
            {
                "id": "secure",
                "https": "true",
                "host": "127.0.0.1",
                "port": "8443",
                "options": {"key": "certs/key.pem", "cert": "certs/cert.pem"},
            }
        )

    config = load_service(edit(road2 / "service.json", https))
    secure = config.listeners[1]
    assert (secure.id, secure.port, secure.https, secure.keyfile, secure.certfile) == (
        "secure",
        8443,
        True,
        road2 / "certs" / "key.pem",
        road2 / "certs" / "cert.pem",
    )


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d["application"]["network"]["servers"][0].update(port="65537"),
            "application.network.servers[0].port: expected a port number between 1 and 65535 (a string of digits), got '65537'",
        ),
        (
            lambda d: d["application"]["network"]["servers"][0].update(https="yes"),
            'application.network.servers[0].https: expected "true" or "false", got \'yes\'',
        ),
        (
            lambda d: d["application"]["network"]["servers"][0].update(https="true"),
            "application.network.servers[0].options.key: required key is missing",
        ),
        (
            lambda d: d["application"].update(keywords={"word": "x"}),
            "application.keywords: expected {\"keyword\": <a string or an array of strings>}, got {'word': 'x'}",
        ),
        (
            lambda d: d["application"].update(contact={"phone": "1"}),
            "application.contact: expected {\"email\": <an address>}, got {'phone': '1'}",
        ),
        (
            lambda d: d["application"]["network"].update(cors={"configuration": "nope.json"}),
            "application.network.cors.configuration: expected a CORS file, got 'nope.json' (not found)",
        ),
        (
            lambda d: d["application"].update(sources={"directories": []}),
            "application.sources.directories: expected a non-empty array of folders, got {'directories': []}",
        ),
        (
            lambda d: d["application"].update(logs={"configuration": "nope.json"}),
            "application.logs.configuration: expected a log4js file, got 'nope.json' (not found)",
        ),
        (lambda d: d["application"].update(cache=True), "application.cache: unknown key"),
    ],
)
def test_service_file_problems_name_the_file_and_road2s_key(road2: Path, change: Any, expected: str) -> None:
    path = edit(road2 / "service.json", change)
    assert f"{path}: {expected}" in problems_of(load_service, path)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d["administration"]["services"][0].update(creationType="findByURI"),
            "administration.services[0].creationType: expected sameProcess or newProcess (findByURI is not supported), got 'findByURI'",
        ),
        (
            lambda d: d["administration"].update(api={"name": "admin", "version": "2.0.0"}),
            'administration.api: expected {"name": "admin", "version": "1.0.0"} (the admin API roadkit serves), '
            "got {'name': 'admin', 'version': '2.0.0'}",
        ),
        (
            lambda d: d["administration"]["network"]["server"].update(port=""),
            "administration.network.server.port: expected a port number between 1 and 65535 (a string of digits), got ''",
        ),
        (lambda d: d["administration"].pop("network"), "administration.network.server: required key is missing"),
        (lambda d: d["administration"].update(logs={"configuration": "nope.json"}), "administration.logs.configuration: "),
    ],
)
def test_administration_file_problems_name_the_file_and_road2s_key(road2: Path, change: Any, expected: str) -> None:
    path = edit(road2 / "road2.json", change)
    assert any(p.startswith(f"{path}: {expected}") for p in problems_of(load_server, path)), problems_of(load_server, path)


def test_a_service_without_creation_type_runs_in_a_child_process_as_a_toml_service_without_mode(road2: Path, tmp_path: Path) -> None:
    def without_creation_type(data: dict[str, Any]) -> None:
        data["administration"]["network"]["server"]["host"] = "127.0.0.1"
        del data["administration"]["services"][0]["creationType"]

    road2_server = load_server(edit(road2 / "road2.json", without_creation_type))
    toml_server = load_server(write(tmp_path / "server.toml", '[[services]]\nid = "main"\nconfiguration = "road2/service.json"\n'))
    plugins = Plugins.create(load_entry_points=False)
    (road2_service,), (toml_service,) = road2_server.services, toml_server.services
    # Road2 refuses the entry; its documented mode is newProcess, a TOML file's default is a child process.
    assert road2_service.mode == toml_service.mode == "child-process"
    handles = [make_handle(service, server, plugins) for service, server in ((road2_service, road2_server), (toml_service, toml_server))]
    assert [type(handle) for handle in handles] == [ChildProcessService, ChildProcessService]
    edit(road2 / "road2.json", lambda d: d["administration"]["services"][0].update(creationType="sameProcess"))
    assert load_server(road2 / "road2.json").services[0].mode == "same-process"


def test_keywords_as_road2_object_in_a_toml_service_file(tmp_path: Path) -> None:
    (tmp_path / "projections").mkdir()
    base = '[application]\nname = "n"\ntitle = "t"\ndescription = "d"\n'
    config = load_service(
        write(tmp_path / "a.toml", base + 'keywords = { keyword = ["routing", "isochrone"] }\ncontact = { email = "a@b.c" }\n')
    )
    assert config.application.keywords == ("routing", "isochrone") and config.application.contact == "a@b.c"
    path = write(tmp_path / "b.toml", base + 'keywords = { routing = "yes" }\n')
    assert problems_of(load_service, path) == [
        f"{path}: application.keywords: expected {{\"keyword\": <a string or an array of strings>}}, got {{'routing': 'yes'}}"
    ]


@pytest.mark.parametrize(
    ("origin", "allowed", "refused"),
    [
        (True, ["https://any.example"], []),
        ("/^https:\\/\\/[a-z]+\\.ign\\.fr$/", ["https://data.ign.fr"], ["https://data.ign.fr.evil.example", "http://data.ign.fr"]),
        ("/IGN\\.FR$/i", ["https://geo.ign.fr"], ["https://ign.fr.example"]),
        ("https://a.example", ["https://a.example"], ["https://b.example"]),
    ],
)
def test_cors_origin_as_boolean_or_pattern(tmp_path: Path, origin: Any, allowed: list[str], refused: list[str]) -> None:
    import re

    options = load_cors(write(tmp_path / "cors.json", json.dumps({"origin": origin})))
    assert options is not None

    def accepts(candidate: str) -> bool:
        regex = options.get("allow_origin_regex")
        return candidate in options["allow_origins"] or "*" in options["allow_origins"] or bool(regex and re.fullmatch(regex, candidate))

    assert all(accepts(o) for o in allowed) and not any(accepts(o) for o in refused)


def test_cors_origin_false_turns_cors_off(tmp_path: Path) -> None:
    assert load_cors(write(tmp_path / "cors.json", '{"origin": false, "methods": "GET,POST"}')) is None
