"""Step-for-step comparison of our scenarios with jaxmarl 0.2.0 and mpe2 (PettingZoo).

Both references get our initial state injected and the same joint actions; every step's
observation (``info["final_obs"]``, the state the step reached) and reward are compared.
Every reference step starts from our state before that step, so float32 round-off does
not accumulate: left to run freely, contacts amplify the last-bit differences of summation
order (about 1e-7) to a few 1e-5 within 25 steps in contact-heavy episodes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

ActionFn = Callable[[jax.Array, object], jax.Array]


class _Rollout(NamedTuple):
    states: object  # MPEState with a leading [T] axis: the state before each step
    actions: jax.Array  # [T, N] or [T, N, 5]
    final_obs: jax.Array  # [T, N, obs_dim] observation of the state each step reached
    rewards: jax.Array  # [T, N]


def _merge_seed_and_time(x: np.ndarray) -> np.ndarray:
    """``[S, T, ...] -> [S * T, ...]``."""
    return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])


def _our_rollout(env, params, seeds, num_steps: int, action_fn: ActionFn) -> _Rollout:
    """One episode of our env per seed, all in one compiled call (leading axes ``[S, T]``)."""

    def body(state, key):
        key_act, key_step = jax.random.split(key)
        act = action_fn(key_act, state)
        _, next_state, reward, _, _, info = env.step(key_step, state, act, params)
        return next_state, _Rollout(state, act, info["final_obs"], reward)

    def run(key):
        key_reset, key_steps = jax.random.split(key)
        _, state = env.reset(key_reset, params)
        return jax.lax.scan(body, state, jax.random.split(key_steps, num_steps))[1]

    keys = jax.vmap(jax.random.PRNGKey)(jnp.asarray(seeds))
    return jax.tree.map(np.asarray, jax.jit(jax.vmap(run))(keys))


def max_diff_jaxmarl(env, params, ref, seeds, action_fn: ActionFn, num_steps: int = 25):
    """Largest |difference| of observations and rewards against a jaxmarl ``SimpleMPE``.

    Every step of the reference starts from our state (all seeds and steps in one call).
    """
    out = _our_rollout(env, params, seeds, num_steps, action_fn)
    out = jax.tree.map(_merge_seed_and_time, out)
    _, ref_state = ref.reset(jax.random.PRNGKey(0))

    def ref_step(pos, vel, step, act):
        state = ref_state.replace(p_pos=pos, p_vel=vel, step=step)
        act_dict = {name: act[i] for i, name in enumerate(ref.agents)}
        obs, _, rew, _, _ = ref.step_env(jax.random.PRNGKey(0), state, act_dict)
        return obs, rew

    ref_obs, ref_rew = jax.jit(jax.vmap(ref_step))(
        out.states.pos, out.states.vel, out.states.step, out.actions)
    worst = 0.0
    for i, name in enumerate(ref.agents):
        width = ref_obs[name].shape[-1]
        worst = max(worst, float(np.abs(ref_obs[name] - out.final_obs[:, i, :width]).max()),
                    float(np.abs(ref_rew[name] - out.rewards[:, i]).max()))
    return worst


def max_diff_mpe2(env, params, ref, seeds, action_fn: ActionFn, num_steps: int = 25):
    """Largest |difference| against an mpe2 ``parallel_env``; also the total |reward|.

    Our padding beyond each agent's true observation size must be zero; it counts as a
    difference otherwise. mpe2 is reset once and its world state overwritten every step.
    """
    out = _our_rollout(env, params, seeds, num_steps, action_fn)
    out = jax.tree.map(_merge_seed_and_time, out)
    world = ref.unwrapped.world
    names = list(ref.possible_agents)
    worst, total_reward = 0.0, 0.0
    for t in range(out.actions.shape[0]):
        if t % num_steps == 0:
            ref.reset(seed=0)
        act, obs, reward = out.actions[t], out.final_obs[t], out.rewards[t]
        for i, entity in enumerate(world.entities):
            entity.state.p_pos = out.states.pos[t, i].astype(np.float64)
            entity.state.p_vel = out.states.vel[t, i].astype(np.float64)
        ref_obs, ref_rew, _, _, _ = ref.step({name: act[i] for i, name in enumerate(names)})
        for i, name in enumerate(names):
            width = ref_obs[name].shape[0]
            worst = max(worst, float(np.abs(ref_obs[name] - obs[i, :width]).max()),
                        float(np.abs(obs[i, width:]).max(initial=0.0)),
                        abs(ref_rew[name] - float(reward[i])))
        total_reward += float(np.abs(reward).sum())
    return worst, total_reward
