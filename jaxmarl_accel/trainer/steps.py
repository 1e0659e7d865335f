"""The steps the replay rounds are made of, each written once.

* :func:`transition_step`: E environments take one step under a joint policy, and the step
  becomes a batch of :class:`~jaxmarl_accel.types.Transition` for the replay;
* :func:`collect_episodes`: E environments each run one whole episode under a learner's
  policy (its carry kept per env), recorded as :class:`~jaxmarl_accel.types.Episode` rows
  for an episode replay;
* :func:`learn_step`: sample a mini-batch, update the learner on it, and send its TD errors
  back to the buffer as priorities.

The transition and episode rounds (:mod:`jaxmarl_accel.trainer.rounds`), the workload
characterization (``experiments.characterize``) and ``examples/custom_loop.py`` all call
these, so what is timed is what is trained; the on-policy rollout round, which keeps no
replay, steps and learns in :mod:`~jaxmarl_accel.trainer.rounds.rollout`. Shapes: E
environments, N agents, B batch, T episode length.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxmarl_accel.envs.base import Env
from jaxmarl_accel.envs.policies import EnvObs, available_actions
from jaxmarl_accel.types import Episode, Policy, PyTree, Transition


class EnvStep(NamedTuple):
    """One vectorized env step.

    Attributes:
      transition: what the replay stores, leaves ``[E, N, ...]``: ``obs`` before the step,
        the action vectors, rewards, the true next observation (``info["final_obs"]``,
        before any auto-reset) and ``done`` (1.0 where the episode terminated; truncation
        is not termination).
      env_state: env states after the step (auto-reset where an episode ended), ``[E]``.
      obs: observations after the step, ``[E, N, obs_dim]``.
      ended: bool ``[E]``, the episode ended (terminated or truncated) at this step.
      stats: name -> ``[E]`` the step's counter of each of the env's ``spec.episode_stats``.
    """

    transition: Transition
    env_state: PyTree
    obs: jax.Array
    ended: jax.Array
    stats: dict[str, jax.Array] = {}


class LearnStep(NamedTuple):
    """One learner update from the replay.

    Attributes:
      algo: the updated learner state.
      buffer: the buffer state with the batch's new priorities.
      metrics: the learner's metrics (name -> scalar).
    """

    algo: PyTree
    buffer: PyTree
    metrics: dict[str, jax.Array]


def transition_step(
    env: Env, env_params: PyTree, policy: Policy, algo_state: PyTree,
    env_state: PyTree, obs: jax.Array, act_key: jax.Array, step_key: jax.Array,
    physical_state: bool = False,
) -> EnvStep:
    """Step E envs once under ``policy`` and package the step as transitions.

    Args:
      env: the environment (stepped with ``vmap`` over the E envs).
      env_params: its params pytree (shared by the envs).
      policy: a joint policy of one env without memory, run in it: ``(algo_state, (), key,
        obs: EnvObs, avail [N, A] bool) -> (env_action, action_vec [N, A], ())`` (e.g.
        :func:`~jaxmarl_accel.trainer.policy.learner_policy`).
      algo_state: the learner state the policy acts with.
      env_state: env states ``[E]``.
      obs: current observations ``[E, N, obs_dim]``.
      act_key: split into one key per env for the policy.
      step_key: split into one key per env for ``env.step``.
      physical_state: the transitions' ``obs`` and ``next_obs`` hold the envs' packed
        physical states ``[E, N, F]`` (``env.physical_state`` of the states before the step,
        ``info["final_physical_state"]``) instead of the observations, for a replay that
        recomputes the observations when it samples.

    Returns:
      :class:`EnvStep`.
    """
    num_envs = obs.shape[0]
    stored_obs = jax.vmap(env.physical_state)(env_state) if physical_state else obs

    def act(key: jax.Array, obs: jax.Array, env_state: PyTree) -> tuple[jax.Array, jax.Array]:
        env_action, action_vec, _ = policy(algo_state, (), key,
                                           EnvObs(obs, env_state, env_params),
                                           available_actions(env, env_state, env_params))
        return env_action, action_vec

    env_action, action_vec = jax.vmap(act)(jax.random.split(act_key, num_envs), obs,
                                           env_state)
    next_obs, env_state, reward, terminated, truncated, info = jax.vmap(
        env.step, in_axes=(0, 0, 0, None))(
        jax.random.split(step_key, num_envs), env_state, env_action, env_params)
    done = jnp.broadcast_to(terminated[:, None], reward.shape).astype(jnp.float32)
    final = info["final_physical_state"] if physical_state else info["final_obs"]
    transition = Transition(obs=stored_obs, action=action_vec, reward=reward, next_obs=final,
                            done=done)
    return EnvStep(transition, env_state, next_obs, terminated | truncated,
                   {name: info[name] for name in env.spec.episode_stats})


def learn_step(
    algo: Any, buffer: Any, algo_state: PyTree, buffer_state: PyTree,
    sample_key: jax.Array, update_key: jax.Array,
) -> LearnStep:
    """Sample -> update -> priorities: one learner update from the replay.

    Args:
      algo: the learner (:class:`~jaxmarl_accel.algos.Algo`).
      buffer: the replay buffer (:class:`~jaxmarl_accel.buffers.Buffer`).
      algo_state: learner state.
      buffer_state: buffer state holding at least one batch.
      sample_key: drives the sampler.
      update_key: drives the learner's update (next-action and policy sampling).

    Returns:
      :class:`LearnStep`; the batch's TD errors (``[B, N]``, or ``[N, B]`` with per-agent
      batches) become its slots' priorities (identity for samplers without priorities).
    """
    batch = buffer.sample(buffer_state, sample_key)
    algo_state, metrics, td_errors = algo.update(algo_state, batch.experience, batch.weights,
                                                 update_key)
    buffer_state = buffer.update_priorities(buffer_state, batch.indices, td_errors)
    return LearnStep(algo_state, buffer_state, metrics)


def example_transition(spec: Any, action_dim: int, physical_state: bool = False) -> Transition:
    """A zero transition of one joint step (leaves ``[N, ...]``), the shape a buffer stores;
    with ``physical_state`` its ``obs`` and ``next_obs`` are packed physical states
    ``[N, spec.physical_state_dim]`` (see :func:`transition_step`)."""
    width = spec.physical_state_dim if physical_state else spec.obs_dim
    obs = jnp.zeros((spec.num_agents, width), jnp.float32)
    return Transition(obs=obs, action=jnp.zeros((spec.num_agents, action_dim), jnp.float32),
                      reward=jnp.zeros(spec.num_agents, jnp.float32), next_obs=obs,
                      done=jnp.zeros(spec.num_agents, jnp.float32))


class EpisodeBatch(NamedTuple):
    """E whole episodes run side by side (one per env, from a reset).

    Attributes:
      episodes: what an episode replay stores, :class:`~jaxmarl_accel.types.Episode` with
        leaves ``[E, T + 1, ...]`` (T = ``env.spec.episode_length``).
      returns: ``[E, N]`` undiscounted per-agent return of each episode.
      stats: ``spec.episode_stats`` name -> ``[E]`` sum over each episode (e.g. captures).
      lengths: ``[E]`` int32 steps each episode took.
    """

    episodes: Any
    returns: jax.Array
    stats: dict[str, jax.Array]
    lengths: jax.Array


def env_views(env: Env, env_state: PyTree, obs: jax.Array, params: PyTree
              ) -> tuple[jax.Array, jax.Array]:
    """``(global state [S], available actions [N, A] bool)`` of one env state: the env's own
    (``env.state_of``, ``env.avail_actions``) or, when it has none, the concatenated
    observations and every valid action (``spec.action_mask``)."""
    state = (obs.reshape(-1) if env.state_of is None else env.state_of(env_state, params))
    return state, available_actions(env, env_state, params)


def info_views(env: Env, info: dict, obs: jax.Array, prefix: str
               ) -> tuple[jax.Array, jax.Array]:
    """:func:`env_views` of E stepped envs as their ``info`` reports them (``prefix``
    ``"final_"``: of the pre-reset states), without evaluating the env's functions again:
    ``(state [E, S], avail [E, N, A] bool)`` from ``info["<prefix>state"]`` and
    ``info["<prefix>avail_actions"]``, or the concatenated observations ``obs [E, N, D]``
    and every valid action when the env has none."""
    state = (obs.reshape(obs.shape[0], -1) if env.state_of is None
             else info[f"{prefix}state"])
    avail = (jnp.broadcast_to(env.spec.action_mask, (*obs.shape[:2], env.spec.num_actions))
             if env.avail_actions is None else info[f"{prefix}avail_actions"])
    return state, avail


def team_reward(spec: Any, reward: jax.Array) -> jax.Array:
    """The team reward of per-agent rewards ``[..., N]``: the broadcast value when the env
    shares one reward (``spec.shared_reward``), their sum otherwise. Shape ``[...]``."""
    return reward[..., 0] if spec.shared_reward else jnp.sum(reward, axis=-1)


def example_episode(spec: Any) -> Any:
    """A zero :class:`~jaxmarl_accel.types.Episode` (leaves ``[T + 1, ...]``), the shape and
    dtypes an episode replay stores: observations and state as ``uint8`` when the env's are
    binary (``spec.binary_observations``), float32 otherwise."""
    rows, n = spec.episode_length + 1, spec.num_agents
    stored = jnp.uint8 if spec.binary_observations else jnp.float32
    state_dim = spec.state_dim or n * spec.obs_dim
    zeros = lambda *shape, dtype=jnp.float32: jnp.zeros((rows, *shape), dtype)
    return Episode(obs=zeros(n, spec.obs_dim, dtype=stored), state=zeros(state_dim, dtype=stored),
                   avail=zeros(n, spec.num_actions, dtype=jnp.bool_),
                   action=zeros(n, dtype=jnp.int32), reward=zeros(), terminated=zeros(),
                   filled=zeros())


COLLECT_BLOCK_STEPS = 8
"""Steps per block of :func:`collect_episodes`'s early-stopping loop: episodes that end
early cost at most this many steps more than the longest of them; under a ``vmap`` over
seeds the loop's carry (env states and collected rows) is selected once per block."""


