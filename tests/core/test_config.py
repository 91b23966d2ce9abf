"""Configuration files: errors name the file, the key and what was expected, all at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from roadkit.config import load_server, load_service
from roadkit.config.loader import load_cors, read_resource, read_source, read_sources
from roadkit.config.models import max_workers
from roadkit.errors import ConfigurationError
from roadkit.plugins import Plugins
from roadkit.serving.service import Service
from roadkit.testing import service_client
from tests.core.conftest import SOURCE, make_service, run, write


def problems_of(fn: object, *args: object) -> list[str]:
    with pytest.raises(ConfigurationError) as info:
        fn(*args)  # type: ignore[operator]
    return info.value.problems


def test_server_file_errors_are_listed_together(tmp_path: Path) -> None:
    path = write(
        tmp_path / "server.toml",
        """
[administrator]
cors = "missing.toml"
[administrator.listener]
port = "8079"
[[services]]
id = "main"
configuration = "service.toml"
mode = "elsewhere"
""",
    )
    problems = problems_of(load_server, path)
    assert f"{path}: administrator.listener.port: expected an integer, got '8079'" in problems
    assert any(p.startswith(f"{path}: services[0].mode") for p in problems)


def test_a_service_file_names_missing_keys_and_folders(tmp_path: Path) -> None:
    path = write(
        tmp_path / "service.toml",
        """
[application]
name = "x"
title = 3
[folders]
sources = ["nowhere"]
""",
    )
    problems = problems_of(load_service, path)
    assert f"{path}: application.title: expected a string, got 3" in problems
    assert f"{path}: application.description: required key is missing" in problems


def test_unknown_keys_are_reported(tmp_path: Path) -> None:
    path = write(tmp_path / "service.toml", '[application]\nname="a"\ntitle="b"\ndescription="c"\nlanguages="fr"\n')
    assert any("unknown key(s) languages" in p for p in problems_of(load_service, path))


def test_source_files_are_read_in_toml_and_road2_json(tmp_path: Path) -> None:
    write(tmp_path / "a.source", SOURCE.format(id="a"))
    write(tmp_path / "b.source", '{"id": "b", "type": "straightline", "bbox": "-1.5,-2,3,4", "profiles": ["car"]}')
    write(tmp_path / "c.source.bak", SOURCE.format(id="c"))
    write(tmp_path / "notes.txt", "not a source")
    sources, problems = read_sources([tmp_path])
    assert problems == []
    assert [s.id for s in sources] == ["a", "b"]
    assert sources[1].bbox == (-1.5, -2.0, 3.0, 4.0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('type = "osrm"', "id: required key is missing"),
        ('id = "x"\ntype = "osrm"\nbbox = "1,2,3"', "bbox: expected 'xmin,ymin,xmax,ymax'"),
        ('id = "x"\ntype = "osrm"\nbbox = "3,2,1,4"', "bbox: expected xmin < xmax"),
        ('id = "x"\ntype = "osrm"\ntimeout = -1', "timeout: expected a number of seconds from 0.001 to 3600, got -1"),
        ('id = "x"\ntype = [', "invalid TOML"),
        ('{"id": "x",', "invalid JSON"),
    ],
)
def test_source_file_errors(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path / "x.source", text)
    (problem,) = problems_of(read_source, path)
    assert problem.startswith(f"{path}: ") and expected in problem


def test_duplicate_source_ids_are_reported(tmp_path: Path) -> None:
    write(tmp_path / "a.source", SOURCE.format(id="same"))
    write(
        tmp_path / "b.source", SOURCE.format(id="same") + 'description = "another definition"\n'
    )  # identical ones are accepted (test_road2_files)
    _, problems = read_sources([tmp_path])
    assert len(problems) == 1 and "already defined" in problems[0]


def test_kind_specific_options_are_checked_with_the_file_name(tmp_path: Path, plugins: Plugins) -> None:
    service = make_service(tmp_path, sources={"a": 'id = "a"\ntype = "straightline"\nprofiles = "car"\nspeed = 3\n'})
    problems = problems_of(Service(load_service(service), plugins).load)
    source = tmp_path / "sources" / "a.source"
    assert any(p.startswith(f"{source}: ") and "speed" in p for p in problems)


def test_road2_resource_json_is_accepted(tmp_path: Path) -> None:
    path = write(
        tmp_path / "r.resource",
        """{"resource": {"id": "r", "type": "osrm", "description": "d", "resourceVersion": "2022-11-24",
      "sources": ["s"], "availableOperations": [{"id": "route", "parameters": [
        {"id": "start", "values": {"bbox": "1,2,3,4", "projection": "EPSG:4326"}},
        {"id": "profile", "values": ["car"], "defaultValueContent": "car"},
        {"id": "bbox", "defaultValueContent": "true"},
        {"id": "projection", "values": ["EPSG:4326"], "defaultValueContent": "EPSG:4326"}]}]}}""",
    )
    resource = read_resource(path)
    assert resource.version == "2022-11-24"
    route = resource.operations["route"]
    assert route["start"] == {"bbox": "1,2,3,4", "projection": "EPSG:4326"}
    assert route["getBbox"] == {"default": "true"} and route["crs"]["default"] == "EPSG:4326"


def test_resource_parameter_errors_name_file_and_key(tmp_path: Path, plugins: Plugins) -> None:
    service = make_service(tmp_path)
    write(
        tmp_path / "resources" / "lines.resource",
        """
