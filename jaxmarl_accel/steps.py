"""The two steps every training loop is made of, each written once.

* :func:`transition_step`: E environments take one step under a joint policy, and the step
  becomes a batch of :class:`~jaxmarl_accel.types.Transition` for the replay;
* :func:`learn_step`: sample a mini-batch, update the learner on it, and send its TD errors
  back to the buffer as priorities.

The trainer (:mod:`jaxmarl_accel.train`), the workload characterization
(``experiments.characterize``) and ``examples/custom_loop.py`` all call these, so what is
timed is what is trained. Shapes: E environments, N agents, B batch.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxmarl_accel.envs.base import Env
from jaxmarl_accel.envs.policies import LearnerPolicyFn
from jaxmarl_accel.types import Transition

PyTree = Any


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
    """

    transition: Transition
    env_state: PyTree
    obs: jax.Array
    ended: jax.Array


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
    env: Env, env_params: PyTree, policy: LearnerPolicyFn, algo_state: PyTree,
    env_state: PyTree, obs: jax.Array, act_key: jax.Array, step_key: jax.Array,
) -> EnvStep:
    """Step E envs once under ``policy`` and package the step as transitions.

    Args:
      env: the environment (stepped with ``vmap`` over the E envs).
      env_params: its params pytree (shared by the envs).
      policy: a joint policy of one env, ``(algo_state, key, obs [N, obs_dim], env_state,
        params) -> (env_action, action_vec [N, A])`` (e.g.
        :func:`~jaxmarl_accel.envs.policies.learner_policy`).
      algo_state: the learner state the policy acts with.
      env_state: env states ``[E]``.
      obs: current observations ``[E, N, obs_dim]``.
      act_key: split into one key per env for the policy.
      step_key: split into one key per env for ``env.step``.

    Returns:
      :class:`EnvStep`.
    """
    num_envs = obs.shape[0]
    env_action, action_vec = jax.vmap(policy, in_axes=(None, 0, 0, 0, None))(
        algo_state, jax.random.split(act_key, num_envs), obs, env_state, env_params)
    next_obs, env_state, reward, terminated, truncated, info = jax.vmap(
        env.step, in_axes=(0, 0, 0, None))(
        jax.random.split(step_key, num_envs), env_state, env_action, env_params)
    done = jnp.broadcast_to(terminated[:, None], reward.shape).astype(jnp.float32)
    transition = Transition(obs=obs, action=action_vec, reward=reward,
                            next_obs=info["final_obs"], done=done)
    return EnvStep(transition, env_state, next_obs, terminated | truncated)


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


def example_transition(spec: Any, action_dim: int) -> Transition:
    """A zero transition of one joint step (leaves ``[N, ...]``), the shape a buffer stores."""
    obs = jnp.zeros((spec.num_agents, spec.obs_dim), jnp.float32)
    return Transition(obs=obs, action=jnp.zeros((spec.num_agents, action_dim), jnp.float32),
                      reward=jnp.zeros(spec.num_agents, jnp.float32), next_obs=obs,
                      done=jnp.zeros(spec.num_agents, jnp.float32))
