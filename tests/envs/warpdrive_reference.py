"""WarpDrive's numpy Tag environments (salesforce/warp-drive, paper 003) from a local copy.

``WARPDRIVE_SRC`` names a checkout of the repository (the folder holding ``example_envs``
and ``warp_drive``); the side-by-side tests are skipped without it. Only numpy is needed:
the ``gym`` import of the two env modules (used for action-space objects) is stubbed, for
the import only, when gym is not installed.
"""

from __future__ import annotations

import importlib
import os
import sys
import types

import pytest

WARPDRIVE_SRC = os.environ.get("WARPDRIVE_SRC", "")
requires_warpdrive = pytest.mark.skipif(
    not os.path.isfile(os.path.join(WARPDRIVE_SRC, "example_envs", "tag_gridworld",
                                    "tag_gridworld.py")),
    reason="set WARPDRIVE_SRC to a checkout of salesforce/warp-drive")


def _gym_stub() -> dict[str, types.ModuleType]:
    gym, spaces = types.ModuleType("gym"), types.ModuleType("gym.spaces")

    class Space:
        def __init__(self, *args: object, **kwargs: object) -> None:
            self.args = args

    spaces.Discrete = spaces.MultiDiscrete = Space
    gym.spaces = spaces
    return {"gym": gym, "gym.spaces": spaces}


def load(module: str, name: str) -> type:
    """The class ``name`` of WarpDrive's ``example_envs.<module>``.

    Args:
      module: e.g. ``"tag_gridworld.tag_gridworld"``.
      name: e.g. ``"TagGridWorld"``.
    """
    if WARPDRIVE_SRC not in sys.path:
        sys.path.insert(0, WARPDRIVE_SRC)
    stubs = {}
    if importlib.util.find_spec("gym") is None:
        stubs = _gym_stub()
        sys.modules.update(stubs)
    try:
        return getattr(importlib.import_module(f"example_envs.{module}"), name)
    finally:
        for key in stubs:
            sys.modules.pop(key, None)
