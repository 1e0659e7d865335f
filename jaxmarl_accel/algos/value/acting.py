"""How the value learners act: epsilon-greedy over each agent's available actions, from the
shared agent network (QMIX, Rashid et al. 2018, Sec. 4; a recurrent agent carries its GRU
state and previous action from step to step).

Shapes: N agents, A actions; ``...`` leading env axes of the feed-forward form.
"""

from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from jaxmarl_accel.algos.networks import MLP
from jaxmarl_accel.algos.value import networks, targets
from jaxmarl_accel.algos.value.config import ValueConfig
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import Policy, PyTree


class Carry(NamedTuple):
    """A recurrent agent's memory of one env: ``hidden [N, hidden]`` GRU state and
    ``prev_action [N, A]`` one-hot of the previous action (zeros at an episode's start)."""

    hidden: jax.Array
    prev_action: jax.Array


def initial_carry(spec: EnvSpec, config: ValueConfig) -> Carry:
    """One env's :class:`Carry` at an episode's start: zeros ``[N, hidden]``, ``[N, A]``."""
    n = spec.num_agents
    return Carry(hidden=jnp.zeros((n, config.hidden), jnp.float32),
                 prev_action=jnp.zeros((n, spec.num_actions), jnp.float32))


def choose(config: ValueConfig, env_steps: jax.Array, q: jax.Array, avail: jax.Array,
           key: jax.Array, explore: bool) -> jax.Array:
    """Each agent's action ``[...]`` int32 from ``q [..., A]`` over ``avail [..., A]``:
    epsilon-greedy at epsilon's value after ``env_steps`` (``explore``, static) or greedy."""
    if explore:
        return targets.epsilon_greedy(q, avail, targets.epsilon(config, env_steps), key)
    return targets.greedy(q, avail)


def act_recurrent(agent: networks.RNNAgent, spec: EnvSpec, config: ValueConfig,
                  agent_params: PyTree, env_steps: jax.Array, carry: Carry, obs: jax.Array,
                  avail: jax.Array, key: jax.Array, explore: bool) -> tuple[jax.Array, Carry]:
    """Every agent's action in one env and the env's next carry.

    Args:
      agent, agent_params: the shared recurrent agent network and its parameters.
      env_steps: ``[]`` int, the trainer's env steps (epsilon's clock).
      carry: the env's :class:`Carry` (leaves ``[N, ...]``).
      obs: ``[N, obs_dim]`` observations (cast to float32).
      avail: ``[N, A]`` bool available actions.
      key: randomness of the epsilon-greedy choice.
      explore: static; epsilon-greedy if True, greedy otherwise (both over ``avail``).

    Returns:
      ``action [N]`` int32 and the carry after this step.
    """
    n, a = spec.num_agents, spec.num_actions
    chex.assert_shape(obs, (n, spec.obs_dim))
    chex.assert_shape(avail, (n, a))
    chex.assert_shape([carry.hidden, carry.prev_action], [(n, config.hidden), (n, a)])
    x = networks.agent_inputs(obs.astype(jnp.float32), carry.prev_action, agent.ids)
    hidden, q = agent.apply(agent_params, carry.hidden, x)
    action = choose(config, env_steps, q, avail, key, explore)
    return action, Carry(hidden, jax.nn.one_hot(action, a, dtype=jnp.float32))


def act_feedforward(agent: MLP, spec: EnvSpec, config: ValueConfig, agent_params: PyTree,
                    env_steps: jax.Array, obs: jax.Array, key: jax.Array,
                    explore: bool) -> tuple[jax.Array, jax.Array]:
    """Every agent's action at ``obs [..., N, obs_dim]`` over the valid actions
    (``spec.action_mask``): ``(env_action [..., N] int32, one-hot [..., N, A] float32)``;
    epsilon-greedy at epsilon's value after ``env_steps`` (``explore``, static) or greedy."""
    chex.assert_axis_dimension(obs, -2, spec.num_agents)
    chex.assert_axis_dimension(obs, -1, spec.obs_dim)
    q = agent.apply(agent_params, networks.agent_inputs(obs.astype(jnp.float32), None))
    avail = jnp.broadcast_to(spec.action_mask, q.shape)
    action = choose(config, env_steps, q, avail, key, explore)
    return action, jax.nn.one_hot(action, spec.num_actions, dtype=jnp.float32)


def make_policy(agent: networks.RNNAgent | MLP, spec: EnvSpec, config: ValueConfig,
                recurrent: bool, explore: bool) -> Policy:
    """The value learner's policy of one env (:attr:`~jaxmarl_accel.algos.Algo.policy`):
    ``(state, carry, key, obs [N, obs_dim], avail [N, A] bool) -> (env_action [N] int32,
    one-hot [N, A] float32, carry)``, epsilon-greedy (``explore``, static) or greedy.

    The recurrent agent (:func:`act_recurrent`) acts over ``avail`` and carries its
    :class:`Carry`; the feed-forward one (:func:`act_feedforward`, carry ``()``) acts over
    the valid actions (``spec.action_mask``), the actions its transition replay learns over.
    """
    if recurrent:
        def policy(state: PyTree, carry: Carry, key: jax.Array, obs: jax.Array,
                   avail: jax.Array) -> tuple[jax.Array, jax.Array, Carry]:
            action, carry = act_recurrent(agent, spec, config, state.params.agent,
                                          state.env_steps, carry, obs, avail, key, explore)
            return action, carry.prev_action, carry  # prev_action: the action's one-hot
    else:
        def policy(state: PyTree, carry: tuple, key: jax.Array, obs: jax.Array,
                   avail: jax.Array) -> tuple[jax.Array, jax.Array, tuple]:
            del avail
            return (*act_feedforward(agent, spec, config, state.params.agent, state.env_steps,
                                     obs, key, explore), carry)
    return policy


__all__ = ["Carry", "act_feedforward", "act_recurrent", "choose", "initial_carry",
           "make_policy"]
