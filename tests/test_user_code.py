"""Environments and learners from user code (:mod:`jaxmarl_accel.user_code`,
``register_env``, ``register_algo``): references ``package.module:attr``, registration, and a
one-line error for every way they can go wrong."""

from __future__ import annotations

import sys

import pytest

import jaxmarl_accel as jm
from jaxmarl_accel import envs
from jaxmarl_accel.algos import registry
from jaxmarl_accel.user_code import is_reference, load_reference

BROKEN_MODULE = "raise RuntimeError('the module is broken\\non two lines')\n"
NOT_AN_ENV_MODULE = """
def make(num_agents=2):
    return {"obs": num_agents}

def make_raises(num_agents=2):
    raise TypeError("no agents today")

class Thing:
    pass

THING = Thing()
"""


@pytest.fixture
def user_modules(tmp_path, monkeypatch):
    """A working folder with the user's modules (as the command line's is)."""
    (tmp_path / "broken_user_mod.py").write_text(BROKEN_MODULE)
    (tmp_path / "not_an_env_mod.py").write_text(NOT_AN_ENV_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("broken_user_mod", "not_an_env_mod"):
        sys.modules.pop(name, None)


def test_references_have_the_entry_point_form():
    assert is_reference("examples.custom_env:make")
    assert is_reference("pkg:Class.member")
    for text in ("simple_spread", "a:b:c", ":make", "pkg.:make", "pkg:", "1pkg:make"):
        assert not is_reference(text), text


@pytest.mark.parametrize(("reference", "message"), [
    ("not a reference", "expected a reference package.module:attr"),
    ("nosuch_pkg_xyz.mod:make", "no module named 'nosuch_pkg_xyz'"),
    ("broken_user_mod:make", "importing module 'broken_user_mod' failed: RuntimeError: the "
                             "module is broken on two lines"),
    ("not_an_env_mod:nothing", "module 'not_an_env_mod' has no attribute 'nothing'"),
])
def test_a_reference_that_does_not_load_is_one_line(user_modules, reference, message):
    with pytest.raises(ValueError) as error:
        load_reference(reference, "--env")
    assert message in str(error.value) and "\n" not in str(error.value)
    assert str(error.value).startswith(f"--env {reference!r}")


@pytest.mark.parametrize(("name", "message"), [
    ("not_an_env_mod:make", "its factory returned an object of type dict, not (Env, params)"),
    ("not_an_env_mod:make_raises", "raised TypeError: no agents today"),
    ("not_an_env_mod:THING", "is an object of type Thing, not a factory"),
])
def test_a_factory_that_makes_no_env_is_one_line(user_modules, name, message):
    with pytest.raises(ValueError, match="env '") as error:
        envs.make(name)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_registered_and_referenced_envs_are_made_and_checked(user_modules):
    from examples.custom_env import make as make_ring

    jm.register_env("ring_test", make_ring, replace=True)
    env, _ = envs.make("ring_test", num_agents=2)
    assert env.spec.num_agents == 2 and envs.is_valid_name("ring_test")
    assert "ring_test" in envs.registered_envs() and "ring_test" in envs.ENV_NAMES
    assert envs.scenario_keywords("ring_test") == ("num_agents", "width", "episode_length")
    jm.register_env("ring_test", make_ring)  # the same factory again: nothing changes
    with pytest.raises(ValueError, match="env 'ring_test' is already registered"):
        jm.register_env("ring_test", lambda: None)
    with pytest.raises(ValueError, match="'simple_spread' is one of the package's scenarios"):
        jm.register_env("simple_spread", make_ring)
    with pytest.raises(ValueError, match="without ':'"):
        jm.register_env("a:b", make_ring)
    with pytest.raises(ValueError, match="must be callable"):
        jm.register_env("ring_other", 3)


def test_an_algo_reference_must_name_an_algo_spec(user_modules):
    with pytest.raises(ValueError, match="is an object of type function, not a "
                                         "jaxmarl_accel.AlgoSpec"):
        registry.algo_spec("not_an_env_mod:make")
    with pytest.raises(ValueError, match="no module named"):
        registry.algo_spec("nosuch_pkg_xyz:SPEC")
    assert "not_an_env_mod:make" not in registry.registered_algos()
