"""The headline tables are checkable: every figure with a decimal point in a row (0.826,
3.48x, 13.1x-17.7x) is found, at the precision the table prints it, in the records that row
links: the linked Markdown pages, the JSON records they link, and the JSON files the row names.
A figure edited in a table without its record, or a record re-measured without the table,
fails here. The tables: the README's ``## Headline results`` (at most ten rows, each with its
command in the code block below it) and docs/results.md's ``## Headline claims`` (all of them)."""

from __future__ import annotations

import json
import pathlib
import re
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation

import pytest

from tests.test_docs import LINK, REPO, local_target

README = REPO / "README.md"
DECIMAL = re.compile(r"(?<![\w.])-?\d[\d,]*\.\d+(?![.\d])")
NUMBER = re.compile(r"-?\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?")


RESULTS = REPO / "docs" / "results.md"


def section(text: str, heading: str) -> str:
    """The text under ``## heading`` up to the next ``## `` heading."""
    return text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]


def headline_rows(text: str, heading: str = "Headline results") -> list[list[str]]:
    """The cells of each body row of the first table under ``## heading``."""
    rows = [line for line in section(text, heading).splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def figures(cells: list[str]) -> list[str]:
    """The decimal figures of a row's cells (link targets left out)."""
    text = " ".join(LINK.sub(lambda m: m.group(0).split("](")[0], cell) for cell in cells)
    return DECIMAL.findall(text)


def linked_files(cells: list[str], page: pathlib.Path) -> list[pathlib.Path]:
    """The local files the cells of ``page`` link, without their anchors."""
    files = []
    for cell in cells:
        for target in LINK.findall(cell):
            path = local_target(page, target)
            if path is not None and path.is_file():
                files.append(path)
    return files


def record_numbers(files: list[pathlib.Path]) -> list[Decimal]:
    """Every number written in ``files`` and in the JSON records the Markdown pages among
    them link."""
    texts, seen = [], set()
    queue = list(files)
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        text = path.read_text(encoding="utf-8")
        texts.append(text)
        if path.suffix == ".md":
            queue += [f for f in linked_files([text], path) if f.suffix == ".json"]
    numbers = []
    for text in texts:
        for token in NUMBER.findall(text):
            try:
                numbers.append(Decimal(token.replace(",", "")))
            except InvalidOperation:
                continue
    return numbers


def matches(figure: str, numbers: list[Decimal]) -> bool:
    """Whether a number in the records prints as ``figure`` at ``figure``'s precision
    (either rounding of a half), or a percentage of it does. Signs are ignored: a range
    written ``0.83-0.95`` reads as 0.83 and -0.95."""
    printed = abs(Decimal(figure.replace(",", "")))
    places = Decimal(1).scaleb(printed.as_tuple().exponent)
    for number in numbers:
        for value in (abs(number), abs(number) * 100):
            if any(value.quantize(places, rounding=mode) == printed
                   for mode in (ROUND_HALF_UP, ROUND_HALF_EVEN)):
                return True
    return False


def test_the_checker_finds_a_figure_and_misses_a_changed_one(tmp_path):
    record = tmp_path / "r.json"
    record.write_text(json.dumps({"ratio": 3.4812, "score": 0.8257}))
    numbers = record_numbers([record])
    assert matches("3.48", numbers) and matches("0.826", numbers) and matches("82.6", numbers)
    assert not matches("3.49", numbers) and not matches("0.83", [Decimal("0.8249")])
    row = ["claim", "ours 0.826 and 3.48x", "peer", "yes", f"[r]({record.name})"]
    assert figures(row) == ["0.826", "3.48"]
    assert linked_files(row, tmp_path / "page.md") == [record.resolve()]


README_TEXT = README.read_text(encoding="utf-8")
ROWS = headline_rows(README_TEXT)
TABLES = [(README, cells) for cells in ROWS] + [
    (RESULTS, cells) for cells in headline_rows(RESULTS.read_text(encoding="utf-8"),
                                                "Headline claims")]


def test_the_readme_table_has_ten_numbered_rows_that_each_link_a_record():
    assert len(ROWS) == 10
    assert [cells[0] for cells in ROWS] == [str(number) for number in range(1, 11)]
    for cells in ROWS:
        assert linked_files(cells[-1:], README), f"no record linked: {cells[1]}"


def test_every_readme_row_has_a_command_that_exists():
    block = section(README_TEXT, "Headline results").split("```bash\n", 1)[1].split("```", 1)[0]
    rows = set()
    for line in block.splitlines():
        command, _, comment = line.partition("  # ")
        rows.update(int(n) for n in re.findall(r"^\s*(\d+)", comment))
        module = re.match(r"python -m ([\w.]+)(?: (\w+))?", command)
        assert module, f"not a command: {line}"
        path = REPO / (module.group(1).replace(".", "/"))
        assert path.with_suffix(".py").is_file() or (path / "__main__.py").is_file(), line
        if module.group(1) == "experiments.bench":
            assert (path / f"{module.group(2)}.py").is_file(), line
    assert rows == set(range(1, 11))


def test_the_results_page_keeps_every_claim_and_the_readme_its_rows():
    claims = [cells for page, cells in TABLES if page == RESULTS]
    assert len(claims) >= 20
    for cells in claims:
        assert linked_files(cells[-1:], RESULTS), f"no record linked: {cells[0]}"


def row_id(page: pathlib.Path, cells: list[str]) -> str:
    """A test id: the page and the row's first words."""
    return page.stem + "-" + re.sub(r"\W+", "_", " ".join(cells[:2]))[:40]


@pytest.mark.parametrize("page,cells", TABLES, ids=[row_id(*row) for row in TABLES])
def test_every_headline_figure_is_in_its_records(page, cells):
    numbers = record_numbers(linked_files(cells, page))
    missing = [figure for figure in figures(cells[:-1]) if not matches(figure, numbers)]
    assert not missing, f"{page.name}: {cells[0]} {cells[1]}: not in the linked records: {missing}"