class _Running(NamedTuple):
    """Carry of :func:`collect_episodes` (leaves ``[E, ...]``)."""

    env_state: PyTree
    obs: jax.Array           # the env's current observation (after any auto-reset)
    rec: tuple               # (obs, state, avail) recorded for the row of the next step
    carry: PyTree            # the learner's policy's carry
    alive: jax.Array         # bool [E]: the episode has not ended before this step
    returns: jax.Array
    stats: dict[str, jax.Array]
    key: jax.Array


def collect_episodes(
    env: Env, env_params: PyTree, algo: Any, algo_state: PyTree, key: jax.Array,
    num_envs: int, explore: bool, block_steps: int | None = COLLECT_BLOCK_STEPS,
) -> EpisodeBatch:
    """Run one whole episode in each of E envs under a learner's policy (``algo.policy``).

    Every env starts from a reset; step ``t`` writes row ``t`` of its episode (the
    observation, state and available actions before the step, the action, team reward and
    termination); rows at and after an env's episode end are masked (``filled`` 0) and row
    ``len`` holds the pre-reset observation the episode ended in (for bootstrapping after a
    time-limit truncation; the rows after it repeat it).

    The loop stops after the block of ``block_steps`` steps in which the last of the E
    episodes ended (:func:`_blocks_until_ended`), or after ``T = spec.episode_length``
    steps; ``block_steps=None`` runs all ``T`` steps in one scan. Both give the same rows.

    Args:
      env: the environment; ``params.episode_length`` must not exceed
        ``spec.episode_length`` (the stored rows).
      env_params: its params.
      algo: a learner of discrete actions (``algo.policy(explore)`` of one env: ``(state,
        carry, key, obs, avail) -> (action [N], action_vec, carry)``, its carry starting at
        ``algo.initial_carry()`` in every env).
      algo_state: the learner state it acts with.
      key: PRNG key.
      num_envs: E (static).
      explore: exploration (True) or greedy actions (False), static.
      block_steps: steps per block of the early-stopping loop (static), or ``None`` for
        one scan of ``T`` steps.

    Returns:
      :class:`EpisodeBatch` with leaves ``[E, ...]``.
    """
    spec = env.spec
    act = jax.vmap(algo.policy(explore), in_axes=(None, 0, 0, 0, 0))
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    template = example_episode(spec)

    start = _start_episodes(env, env_params, algo, key, num_envs)
    cast = lambda value, like: value.astype(like.dtype)

    def one_step(run: _Running, _: None) -> tuple[_Running, Any]:
        key, act_key, step_key = jax.random.split(run.key, 3)
        rec_obs, rec_state, rec_avail = run.rec
        action, _, carry = act(algo_state, run.carry, jax.random.split(act_key, num_envs),
                               run.obs, rec_avail)
        obs, env_state, reward, terminated, truncated, info = step(
            jax.random.split(step_key, num_envs), run.env_state, action, env_params)
        alive = run.alive
        live = alive.astype(jnp.float32)
        row = template.replace(
            obs=cast(rec_obs, template.obs), state=cast(rec_state, template.state),
            avail=rec_avail, action=jnp.where(alive[:, None], action, 0).astype(jnp.int32),
            reward=live * team_reward(spec, reward), terminated=live * terminated,
            filled=live)
        # what the next row records: the new observation while the episode runs, the
        # pre-reset one it ended in, then that one frozen
        ended = terminated | truncated
        final_obs = info["final_obs"]
        final_state, final_avail = info_views(env, info, final_obs, "final_")
        next_state, next_avail = info_views(env, info, obs, "")
        pick = lambda running, last, frozen: jnp.where(
            _rows_like(alive & ~ended, running), running,
            jnp.where(_rows_like(alive, running), last, frozen))
        rec = (pick(obs, final_obs, rec_obs), pick(next_state, final_state, rec_state),
               pick(next_avail, final_avail, rec_avail))
        stats = {name: run.stats[name] + live * info[name] for name in spec.episode_stats}
        return _Running(env_state=env_state, obs=obs, rec=rec, carry=carry,
                        alive=alive & ~ended, returns=run.returns + live[:, None] * reward,
                        stats=stats, key=key), row

    if block_steps is None or block_steps >= spec.episode_length:
        end, rows = jax.lax.scan(one_step, start, None, length=spec.episode_length)
    else:
        end, rows = _blocks_until_ended(one_step, start, template, num_envs,
                                        spec.episode_length, block_steps)
    return _close_episodes(end, rows)  # rows [T, E, ...]


