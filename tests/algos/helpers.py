"""Small specs and synthetic batches shared by the algorithm tests."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.algos import ActorCriticConfig, Algo, make_algo
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import Transition


def make_spec(num_agents: int, continuous: bool, obs_dim: int = 6,
              action_sizes: tuple[int, ...] | None = None, act_dim: int = 2) -> EnvSpec:
    """A synthetic spec; discrete agents have 5 actions unless ``action_sizes`` is given."""
    sizes = action_sizes or (5,) * num_agents
    return EnvSpec(name="synthetic", num_agents=num_agents, obs_dim=obs_dim,
                   obs_sizes=(obs_dim,) * num_agents, teams=("agent",) * num_agents,
                   continuous=continuous, num_actions=max(sizes), action_sizes=sizes,
                   act_dim=act_dim, episode_length=25)


def random_batch(key: jax.Array, spec: EnvSpec, action_dim: int, batch: int,
                 lead: tuple[int, ...] = ()) -> Transition:
    """Random transitions with leaves ``[*lead, batch, N, ...]``."""
    k_obs, k_act, k_rew, k_next, k_done = jax.random.split(key, 5)
    n = spec.num_agents
    shape = (*lead, batch, n)
    return Transition(
        obs=jax.random.normal(k_obs, (*shape, spec.obs_dim)),
        action=jax.random.uniform(k_act, (*shape, action_dim)),
        reward=jax.random.normal(k_rew, shape),
        next_obs=jax.random.normal(k_next, (*shape, spec.obs_dim)),
        done=(jax.random.uniform(k_done, shape) < 0.3).astype(jnp.float32),
    )


BATCH = 32
SMALL = ActorCriticConfig(hidden_sizes=(32, 32))
SMALL_AUTO_ALPHA = ActorCriticConfig(hidden_sizes=(32, 32), auto_alpha=True)


class Compiled(NamedTuple):
    """An algorithm with jitted functions; ``update`` may be traced only once. ``phases``:
    the steps its update is composed of (its record's hook, ``algo_phases``)."""

    algo: Algo
    init: Callable
    act: Callable
    update: Callable
    phases: Any = None


def batched_act(algo: Algo) -> Callable:
    """``(state, obs [..., N, obs_dim], key, explore) -> (env_action, action_vec)``: the
    learner's policy of one env (``algo.policy(explore)``, its carry ``()``, no available
    actions) over every leading env axis of ``obs``, one key per env split from ``key``."""

    def act(state, obs, key, explore):
        lead, flat = obs.shape[:-2], obs.reshape((-1, *obs.shape[-2:]))
        keys = jax.random.split(key, flat.shape[0])
        env_action, vec, _ = jax.vmap(algo.policy(explore), in_axes=(None, None, 0, 0, None))(
            state, (), keys, flat, None)
        return env_action.reshape(lead + env_action.shape[1:]), vec.reshape(lead + vec.shape[1:])

    return act


@functools.cache
def compiled(name: str, spec: EnvSpec, config: ActorCriticConfig = SMALL) -> Compiled:
    """Jitted functions of one (name, spec, config), cached so tests share compilations."""
    algo = make_algo(name, spec, config)
    return Compiled(
        algo=algo,
        init=jax.jit(algo.init),
        act=jax.jit(batched_act(algo), static_argnums=3),
        update=jax.jit(algo.update),
    )


# (name, N, continuous): every (N, action kind) pair once, every algorithm with both kinds.
CASES = [("maddpg", 1, False), ("maddpg", 6, True), ("matd3", 3, False),
         ("matd3", 1, True), ("masac", 6, False), ("masac", 3, True)]


def spec_for(n: int, continuous: bool) -> EnvSpec:
    """The spec of the shape tests: discrete agents alternate 5 and 3 valid actions."""
    sizes = tuple(5 if i % 2 == 0 else 3 for i in range(n))
    return make_spec(n, continuous, action_sizes=None if continuous else sizes)


def config_for(name: str, continuous: bool) -> ActorCriticConfig:
    """Continuous MASAC tunes its entropy coefficient, everything else uses ``SMALL``."""
    return SMALL_AUTO_ALPHA if name == "masac" and continuous else SMALL


def assert_trees_close(a, b, rtol: float = 2e-5, atol: float = 2e-6) -> None:
    """Leafwise ``assert_allclose`` of two pytrees of the same structure."""
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


def mlp_numpy(params, x: np.ndarray) -> np.ndarray:
    """Numpy forward pass of a flax ``MLP`` (Dense_0..Dense_k, ReLU between)."""
    layers = params["params"]
    for i in range(len(layers)):
        dense = layers[f"Dense_{i}"]
        x = x @ np.asarray(dense["kernel"]) + np.asarray(dense["bias"])
        if i < len(layers) - 1:
            x = np.maximum(x, 0.0)
    return x


def agent_slice(tree, i: int):
    """Leaf ``[i]`` of every leaf of ``tree``, as numpy."""
    return jax.tree.map(lambda x: np.asarray(x)[i], tree)
