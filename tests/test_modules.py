"""Every module of the package and of ``experiments`` imports in the fast tier, so a module
that no cheaper test reaches still fails the default run when it no longer imports (a
renamed name, a moved file, a syntax error). The peers' scripts import the peer libraries
(PyTorch, BenchMARL) that only their own environments install; for them the one error
allowed is that library missing."""

import importlib
import importlib.util
import pkgutil

import pytest

import experiments
import jaxmarl_accel

PEER_LIBRARIES = {
    "experiments.bench.peer_benchmarl": ("benchmarl", "torch"),
    "experiments.bench.peer_maddpg_torch": ("torch",),
}
"""Module -> the peer libraries it imports at its top (installed only beside the peers)."""


def all_modules() -> list[str]:
    """Every module name under ``jaxmarl_accel`` and ``experiments``, packages included."""
    names = []
    for package in (jaxmarl_accel, experiments):
        names.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + "."):
            names.append(info.name)
    return sorted(names)


def test_the_walk_finds_the_modules_of_both_trees():
    names = all_modules()
    assert "jaxmarl_accel.trainer.sweep" in names
    assert "experiments.render_demo" in names
    assert "experiments.bench.sweep" in names
    assert set(PEER_LIBRARIES) <= set(names)
    assert len(names) > 150


@pytest.mark.parametrize("name", all_modules())
def test_every_module_imports(name):
    peers = PEER_LIBRARIES.get(name, ())
    missing = [lib for lib in peers if importlib.util.find_spec(lib) is None]
    if missing:
        with pytest.raises(ModuleNotFoundError) as error:
            importlib.import_module(name)
        assert error.value.name in missing
        return
    importlib.import_module(name)
