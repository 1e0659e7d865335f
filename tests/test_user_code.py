"""Environments, learners and samplers from user code (:mod:`jaxmarl_accel.user_code`,
``register_env``, ``register_algo``, ``register_sampler``): references
``package.module:attr``, registration, and a one-line error for every way they can go wrong."""

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


def test_a_scenario_record_names_its_teams_and_its_agent_count(user_modules):
    tag = envs.scenario("simple_tag")
    assert tag.agent_count == "num_predators" and [t.name for t in tag.teams] == ["predators",
                                                                                  "prey"]
    assert envs.agent_count_kwarg("simple_tag") == "num_predators"
    # a JaxMARL id is no module attribute (jaxmarl.overcooked is not one), nor looked up as one
    assert envs.agent_count_kwarg("jaxmarl:overcooked") == "num_agents"
    assert envs.agent_count_kwarg("jaxmarl:HeuristicEnemySMAX") == "num_agents"
    assert not envs.counts_total("jaxmarl:MPE_simple_spread_v3")
    assert envs.counts_total("tag_gridworld") and not envs.counts_total("simple_spread")
    assert envs.total_count_kwargs("tag_gridworld", 12, {"num_taggers": 2}) == {
        "num_taggers": 2, "num_runners": 10}
    assert set(envs.SCENARIOS) <= set(envs.registered_envs())
    assert all(envs.scenario(name).summary for name in envs.SCENARIOS)
    from examples.custom_env import make as make_ring

    record = envs.Scenario("ring_record_test", make_ring, "a ring", (envs.Team("agents",
                                                                             "num_agents"),))
    assert envs.register_scenario(record, replace=True) is record
    assert envs.make("ring_record_test", num_agents=3)[0].spec.num_agents == 3
    from jaxmarl_accel.cli.scenario_flags import scenario_kwargs

    assert scenario_kwargs("examples.custom_env:make", (), 4) == (("num_agents", 4),)
    (user_modules / "ring_record_mod.py").write_text(
        "from examples.custom_env import make\n"
        "from jaxmarl_accel.envs import Scenario, Team\n"
        "RING = Scenario('ring_pair', make, 'a ring', (Team('agents', 'num_agents'), "
        "Team('walls', 'width')), agent_count='num_agents', counts_total=True)\n")
    assert envs.counts_total("ring_record_mod:RING")
    assert scenario_kwargs("ring_record_mod:RING", (("width", 5),), 7) == (
        ("num_agents", 2), ("width", 5))
    sys.modules.pop("ring_record_mod", None)
    with pytest.raises(ValueError, match="agent_count 'num_runners' is none of its teams'"):
        envs.Scenario("bad", make_ring, teams=(envs.Team("agents", "num_agents"),),
                      agent_count="num_runners")
    with pytest.raises(ValueError, match="takes a Scenario, got function"):
        envs.register_scenario(make_ring)


def test_a_user_sampler_is_registered_or_named_by_reference(user_modules):
    import jax
    import numpy as np

    from examples.custom_sampler import SPEC, make_recent_buffer
    from jaxmarl_accel import buffers

    assert buffers.register_sampler(SPEC, replace=True) is SPEC
    assert "recent" in buffers.registered_samplers() and "recent" in buffers.sampler_names()
    assert "recent" not in buffers.SAMPLERS and not buffers.is_prioritized("recent")
    with pytest.raises(ValueError, match="sampler 'recent' is already registered"):
        buffers.register_sampler(buffers.SamplerSpec("recent", make_recent_buffer))
    reference = "examples.custom_sampler:make_recent_buffer"
    assert buffers.sampler_spec(reference).make is make_recent_buffer
    assert reference in buffers.sampler_names() and reference not in buffers.registered_samplers()
    for name in ("recent", reference, "examples.custom_sampler:SPEC"):
        buffer = buffers.make_buffer(name, capacity=16, batch_size=4, recency=4.0)
        example = {"obs": np.zeros((2, 3), np.float32)}
        state = buffer.init(example)
        state = jax.jit(buffer.add)(state, {"obs": np.arange(48, dtype=np.float32)
                                            .reshape(8, 2, 3)})
        batch = jax.jit(buffer.sample)(state, jax.random.key(0))
        assert batch.indices.shape == (4,) and int(batch.indices.max()) < 8
        state = jax.jit(buffer.update_priorities)(state, batch.indices, np.ones(4))
        assert int(state.sampler.updates) == 1
    with pytest.raises(ValueError, match=r"recency: not an option of sampler 'per'"):
        buffers.make_buffer("per", capacity=16, batch_size=4, recency=2.0)


@pytest.mark.parametrize(("name", "message"), [
    ("nosuch_pkg_xyz.mod:make", "sampler 'nosuch_pkg_xyz.mod:make': no module named "
                                "'nosuch_pkg_xyz'"),
    ("not_an_env_mod:nothing", "module 'not_an_env_mod' has no attribute 'nothing'"),
    ("not_an_env_mod:THING", "is an object of type Thing, not a jaxmarl_accel.buffers."
                             "SamplerSpec or a buffer factory"),
    ("not_an_env_mod:make", "its factory raised TypeError: make() got an unexpected keyword"),
    ("fifo", "sampler must be one of uniform, neighbor, per, prioritized_locality, reuse, "
             "reuse_block"),
])
def test_a_sampler_that_does_not_load_or_build_is_one_line(user_modules, name, message):
    from jaxmarl_accel import buffers

    with pytest.raises(ValueError) as error:
        buffers.make_buffer(name, capacity=16, batch_size=4)
    assert message in str(error.value) and "\n" not in str(error.value)
