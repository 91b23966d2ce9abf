"""The documentation's structure: every page in the site's navigation, the README's links alive, the benchmark table's markers.

The site itself is built with ``mkdocs build --strict`` by ``./dev docs`` and by the tests session.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"


def test_every_page_is_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text().split("\nnav:", 1)[1]
    listed = set(re.findall(r":\s*([\w/-]+\.md)\s*$", nav, re.M))
    pages = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    assert pages == listed


def test_the_readme_links_to_pages_that_exist() -> None:
    links = re.findall(r"\]\(((?:docs/)?[\w/.-]+\.md)(?:#[\w-]+)?\)", (ROOT / "README.md").read_text())
    assert any(link.startswith("docs/") for link in links)
    missing = [link for link in links if not (ROOT / link).is_file()]
    assert not missing, f"README.md links to missing files: {missing}"


def test_the_benchmark_page_holds_the_generated_table_once() -> None:
    text = (DOCS / "benchmarks.md").read_text()
    assert text.count("<!-- bench-table:begin -->") == 1 and text.count("<!-- bench-table:end -->") == 1
    begin, end = text.index("<!-- bench-table:begin -->"), text.index("<!-- bench-table:end -->")
    assert begin < end and "| scenario |" in text[begin:end]
    for image in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text):
        assert (DOCS / image).is_file(), f"docs/benchmarks.md shows a missing image: {image}"
