"""The README and docs/*.md: every relative link reaches a file (and, into a Markdown page,
one of its headings), and the README stays within its length (DESIGN: about 250 lines)."""

from __future__ import annotations

import pathlib
import re
import urllib.parse

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
README_MAX_LINES = 250
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def prose_lines(page: pathlib.Path) -> list[tuple[int, str]]:
    """(line number, text) of the lines of ``page`` outside fenced code blocks."""
    lines, fenced = [], False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append((number, line))
    return lines


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading's text: link markup reduced to its text, lower case,
    punctuation other than hyphens dropped, spaces made hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: pathlib.Path) -> set[str]:
    """The anchors of every heading of ``page``."""
    return {anchor(line.lstrip("#")) for _, line in prose_lines(page) if line.startswith("#")}


def local_target(page: pathlib.Path, target: str) -> pathlib.Path | None:
    """The file a link ``target`` on ``page`` names (``page`` itself for an anchor alone),
    or None for a URL with a scheme."""
    if re.match(r"[a-z][a-z0-9+.-]*:", target):
        return None
    path = target.partition("#")[0]
    return (page.parent / urllib.parse.unquote(path)).resolve() if path else page


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_relative_links_resolve(page):
    broken = []
    for number, line in prose_lines(page):
        for target in LINK.findall(line):
            linked = local_target(page, target)
            if linked is None:
                continue
            fragment = target.partition("#")[2]
            if not linked.exists():
                broken.append(f"{page.name}:{number}: no file {target}")
            elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
                broken.append(f"{page.name}:{number}: no heading {target}")
    assert not broken, "\n".join(broken)


def test_readme_length():
    lines = len((REPO / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines, at most {README_MAX_LINES}"
