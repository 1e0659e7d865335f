"""Mean episode return of a policy, over many episodes run side by side.

The normalized score of a learned policy is ``NS = (R - R_random) / (R_scripted - R_random)``
with every ``R`` measured by :func:`evaluate_policy` in the same scenario.

A policy has the one signature ``(algo_state, carry, key, obs, avail) -> (env_action,
action_vec, carry)`` of one environment, run in it: its ``obs`` is an
:class:`~.policies.EnvObs` (:mod:`jaxmarl_accel.envs.policies` has the scripted and random
ones, :func:`jaxmarl_accel.trainer.policy.learner_policy` a learner's). Returns are per
agent, summed over the first episode from a reset: its rewards stop counting after the step
that terminates or truncates it, and at most ``num_steps`` (default
``params.episode_length``) steps are run. The env's ``spec.episode_stats`` counters
(``info[name]``) are summed over the same steps. Episodes run side by side in batches of
:func:`episodes_per_batch`, which bounds memory for many agents (pairwise arrays are ``N^2``
per step).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxmarl_accel.envs.base import Env
from jaxmarl_accel.envs.policies import EnvObs, available_actions
from jaxmarl_accel.types import Policy, PyTree

MAX_BATCH_PAIRS = 2**26  # agent pairs (N^2 per episode) of the episodes run side by side


def episodes_per_batch(num_agents: int, num_episodes: int) -> int:
    """Episodes run side by side: all of them when their ``N^2`` agent pairs together stay
    within :data:`MAX_BATCH_PAIRS`, else equal batches that do (67 episodes at ``N =
    1000``: about 2 GiB in simple_spread, which holds some 32 bytes per pair and episode)."""
    most = max(1, MAX_BATCH_PAIRS // num_agents**2)
    num_batches = -(-num_episodes // most)
    return -(-num_episodes // num_batches)


class EvalResult(NamedTuple):
    """Returns of a policy.

    Attributes:
      mean_return: ``[]`` mean over agents and episodes of the per-agent episode return.
      agent_returns: ``[N]`` mean episode return of each agent.
      episode_returns: ``[num_episodes, N]`` episode return of each agent in each episode.
      stats: ``{name: [num_episodes]}`` each of ``spec.episode_stats`` summed over each
        episode (empty when the env reports none).
    """

    mean_return: jax.Array
    agent_returns: jax.Array
    episode_returns: jax.Array
    stats: dict[str, jax.Array]


class _Carry(NamedTuple):
    obs: jax.Array
    state: Any
    key: jax.Array
    ended: jax.Array  # [] bool: the first episode has terminated or been truncated
    memory: Any = ()  # the policy's carry, () for a policy without memory


class _StepOut(NamedTuple):
    reward: jax.Array  # [N], zero after the first episode
    stats: dict[str, jax.Array]  # {name: []}, zero after the first episode


def evaluate_policy(
    env: Env,
    params: Any,
    policy: Policy,
    key: jax.Array,
    num_episodes: int,
    num_steps: int | None = None,
    batch_size: int | None = None,
    *,
    algo_state: PyTree = (),
    carry: PyTree = (),
) -> EvalResult:
    """Runs ``num_episodes`` episodes (vmapped, in batches) of ``num_steps`` steps (scanned).

    Args:
      env: the environment.
      params: its params pytree; episodes end after ``params.episode_length`` steps.
      policy: ``(algo_state, carry, key, obs: EnvObs, avail [N, A] bool) -> (env_action,
        action_vec, carry)`` for one environment (``avail``: :func:`~.available_actions`).
      key: PRNG key.
      num_episodes: number of episodes (static).
      num_steps: steps run from each reset (static), at most: rewards after the first
        episode ends do not count. Default ``params.episode_length`` (one episode), which
        must then be concrete (``params`` not traced).
      batch_size: episodes vmapped at once (static); batches run one after the other and
        give the same episodes. Default :func:`episodes_per_batch`.
      algo_state: what the policy acts with, e.g. a learner's state (``()`` for the env's
        policies).
      carry: the policy's carry at each episode's start (e.g. ``algo.initial_carry()``),
        ``()`` for a policy without memory.

    Returns:
      :class:`EvalResult`.
    """
    if num_episodes < 1:
        raise ValueError(f"num_episodes must be >= 1, got {num_episodes}")
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if num_steps is None:
        try:
            num_steps = int(params.episode_length)
        except jax.errors.ConcretizationTypeError as err:
            raise ValueError("params.episode_length is traced: pass num_steps") from err

    def one_step(run: _Carry, _) -> tuple[_Carry, _StepOut]:
        key, key_act, key_step = jax.random.split(run.key, 3)
        actions, _, memory = policy(algo_state, run.memory, key_act,
                                    EnvObs(run.obs, run.state, params),
                                    available_actions(env, run.state, params))
        obs, state, reward, terminated, truncated, info = env.step(
            key_step, run.state, actions, params)
        live = ~run.ended
        out = _StepOut(jnp.where(live, reward, 0.0),
                       {name: jnp.where(live, info[name], 0) for name in env.spec.episode_stats})
        return _Carry(obs, state, key, run.ended | terminated | truncated, memory), out

    def one_episode(key: jax.Array) -> _StepOut:
        key_reset, key_run = jax.random.split(key)
        obs, state = env.reset(key_reset, params)
        start = _Carry(obs, state, key_run, jnp.zeros((), bool), carry)
        _, steps = jax.lax.scan(one_step, start, None, length=num_steps)
        return jax.tree.map(lambda x: jnp.sum(x, axis=0), steps)

    keys = jax.random.split(key, num_episodes)
    if batch_size is None:
        batch_size = episodes_per_batch(env.spec.num_agents, num_episodes)
    if batch_size >= num_episodes:
        totals = jax.jit(jax.vmap(one_episode))(keys)
    else:
        num_batches = -(-num_episodes // batch_size)
        padded = jnp.concatenate([keys, keys[: num_batches * batch_size - num_episodes]])
        batched = jax.jit(lambda k: jax.lax.map(jax.vmap(one_episode), k))(
            padded.reshape((num_batches, batch_size) + keys.shape[1:]))
        totals = jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:])[:num_episodes], batched)
    agent_returns = jnp.mean(totals.reward, axis=0)
    return EvalResult(jnp.mean(agent_returns), agent_returns, totals.reward, totals.stats)
