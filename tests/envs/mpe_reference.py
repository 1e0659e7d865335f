"""Step-for-step comparison of our scenarios with jaxmarl 0.2.0 and mpe2 (PettingZoo).

Our rollouts (:func:`our_rollouts`) record the state before each step and the joint action;
the references (:func:`compare_jaxmarl`, :func:`compare_mpe2`) get that state injected and
take that action, and every step's observation (``info["final_obs"]``, the state the step
reached) and reward are compared (:class:`Comparison`). Every reference step starts from
our state before that step, so float32 round-off does not accumulate: left to run freely,
contacts amplify the last-bit differences of summation order (about 1e-7) to a few 1e-5
within 25 steps in contact-heavy episodes.

Scenario hooks: ``inject(ref_state, our_state)`` (jaxmarl) or ``inject(world, our_state)``
(mpe2) copy what positions and velocities do not carry (e.g. the goal); ``ref_actions``
turns our joint action into jaxmarl's action dict when the encodings differ.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.envs.rollout import Rollout, rollout
from jaxmarl_accel.types import Policy
from tests.envs.rollouts import STEPS


class Comparison(NamedTuple):
    """Our rollouts beside the reference's outputs of the same steps (numpy, axes ``[S, T]``).

    Attributes:
      ours: our :class:`Rollout`, leaves ``[S, T, ...]``.
      ref_obs: agent name (in our agent order) -> ``[S, T, width]`` reference observation.
      ref_rewards: agent name -> ``[S, T]`` reference reward.
    """

    ours: Rollout
    ref_obs: dict[str, np.ndarray]
    ref_rewards: dict[str, np.ndarray]

    def pairs(self):
        """Per agent: (our observation, its zero padding, reference observation, our
        reward, reference reward); the reference's width splits observation from padding."""
        for i, name in enumerate(self.ref_obs):
            width = self.ref_obs[name].shape[-1]
            obs = self.ours.final_obs[..., i, :]
            yield (obs[..., :width], obs[..., width:], self.ref_obs[name],
                   self.ours.rewards[..., i], self.ref_rewards[name])

    def max_diff(self) -> float:
        """Largest |difference| of observations and rewards; nonzero padding counts too."""
        worst = 0.0
        for obs, padding, ref_obs, reward, ref_reward in self.pairs():
            worst = max(worst, float(np.abs(ref_obs - obs).max()),
                        float(np.abs(padding).max(initial=0.0)),
                        float(np.abs(ref_reward - reward).max()))
        return worst

    def assert_close(self, atol: float) -> None:
        """Every agent's observation and reward within ``atol``, its padding exactly zero."""
        for obs, padding, ref_obs, reward, ref_reward in self.pairs():
            np.testing.assert_allclose(obs, ref_obs, atol=atol)
            np.testing.assert_array_equal(padding, 0.0)
            np.testing.assert_allclose(reward, ref_reward, atol=atol)

    def seeds(self, rows: Any) -> Comparison:
        """The comparison of the seeds ``rows`` (an index or mask of the ``S`` axis)."""
        return jax.tree.map(lambda x: x[rows], self)


def seed_keys(seeds: Sequence[int]) -> jax.Array:
    """``PRNGKey(seed)`` of each seed, ``[S]``."""
    return jax.vmap(jax.random.PRNGKey)(jnp.asarray(seeds))


def our_rollouts(env, params, keys: jax.Array, policy: Policy,
                 num_steps: int = STEPS) -> Rollout:
    """One rollout of our env per key, all in one compiled call (numpy, axes ``[S, T]``)."""
    run = jax.jit(jax.vmap(lambda key: rollout(env, params, policy, key, num_steps)))
    return jax.tree.map(np.asarray, run(keys))


def _merge_seed_and_time(x: np.ndarray) -> np.ndarray:
    """``[S, T, ...] -> [S * T, ...]``."""
    return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])


def _split_seed_and_time(ours: Rollout, x: np.ndarray) -> np.ndarray:
    """``[S * T, ...] -> [S, T, ...]`` with the ``[S, T]`` of ``ours``."""
    return np.asarray(x).reshape(ours.rewards.shape[:2] + np.shape(x)[1:])


def compare_jaxmarl(ref, ours: Rollout, inject: Callable | None = None,
                    ref_actions: Callable | None = None) -> Comparison:
    """Steps a jaxmarl ``SimpleMPE`` from each of our states (all seeds and steps in one call).

    Args:
      ref: the jaxmarl env.
      ours: our rollouts, axes ``[S, T]`` (:func:`our_rollouts`).
      inject: ``(ref_state, our_state) -> ref_state`` for what else the scenario reads
        (positions, velocities and the step count are always copied).
      ref_actions: ``our joint action -> {name: action}``; default row ``i`` to agent ``i``.
    """
    flat = jax.tree.map(_merge_seed_and_time, ours)
    _, template = ref.reset(jax.random.PRNGKey(0))

    def ref_step(state, act):
        ref_state = template.replace(p_pos=state.pos, p_vel=state.vel, step=state.step)
        if inject is not None:
            ref_state = inject(ref_state, state)
        if ref_actions is None:
            act_dict = {name: act[i] for i, name in enumerate(ref.agents)}
        else:
            act_dict = ref_actions(act)
        obs, _, rew, _, _ = ref.step_env(jax.random.PRNGKey(0), ref_state, act_dict)
        return obs, rew

    ref_obs, ref_rew = jax.jit(jax.vmap(ref_step))(flat.states, flat.actions)
    split = lambda d: {name: _split_seed_and_time(ours, d[name]) for name in ref.agents}
    return Comparison(ours, split(ref_obs), split(ref_rew))


def compare_mpe2(ref, ours: Rollout, inject: Callable | None = None) -> Comparison:
    """Steps an mpe2 ``parallel_env`` from each of our states.

    mpe2 is reset at the start of each seed's rollout (its episode must last at least ``T``
    steps) and its world state overwritten before every step.

    Args:
      ref: the mpe2 env.
      ours: our rollouts, axes ``[S, T]`` (:func:`our_rollouts`).
      inject: ``(world, our_state) -> None`` sets what else the scenario reads (e.g. goals).
    """
    flat = jax.tree.map(_merge_seed_and_time, ours)
    num_steps = ours.rewards.shape[1]
    world = ref.unwrapped.world
    names = list(ref.possible_agents)
    ref_obs = {name: [] for name in names}
    ref_rew = {name: [] for name in names}
    for t in range(flat.actions.shape[0]):
        if t % num_steps == 0:
            ref.reset(seed=0)
        state = jax.tree.map(lambda x, t=t: x[t], flat.states)
        for i, entity in enumerate(world.entities):
            entity.state.p_pos = state.pos[i].astype(np.float64)
            entity.state.p_vel = state.vel[i].astype(np.float64)
        if inject is not None:
            inject(world, state)
        act = flat.actions[t]
        obs, rew, _, _, _ = ref.step({name: act[i] for i, name in enumerate(names)})
        for name in names:
            ref_obs[name].append(obs[name])
            ref_rew[name].append(rew[name])
    split = lambda d: {name: _split_seed_and_time(ours, np.stack(d[name])) for name in names}
    return Comparison(ours, split(ref_obs), split(ref_rew))