id = "lines"
type = "straightline"
sources = ["a"]
[operations.route]
start = { bbox = "10,0,0,10" }
profile = { values = ["car"], default = "bike" }
nbPoints = { default = 1 }
[operations.nowhere]
""",
    )
    service_obj = Service(load_service(service), plugins)
    problems = problems_of(run, service_obj.start())
    path = tmp_path / "resources" / "lines.resource"
    assert f"{path}: operations.route.start.bbox: expected xmin < xmax and ymin < ymax, got '10,0,0,10'" in problems
    assert f"{path}: operations.route.profile.default: expected one of ['car'], got 'bike'" in problems
    assert any(p.startswith(f"{path}: operations.route.nbPoints: unknown parameter") for p in problems)
    assert any(p.startswith(f"{path}: operations.nowhere: unknown operation") for p in problems)


def test_a_resource_offering_no_operation_is_refused_naming_operations(tmp_path: Path, plugins: Plugins) -> None:
    service = make_service(tmp_path)
    write(tmp_path / "resources" / "lines.resource", 'id = "lines"\ntype = "straightline"\nsources = ["a"]\n')
    problems = problems_of(run, Service(load_service(service), plugins).start())
    path = tmp_path / "resources" / "lines.resource"
    assert f"{path}: operations: expected at least one operation (route, isochrone, nearest or matrix), got none" in problems


def test_cors_file_accepts_road2_options_and_rejects_unknown_ones(tmp_path: Path) -> None:
    assert load_cors(write(tmp_path / "cors.json", '{"origin": "*", "methods": "GET,POST"}'))["allow_methods"] == ["GET", "POST"]
    problems = problems_of(load_cors, write(tmp_path / "bad.toml", "origins = 3\nwhatever = true\n"))
    assert len(problems) == 2


def test_workers_mode_and_back_off_settings_are_checked(tmp_path: Path) -> None:
    from roadkit.config.models import Backoff
    from roadkit.process.children import worker_count

    ok = write(
        tmp_path / "ok.toml",
        """
[[services]]
id = "a"
configuration = "a.toml"
workers = "auto"
[services.backoff]
initial = 0.1
max = 2
[[services]]
id = "b"
configuration = "b.toml"
workers = 3
""",
    )
    a, b = load_server(ok).services
    assert a.mode == "child-process" and a.workers == "auto" and b.workers == 3
    assert worker_count("auto") >= 1 and worker_count(3) == 3
    assert [a.backoff.delay(n) for n in (1, 2, 3, 5, 9)] == [0.1, 0.2, 0.4, 1.6, 2.0]
    assert Backoff().delay(1) == 0.5 and Backoff().delay(20) == 30.0
    bad = write(
        tmp_path / "bad.toml",
        """