def _blocks_until_ended(one_step: Any, start: _Running, template: Any, num_envs: int,
                        steps: int, block: int) -> tuple[_Running, Any]:
    """:func:`collect_episodes`'s loop in blocks of ``block`` steps (a ``lax.scan`` each in a
    ``lax.while_loop``), stopped after the block in which every episode has ended:
    ``(last carry, rows [steps, E, ...])``, the rows after the stop filled as the remaining
    steps would have filled them (the recorded observation, state and available actions
    frozen; action, reward, termination and ``filled`` zero).

    Episodes that end early (a SMAX battle takes 15 to 40 of its 101 steps) then cost the
    steps they take, rounded up to a block. Under a ``vmap`` over seeds the predicate
    differs per seed: the loop runs until every seed's episodes have ended and selects its
    carry (env states and the rows so far, never the replay) once per block, not per step.
    """
    blocks = -(-steps // block)
    buffer = jax.tree.map(
        lambda leaf: jnp.zeros((blocks * block, num_envs, *leaf.shape[1:]), leaf.dtype),
        template)

    def cond(carry: tuple[_Running, Any, jax.Array]) -> jax.Array:
        run, _, done_blocks = carry
        return (done_blocks < blocks) & jnp.any(run.alive)

    def body(carry: tuple[_Running, Any, jax.Array]) -> tuple[_Running, Any, jax.Array]:
        run, rows, done_blocks = carry
        run, new = jax.lax.scan(one_step, run, None, length=block)  # [block, E, ...]
        rows = jax.tree.map(lambda old, fresh: jax.lax.dynamic_update_slice_in_dim(
            old, fresh, done_blocks * block, axis=0), rows, new)
        return run, rows, done_blocks + 1

    end, rows, done_blocks = jax.lax.while_loop(
        cond, body, (start, buffer, jnp.zeros((), jnp.int32)))
    ran = jnp.arange(blocks * block) < done_blocks * block
    rows = jax.tree.map(lambda got, fill: jnp.where(
        ran.reshape((-1,) + (1,) * (got.ndim - 1)), got, fill[None])[:steps], rows,
        _frozen_row(end, rows))
    return end, rows


def _frozen_row(end: _Running, rows: Any) -> Any:
    """The row ``[E, ...]`` of every step after the episodes' ends: the observation, state
    and available actions each episode ended in (``end.rec``), the rest zero, in the dtypes
    of ``rows`` (leaves ``[steps, E, ...]``)."""
    rec_obs, rec_state, rec_avail = end.rec
    return jax.tree.map(lambda leaf: jnp.zeros(leaf.shape[1:], leaf.dtype), rows).replace(
        obs=rec_obs.astype(rows.obs.dtype), state=rec_state.astype(rows.state.dtype),
        avail=rec_avail)


def _start_episodes(env: Env, env_params: PyTree, algo: Any, key: jax.Array,
                    num_envs: int) -> _Running:
    """The loop carry of :func:`collect_episodes` at the start: E envs reset, the learner's
    initial carry broadcast to ``[E, ...]``, every episode alive."""
    spec = env.spec
    key, reset_key = jax.random.split(key)
    obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(reset_key, num_envs), env_params)
    state, avail = jax.vmap(env_views, in_axes=(None, 0, 0, None))(env, env_state, obs,
                                                                    env_params)
    carry = jax.tree.map(lambda leaf: jnp.broadcast_to(leaf, (num_envs, *leaf.shape)),
                         algo.initial_carry())
    return _Running(
        env_state=env_state, obs=obs, rec=(obs, state, avail), carry=carry,
        alive=jnp.ones((num_envs,), bool),
        returns=jnp.zeros((num_envs, spec.num_agents), jnp.float32),
        stats={name: jnp.zeros((num_envs,), jnp.float32) for name in spec.episode_stats},
        key=key)


def _close_episodes(end: _Running, rows: Any) -> EpisodeBatch:
    """The :class:`EpisodeBatch` from the loop's last carry and its rows ``[T, E, ...]``:
    rows made env-major, plus row ``T`` holding the observation each episode ended in."""
    episodes = jax.tree.map(lambda body, tail: jnp.concatenate(
        [jnp.swapaxes(body, 0, 1), tail[:, None]], axis=1), rows,
        _frozen_row(end, rows))  # [E, T + 1, ...]
    lengths = jnp.sum(episodes.filled, axis=1).astype(jnp.int32)
    return EpisodeBatch(episodes, end.returns, end.stats, lengths)


def _rows_like(mask: jax.Array, like: jax.Array) -> jax.Array:
    """``mask [E]`` broadcast against ``like [E, ...]``."""
    return mask.reshape(mask.shape + (1,) * (like.ndim - 1))
