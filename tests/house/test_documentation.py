"""The documentation's shape (issue 40): the README is a front page of at most 300 lines,
the site's nav (mkdocs.yml) lists every page of docs/ and nothing else, and the README's
links into docs/ lead somewhere. Cheap checks: `make docs` builds the site (strict),
and the transcripts and examples run in tests/cli/test_doc_transcripts.py and
tests/api/test_doc_examples.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml
from markdown_it import MarkdownIt

from conftest import DOCS, ROOT, documentation_files

README_MOST_LINES = 300


def nav_pages(nav: Any) -> Iterator[str]:
    """The pages mkdocs.yml's nav names (`- Title: page.md`, sections nesting lists)."""
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for item in nav:
            yield from nav_pages(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from nav_pages(value)


def site_nav() -> list[str]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["docs_dir"] == "docs"
    return list(nav_pages(config["nav"]))


def test_the_readme_is_a_front_page() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MOST_LINES, (
        f"README.md has {len(lines)} lines, at most {README_MOST_LINES}: "
        "move the rest into a page of docs/"
    )


def test_the_nav_lists_every_page_once() -> None:
    pages = sorted(str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md"))
    nav = site_nav()
    assert len(nav) == len(set(nav)), "a page is in mkdocs.yml's nav twice"
    assert sorted(nav) == pages, "mkdocs.yml's nav and the pages of docs/ differ"
    # The pages the transcripts and examples are read from are the same ones.
    assert [ROOT / "README.md", *sorted(DOCS / page for page in nav)] == documentation_files()


def test_the_readme_links_lead_to_pages() -> None:
    links = [
        token.attrGet("href")
        for block in MarkdownIt().parse((ROOT / "README.md").read_text())
        if block.children
        for token in block.children
        if token.type == "link_open"
    ]
    local = [str(link).split("#")[0] for link in links if "://" not in str(link)]
    assert "docs/python-api.md" in local
    for link in local:
        assert (ROOT / link).exists(), f"README.md links to {link}, which is not here"


def test_nav_pages_are_found_in_sections() -> None:
    nav = [{"Home": "index.md"}, {"Commands": [{"diff": "commands/diff.md"}, "x.md"]}]
    assert list(nav_pages(nav)) == ["index.md", "commands/diff.md", "x.md"]
