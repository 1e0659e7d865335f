"""The two tiers: pytest runs the fast tier by default, and ``fast_cases(n)`` keeps the first
``n`` cases of a parametrized test in it (tests/conftest.py)."""

from __future__ import annotations

import pathlib
import shlex
import tomllib

import pytest

from tests.conftest import pytest_collection_modifyitems

REPO = pathlib.Path(__file__).resolve().parent.parent


class FakeItem:
    """What the hook reads of a collected test: its path, node id, marks."""

    def __init__(self, nodeid: str, fast_cases: int | None):
        self.path = REPO / nodeid.split("::")[0]
        self.nodeid = nodeid
        self.marks = [] if fast_cases is None else [pytest.mark.fast_cases(fast_cases).mark]

    def get_closest_marker(self, name):
        return next((mark for mark in self.marks if mark.name == name), None)

    def add_marker(self, marker):
        self.marks.append(marker.mark)

    def is_slow(self) -> bool:
        return self.get_closest_marker("slow") is not None


def test_fast_cases_keeps_the_first_cases_of_each_test_in_the_fast_tier():
    items = [FakeItem(f"tests/a.py::test_x[{i}]", 1) for i in range(3)]
    items += [FakeItem(f"tests/a.py::test_y[{i}]", 2) for i in range(3)]
    items += [FakeItem(f"tests/b.py::test_x[{i}]", 1) for i in range(2)]
    items += [FakeItem(f"tests/a.py::test_z[{i}]", None) for i in range(2)]
    pytest_collection_modifyitems(None, items)
    assert [item.is_slow() for item in items] == [False, True, True, False, False, True,
                                                  False, True, False, False]


def test_the_default_run_is_the_fast_tier():
    options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]
    ini = options["ini_options"]
    args = shlex.split(ini["addopts"])
    assert args[args.index("-m") + 1] == "not slow"
    assert {marker.split(":")[0].split("(")[0] for marker in ini["markers"]} >= {"slow",
                                                                                 "fast_cases"}