[[services]]
id = "a"
configuration = "a.toml"
workers = "many"
[[services]]
id = "b"
configuration = "b.toml"
workers = 0
[[services]]
id = "c"
configuration = "c.toml"
mode = "same-process"
workers = 2
startup_timeout = 0
[services.backoff]
initial = 5
max = 1
""",
    )
    problems = problems_of(load_server, bad)
    most = max_workers()
    assert (
        f"{bad}: services[0].workers: expected a positive integer or \"auto\", at most {most} (4 per usable core), got 'many'" in problems
    )
    assert f'{bad}: services[1].workers: expected a positive integer or "auto", at most {most} (4 per usable core), got 0' in problems
    too_many = tmp_path / "too-many.toml"
    too_many.write_text(f'[[services]]\nid = "a"\nconfiguration = "a.toml"\nworkers = {most + 1}\n')
    assert problems_of(load_server, too_many) == [
        f'{too_many}: services[0].workers: expected a positive integer or "auto", at most {most} (4 per usable core), got {most + 1}'
    ]
    assert f'{bad}: services[2].workers: several workers need mode = "child-process" (got mode = "same-process")' in problems
    assert f"{bad}: services[2].startup_timeout: expected a number of seconds from 10 to 86400, got 0.0" in problems
    assert any(p.startswith(f"{bad}: services[2].backoff: expected 0 < initial <= max") for p in problems)


def test_the_allocator_setting_is_checked(tmp_path: Path) -> None:
    from roadkit.config import allocator

    library = tmp_path / "libmine.so"
    library.write_bytes(b"\x7fELF\x02\x01\x01")  # an ELF file's start: what the loader can preload
    text = write(tmp_path / "notes.so", "not a library")
    spaced, coloned = tmp_path / "my lib.so", tmp_path / "lib:mine.so"  # LD_PRELOAD splits at spaces and colons
    spaced.write_bytes(b"\x7fELF\x02\x01\x01")
    coloned.write_bytes(b"\x7fELF\x02\x01\x01")
    ok = write(
        tmp_path / "ok.toml",
        f"""
[[services]]
id = "a"
configuration = "a.toml"
[[services]]
id = "b"
configuration = "b.toml"
allocator = "system"
[[services]]
id = "c"
configuration = "c.toml"
allocator = "{library}"
[[services]]
id = "d"
configuration = "d.toml"
mode = "same-process"
allocator = "system"
""",
    )
    assert [s.allocator for s in load_server(ok).services] == ["auto", "system", str(library), "system"]
    bad = write(
        tmp_path / "bad.toml",
        """
