"""A pytest plugin: under ``pytest -n N --dist loadgroup``, the tests of a module whose
``pytestmark`` is ``pytest.mark.xdist_group("name")`` all run on one worker, so that its
module-scoped fixtures (tiny training runs) are computed once, not once per worker.

pytest-xdist implements ``loadgroup`` by appending ``@name`` to each marked item's node id
on the workers (``item._nodeid``); from pytest 9.2 on a node id is derived from ``item._id``
and that assignment no longer changes it, so every marked test was scheduled on its own and
each worker computed the module's fixtures. The scheduler here reads the group from the
module's source instead (a module-level ``pytestmark = pytest.mark.xdist_group("name")``),
on the controller, where only node ids are known; node ids that do carry ``@name`` (pytest
before 9.2) keep xdist's own rule.
"""

from __future__ import annotations

import functools
import pathlib
import re

import pytest

GROUP_MARK = re.compile(r"""^pytestmark\s*=\s*pytest\.mark\.xdist_group\(\s*(?:name\s*=\s*)?"""
                        r"""["']([^"']+)["']""", re.MULTILINE)
"""A module-level ``pytestmark`` naming one xdist group; group 1 is its name."""


@functools.cache
def module_group(path: pathlib.Path) -> str | None:
    """The xdist group that the test module at ``path`` marks all its tests with, or
    ``None`` (no module-level mark, or no such file)."""
    try:
        match = GROUP_MARK.search(path.read_text(encoding="utf-8"))
    except OSError:
        return None
    return None if match is None else match.group(1)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With ``--dist loadgroup``: xdist's load-scope scheduling whose scope is a test's
    module group (:func:`module_group`) where it has one, else the test itself."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    root = config.rootpath

    class ModuleGroupScheduling(LoadScopeScheduling):
        """Load-scope scheduling whose scopes are module groups or single tests."""

        def _split_scope(self, nodeid: str) -> str:
            if nodeid.rfind("@") > nodeid.rfind("]"):
                return nodeid.rsplit("@", 1)[-1]
            group = module_group(root / nodeid.split("::", 1)[0])
            return nodeid if group is None else f"group:{group}"

    return ModuleGroupScheduling(config, log)
