"""The public API: every exported name imports, is documented, and the lazy loading works."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import jaxmarl_accel


def test_all_lists_exactly_the_exports():
    assert sorted(jaxmarl_accel.__all__) == sorted(jaxmarl_accel._EXPORTS)
    assert len(set(jaxmarl_accel.__all__)) == len(jaxmarl_accel.__all__)
    for required in ("make", "Env", "EnvSpec", "evaluate_policy", "make_buffer", "Buffer",
                     "SampleBatch", "make_algo", "Algo", "ActorCriticConfig", "make_train",
                     "make_trainer", "TrainConfig", "Transition"):
        assert required in jaxmarl_accel.__all__


@pytest.mark.parametrize("name", jaxmarl_accel.__all__)
def test_every_public_name_imports_and_has_a_docstring(name):
    obj = getattr(jaxmarl_accel, name)
    module = __import__(jaxmarl_accel._EXPORTS[name], fromlist=[name])
    assert obj is getattr(module, name)
    doc = inspect.getdoc(obj) or ""
    # NamedTuples without a docstring get an auto-generated "Name(field, ...)" one
    assert len(doc) > 20 and not doc.startswith(f"{name}("), name
    if inspect.isfunction(obj):
        hints = inspect.get_annotations(obj)
        assert "return" in hints, f"{name} has no return type hint"


def test_from_import_star_and_unknown_names():
    namespace: dict = {}
    exec("from jaxmarl_accel import *", namespace)
    assert set(jaxmarl_accel.__all__) <= set(namespace)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        jaxmarl_accel.nope  # noqa: B018
    assert "make_buffer" in dir(jaxmarl_accel)


def test_import_is_lazy():
    code = ("import sys, jaxmarl_accel; "
            "print('jax' in sys.modules, 'jaxmarl_accel.trainer.train' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]


def test_api_pieces_compose_under_jit():
    import jax
    import jax.numpy as jnp

    jm = jaxmarl_accel
    env, params = jm.make("simple_spread", num_agents=3)
    buffer = jm.make_buffer("uniform", capacity=64, batch_size=8)
    algo = jm.make_algo("maddpg", env.spec, jm.ActorCriticConfig(hidden_sizes=(8,)))

    @jax.jit
    def fill_and_sample(key):
        obs, _ = env.reset(key, params)
        n = env.spec.num_agents
        example = jm.Transition(obs=obs, action=jnp.zeros((n, algo.action_dim)),
                                reward=jnp.zeros(n), next_obs=obs, done=jnp.zeros(n))
        state = buffer.init(example)
        batch = jax.tree.map(lambda x: jnp.stack([x] * 8), example)
        state = buffer.add(state, batch)
        return buffer.sample(state, key)

    sample = fill_and_sample(jax.random.PRNGKey(0))
    assert isinstance(sample, jm.SampleBatch)
    assert sample.experience.obs.shape == (8, 3, env.spec.obs_dim)