[[services]]
id = "a"
configuration = "a.toml"
allocator = "fast"
[[services]]
id = "b"
configuration = "b.toml"
allocator = "/nowhere/libfast.so"
[[services]]
id = "c"
configuration = "c.toml"
mode = "same-process"
allocator = "jemalloc"
[[services]]
id = "d"
configuration = "d.toml"
allocator = 3
[[services]]
id = "e"
configuration = "e.toml"
allocator = "NOTES"
[[services]]
id = "f"
configuration = "f.toml"
allocator = "SPACED"
[[services]]
id = "g"
configuration = "g.toml"
allocator = "COLONED"
""".replace("NOTES", str(text))
        .replace("SPACED", str(spaced))
        .replace("COLONED", str(coloned)),
    )
    problems = problems_of(load_server, bad)
    expected = 'expected "auto", "system", "tcmalloc", "jemalloc" or the absolute path of a shared library'
    assert f"{bad}: services[0].allocator: {expected}, got 'fast'" in problems
    assert f"{bad}: services[1].allocator: {expected}, got '/nowhere/libfast.so' (not found)" in problems
    if allocator.find("jemalloc") is not None:  # installed by the project (tools/apt-packages.txt)
        assert any(p.startswith(f"{bad}: services[2].allocator: 'jemalloc' needs mode = \"child-process\"") for p in problems)
    assert any(p.startswith(f"{bad}: services[3].allocator: expected a string") for p in problems), problems
    assert f"{bad}: services[4].allocator: {expected}, got '{text}' (not a shared library: the loader would ignore it)" in problems
    unsplittable = "(LD_PRELOAD cannot hold a path with spaces or ':')"
    for index, path in ((5, spaced), (6, coloned)):
        assert f"{bad}: services[{index}].allocator: {expected}, got '{path}' {unsplittable}" in problems
    assert len(problems) == 7


def test_an_allocator_is_found_in_the_loaders_folders_and_preloaded(tmp_path: Path) -> None:
    from roadkit.config import allocator
    from roadkit.process.allocator import environment, loaded

    empty, folder = tmp_path / "empty", tmp_path / "lib"
    empty.mkdir()
    folder.mkdir()
    (folder / "libjemalloc.so.2").write_bytes(b"")
    # auto: tcmalloc first, jemalloc next, else glibc's
    assert allocator.preload("auto", [empty]) is None
    assert allocator.preload("auto", [empty, folder]) == folder / "libjemalloc.so.2"
    (folder / "libtcmalloc_minimal.so.4").write_bytes(b"")
    assert allocator.preload("auto", [folder]) == folder / "libtcmalloc_minimal.so.4"
    assert allocator.preload("system", [folder]) is None
    assert allocator.preload("jemalloc", [folder]) == folder / "libjemalloc.so.2"
    assert allocator.preload("/opt/libmine.so", [folder]) == Path("/opt/libmine.so")
    assert allocator.problem("tcmalloc", [empty]) == (
        "tcmalloc is not installed (none of libtcmalloc_minimal.so.4, libtcmalloc.so.4 in the loader's folders): "
        'install Debian\'s libtcmalloc-minimal4, or set "auto" or "system"'
    )
    assert allocator.problem("tcmalloc", [folder]) is None and allocator.problem("auto", [empty]) is None
    lib = folder / "libtcmalloc_minimal.so.4"
    # The worker's environment: the library first, other preloads kept, no duplicate; glibc's: unchanged.
    # Well formed (whether installed aside): what the admin API's schema accepts, and a 409 when this machine lacks it.
    assert [allocator.well_formed(v) for v in ("auto", "system", "tcmalloc", "jemalloc", "/opt/lib.so", "/a\tb")] == [True] * 6
    assert not any(allocator.well_formed(v) for v in ("fast", "", "/", "opt/lib.so", "/a b.so", "/a:b.so", "/a\0.so"))
    assert environment(lib, {"PATH": "/bin"}) == {
        "PATH": "/bin",
        "LD_PRELOAD": str(lib),
        "TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES": "2097152",
    }
    jemalloc = folder / "libjemalloc.so.2"
    assert environment(jemalloc, {"PATH": "/bin"}) == {"PATH": "/bin", "LD_PRELOAD": str(jemalloc)}
    assert environment(lib, {"LD_PRELOAD": f"/x/liba.so {lib}"})["LD_PRELOAD"] == f"{lib}:/x/liba.so"
    assert environment(None, {"LD_PRELOAD": "/x/liba.so"}) == {"LD_PRELOAD": "/x/liba.so"}
    # An allocator the administrator itself was started with does not override the setting.
    inherited = {"LD_PRELOAD": "/usr/lib/libjemalloc.so.2:/x/liba.so"}
    assert environment(lib, inherited)["LD_PRELOAD"] == f"{lib}:/x/liba.so"
    assert environment(None, inherited)["LD_PRELOAD"] == "/x/liba.so"
    assert "LD_PRELOAD" not in environment(None, {"LD_PRELOAD": "libtcmalloc_minimal.so.4"})
    assert loaded(2**22 + 12345) == "unknown"  # no such process
    assert loaded() in ("system", "tcmalloc", "jemalloc")


def test_a_string_or_a_table_where_a_list_is_expected_is_an_error(tmp_path: Path) -> None:
    from roadkit.config.convert import structure
    from roadkit.config.loader import _ServiceFile

    application = {"name": "a", "title": "b", "description": "c"}
    with pytest.raises(ConfigurationError) as string:
        structure({"application": application | {"keywords": "routing"}}, _ServiceFile, "service.toml")
    assert string.value.problems == ["service.toml: application.keywords: expected a list, got 'routing'"]
    with pytest.raises(ConfigurationError) as table:
        structure({"application": application, "listeners": {"port": 8080}}, _ServiceFile, "service.toml")
    assert table.value.problems == ["service.toml: listeners: expected a list, got {'port': 8080}"]
    assert structure({"application": application | {"keywords": ["routing"]}}, _ServiceFile, "service.toml").application.keywords == (
        "routing",
    )


def test_a_value_outside_a_fixed_list_names_the_values_allowed(tmp_path: Path) -> None:
    # Before: "expected Literal (loud not in literal typing.Literal[...])", Python's spelling of the type.
    write(tmp_path / "service.toml", '[application]\nname = "a"\ntitle = "b"\ndescription = "c"\n[http]\nserver = "gunicorn"\n')
    server = write(
        tmp_path / "server.toml",
        '[administrator.logging]\nlevel = "loud"\n[[services]]\nid = "main"\nconfiguration = "service.toml"\nmode = 3\n',
    )
    assert problems_of(load_server, server) == [
        f"{server}: administrator.logging.level: expected one of 'debug', 'info', 'warning', 'error', got 'loud'",
        f"{server}: services[0].mode: expected one of 'child-process', 'same-process', got 3",
    ]
    service = tmp_path / "service.toml"
    assert problems_of(load_service, service) == [f"{service}: http.server: expected one of 'hypercorn', 'uvicorn', got 'gunicorn'"]


def test_a_file_larger_than_any_configuration_is_refused_without_being_read_whole(tmp_path: Path) -> None:
    # A path given to the admin API may name anything: a projections folder of /proc holds kcore
    # (terabytes), read whole before. A sparse file stands for it: 64 MiB, read only up to the limit.
    from roadkit.routing.projections import ProjectionRegistry

    folder = tmp_path / "projections"
    folder.mkdir()
    with (folder / "huge.toml").open("wb") as handle:
        handle.truncate(64 * 1024 * 1024)
    with pytest.raises(ConfigurationError) as refused:
        ProjectionRegistry.from_folder(folder)
    assert f"{folder / 'huge.toml'}: larger than 16777216 bytes: not a configuration document" in refused.value.problems


def test_only_source_and_resource_files_are_read_from_several_folders(tmp_path: Path, plugins: Plugins) -> None:
    service = make_service(tmp_path, resource_sources='"a", "b"')
    service.write_text(service.read_text().replace('sources = ["sources"]', 'sources = ["sources", "more/sources"]'))
    write(tmp_path / "more" / "sources" / "b.source", SOURCE.format(id="b").replace('["car"]', '["pedestrian"]'))
    # Files that would break the start if they were read: invalid, or defining the same ids again.
    for folder, suffix in (("sources", "source"), ("more/sources", "source"), ("resources", "resource")):
        for junk in (f"x.{suffix}.bak", f".x.{suffix}~", f"x.{suffix}~", f".x.{suffix}", f"._x.{suffix}", "README", f"x.{suffix}.swp"):
            write(tmp_path / folder / junk, "not = [toml")
        write(tmp_path / folder / f"old.{suffix}.bak", SOURCE.format(id="a"))
        (tmp_path / folder / f"sub.{suffix}").mkdir()
        write(tmp_path / folder / f"sub.{suffix}" / f"y.{suffix}", "not = [toml")
    loaded = Service(load_service(service), plugins)
    loaded.load()
    assert list(loaded.sources) == ["a", "b"]
    with service_client(service, plugins) as client:
        caps = client.get("/simple/1.0.0/getcapabilities").json()
        assert [r["id"] for r in caps["resources"]] == ["lines"]
        # One resource over the sources of both folders: each profile is computed by its folder's source.
        for profile in ("car", "pedestrian"):
            route = client.get("/simple/1.0.0/route", params={"resource": "lines", "start": "0,0", "end": "1,1", "profile": profile})
            assert route.status_code == 200 and route.json()["profile"] == profile, route.text
    # An id defined again in the other folder, differently, is an error naming both files.
    again = write(tmp_path / "more" / "sources" / "a.source", SOURCE.format(id="a") + 'description = "another a"\n')
    assert problems_of(Service(load_service(service), plugins).load) == [
        f"{again}: id: source id 'a' is already defined in {tmp_path / 'sources' / 'a.source'}"
    ]
