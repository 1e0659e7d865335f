"""Small specs, configs and random episode batches shared by the value-learner tests."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.algos.value import ValueConfig
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import Episode
from tests.algos.helpers import make_spec

SMALL = ValueConfig(hidden=16, mixer_embed=8, hypernet_hidden=16)
SMALL_MLP = dataclasses.replace(SMALL, agent="mlp")
OBS, STATE, T = 5, 7, 6


def value_spec(n: int = 3, actions: int = 4, state_dim: int = STATE,
               shared_reward: bool = True) -> EnvSpec:
    """A discrete synthetic spec with a global state of width ``state_dim``."""
    return dataclasses.replace(make_spec(n, False, obs_dim=OBS, action_sizes=(actions,) * n),
                               state_dim=state_dim, shared_reward=shared_reward)


def random_episodes(key: jax.Array, spec: EnvSpec, lengths: tuple[int, ...],
                    terminated: tuple[bool, ...], rows: int = T + 1) -> Episode:
    """Episodes with leaves ``[B, rows, ...]``: episode b takes ``lengths[b]`` steps and
    terminates at its last one if ``terminated[b]``; random observations and states; random
    available actions (at least one per agent up to the bootstrap row ``lengths[b]``, none
    after it), the actions taken among them; actions and rewards zero after the end."""
    bsz, n, a = len(lengths), spec.num_agents, spec.num_actions
    k_obs, k_state, k_avail, k_act, k_rew = jax.random.split(key, 5)
    t = np.arange(rows)[None]
    lens = np.asarray(lengths)[:, None]
    filled = (t < lens).astype(np.float32)
    term = ((t == lens - 1) & np.asarray(terminated)[:, None]).astype(np.float32)
    avail = np.array(jax.random.uniform(k_avail, (bsz, rows, n, a)) < 0.6)
    avail[..., 0] |= ~avail.any(-1)
    avail &= (t <= lens)[..., None, None]  # rows after the bootstrap row: padding
    logits = jnp.where(avail, 0.0, -jnp.inf)
    action = np.asarray(jax.random.categorical(k_act, logits)) * filled[..., None]
    return Episode(
        obs=jax.random.normal(k_obs, (bsz, rows, n, spec.obs_dim)),
        state=jax.random.normal(k_state, (bsz, rows, spec.state_dim)),
        avail=jnp.asarray(avail), action=jnp.asarray(action, jnp.int32),
        reward=jax.random.normal(k_rew, (bsz, rows)) * filled,
        terminated=jnp.asarray(term), filled=jnp.asarray(filled))


def train_on_one_batch(algo, batch, updates: int, metric: str):
    """``updates`` jitted updates of ``algo`` (traced once) on one fixed batch of 2 rows
    with unit weights; returns the final state, metrics and priorities ``[2]``, and the
    metric ``metric`` after every update (a list of floats)."""
    import chex

    chex.clear_trace_counter()
    update = jax.jit(chex.assert_max_traces(algo.update, n=1))
    state, values = algo.init(jax.random.key(0)), []
    for i in range(updates):
        state, metrics, td = update(state, batch, jnp.ones(2), jax.random.key(i))
        values.append(float(metrics[metric]))
    return state, metrics, td, values
