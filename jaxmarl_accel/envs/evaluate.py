"""Mean episode return of a policy, over many episodes run side by side.

The normalized score of a learned policy is ``NS = (R - R_random) / (R_scripted - R_random)``
with every ``R`` measured by :func:`evaluate_policy` in the same scenario.

A policy is a pure function ``policy_fn(key, obs [N, obs_dim], state, params) -> actions`` of
one environment (:mod:`jaxmarl_accel.envs.policies` has the scripted, random and learned
ones). Returns are per agent, summed over the first episode from a reset: its rewards stop
counting after the step that terminates or truncates it, and at most ``num_steps`` (default
``params.episode_length``) steps are run. The env's ``spec.episode_stats`` counters
(``info[name]``) are summed over the same steps. Episodes run side by side in batches of
:func:`episodes_per_batch`, which bounds memory for many agents (pairwise arrays are ``N^2``
per step).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxmarl_accel.envs.base import Env
from jaxmarl_accel.envs.policies import PolicyFn, with_memory

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
    memory: Any = ()  # the policy's carry (a recurrent learner's), () for plain policies


class _StepOut(NamedTuple):
    reward: jax.Array  # [N], zero after the first episode
    stats: dict[str, jax.Array]  # {name: []}, zero after the first episode


def evaluate_policy(
    env: Env,
    params: Any,
    policy_fn: PolicyFn,
    key: jax.Array,
    num_episodes: int,
    num_steps: int | None = None,
    batch_size: int | None = None,
    initial_carry: Callable[[], Any] | None = None,
) -> EvalResult:
    """Runs ``num_episodes`` episodes (vmapped, in batches) of ``num_steps`` steps (scanned).

    Args:
      env: the environment.
      params: its params pytree; episodes end after ``params.episode_length`` steps.
      policy_fn: ``(key, obs, state, params) -> actions`` for one environment.
      key: PRNG key.
      num_episodes: number of episodes (static).
      num_steps: steps run from each reset (static), at most: rewards after the first
        episode ends do not count. Default ``params.episode_length`` (one episode), which
        must then be concrete (``params`` not traced).
      batch_size: episodes vmapped at once (static); batches run one after the other and
        give the same episodes. Default :func:`episodes_per_batch`.
      initial_carry: for a policy with memory (a recurrent learner's, e.g.
        :func:`~jaxmarl_accel.envs.policies.learner_step_policy`): ``() -> carry`` at an
        episode's start; ``policy_fn`` is then ``(key, obs, state, params, carry) ->
        (actions, carry)``.

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

    policy_fn, initial_carry = with_memory(policy_fn, initial_carry)

    def one_step(carry: _Carry, _) -> tuple[_Carry, _StepOut]:
        key, key_act, key_step = jax.random.split(carry.key, 3)
        actions, memory = policy_fn(key_act, carry.obs, carry.state, params, carry.memory)
        obs, state, reward, terminated, truncated, info = env.step(
            key_step, carry.state, actions, params)
        live = ~carry.ended
        out = _StepOut(jnp.where(live, reward, 0.0),
                       {name: jnp.where(live, info[name], 0) for name in env.spec.episode_stats})
        return _Carry(obs, state, key, carry.ended | terminated | truncated, memory), out

    def one_episode(key: jax.Array) -> _StepOut:
        key_reset, key_run = jax.random.split(key)
        obs, state = env.reset(key_reset, params)
        start = _Carry(obs, state, key_run, jnp.zeros((), bool), initial_carry())
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
