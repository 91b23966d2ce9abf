"""Vendor Swagger UI into core's package: ``python tools/vendor_swagger_ui.py 5.35.0``.

``npm pack swagger-ui-dist@VERSION`` fetches the release (npm checks the tarball against the registry's
integrity hash); the files the OpenAPI viewer loads, and their licences, are copied into
``core/src/roadkit/web/static/swagger-ui/`` with ``manifest.json``: the version, the tarball's integrity
and each file's SHA-384, which the viewer page puts in its ``integrity`` attributes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

TARGET = Path(__file__).parents[1] / "core" / "src" / "roadkit" / "web" / "static" / "swagger-ui"
#: What the viewer page loads (integrity-checked) and the licences that go with it.
ASSETS = ("swagger-ui-bundle.js", "swagger-ui-standalone-preset.js", "swagger-ui.css")
LICENCES = ("LICENSE", "NOTICE", "swagger-ui-bundle.js.LICENSE.txt", "swagger-ui-standalone-preset.js.LICENSE.txt")


def sri(data: bytes) -> str:
    """A subresource-integrity value (``sha384-<base64>``) of ``data``."""
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()


def main(version: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        packed = json.loads(
            subprocess.run(
                ["npm", "pack", f"swagger-ui-dist@{version}", "--json"], cwd=tmp, check=True, capture_output=True, text=True
            ).stdout
        )[0]
        with tarfile.open(Path(tmp) / packed["filename"]) as tar:
            tar.extractall(tmp, filter="data")
        package = Path(tmp) / "package"
        if TARGET.exists():
            shutil.rmtree(TARGET)
        TARGET.mkdir(parents=True)
        for name in ASSETS + LICENCES:
            shutil.copyfile(package / name, TARGET / name)
    manifest = {
        "package": "swagger-ui-dist",
        "version": packed["version"],
        "tarball_integrity": packed["integrity"],
        "files": {name: sri((TARGET / name).read_bytes()) for name in ASSETS},
    }
    (TARGET / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"swagger-ui-dist {packed['version']} vendored into {TARGET}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "latest")
