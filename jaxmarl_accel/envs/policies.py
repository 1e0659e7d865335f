"""Joint policies of one environment: scripted, random, and teams mixed from policies.

Every policy in the library has one signature (:data:`~jaxmarl_accel.types.Policy`), a
learner's (:attr:`~jaxmarl_accel.algos.Algo.policy`) as well as these::

    policy(algo_state, carry, key, obs, avail) -> (env_action, action_vec, carry)

for ONE environment: ``avail [N, A]`` bool the actions available to each agent (the env's
``avail_actions``, or every valid action, ``spec.action_mask``, when it has none:
:func:`available_actions`); ``env_action`` ``[N]`` int32 (discrete) or ``[N, act_dim]``
float32 (continuous); ``action_vec [N, action_dim]`` the critic-facing vector a replay
stores (:func:`action_vector`); ``carry`` the policy's memory, ``()`` for a stateless one.
The policies here keep no memory and ignore ``algo_state`` (pass ``()``).

**The env state reaches a policy in the ``obs`` position.** The scripted policies steer from
the env state (positions, goals), which the observations do not hold, and the random policy
samples over the state's available actions. So a policy *run in an environment* (what
:func:`~.evaluate.evaluate_policy`, :func:`~.rollout.rollout` and
:func:`~jaxmarl_accel.trainer.steps.transition_step` call) observes an :class:`EnvObs`, the
agents' observations with the state and params they came from, while a learner's own policy
observes the observations ``[N, obs_dim]`` alone and never sees the env;
:func:`observing` lifts it to an :class:`EnvObs` (the learner's adapter,
:func:`jaxmarl_accel.trainer.policy.learner_policy`, lives above this layer).

Team mixing (:func:`mix_rows`, :func:`scripted_team`, :func:`against_opponents`) splits the
key into the base policy's key and the mixed-in policy's key, in that order, and carries the
base policy's memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxmarl_accel.envs.base import Env
from jaxmarl_accel.types import Policy, PyTree


class EnvObs(NamedTuple):
    """What a policy run in one environment observes.

    Attributes:
      obs: ``[N, obs_dim]`` the agents' observations.
      state: the env state they were observed in.
      params: the env's params.
    """

    obs: jax.Array
    state: PyTree
    params: PyTree


def observing(policy: Policy) -> Policy:
    """``policy`` over observations ``[N, obs_dim]`` (a learner's) as a policy run in an env:
    it reads the :attr:`EnvObs.obs` of the :class:`EnvObs` it is given, the rest unchanged."""

    def run(algo_state: PyTree, carry: PyTree, key: jax.Array, obs: EnvObs,
            avail: jax.Array) -> tuple[jax.Array, jax.Array, PyTree]:
        return policy(algo_state, carry, key, obs.obs, avail)

    return run


def action_vector(env: Env, env_action: jax.Array) -> jax.Array:
    """Critic-facing action vector of env actions: one-hot ``[..., N, num_actions]`` for
    discrete actions ``[..., N]``, the float vector itself for continuous ones."""
    if env.spec.continuous:
        return env_action.astype(jnp.float32)
    return jax.nn.one_hot(env_action, env.spec.num_actions, dtype=jnp.float32)


def available_actions(env: Env, env_state: Any, params: Any) -> jax.Array:
    """Bool ``[N, A]``: the actions available in one env state (``env.avail_actions``), or
    every valid action (``spec.action_mask``) when the env has no such function."""
    if env.avail_actions is None:
        return env.spec.action_mask
    return env.avail_actions(env_state, params)


def state_policy(env: Env, actions_of: Callable[[jax.Array, PyTree, PyTree], jax.Array]
                 ) -> Policy:
    """The policy of an action function of the env state, ``actions_of(key, state, params)
    -> env_action`` (``[N]`` or ``[N, act_dim]``), run in ``env`` (it observes an
    :class:`EnvObs`); its action vectors are :func:`action_vector`'s, its carry passes through."""

    def policy(algo_state: PyTree, carry: PyTree, key: jax.Array, obs: EnvObs,
               avail: jax.Array) -> tuple[jax.Array, jax.Array, PyTree]:
        env_action = actions_of(key, obs.state, obs.params)
        return env_action, action_vector(env, env_action), carry

    return policy


def scripted_policy(env: Env) -> Policy:
    """The env's scripted policy (``env.scripted_action``) run in ``env``."""
    return state_policy(env, env.scripted_action)


def random_policy(env: Env, masked: bool = True) -> Policy:
    """The env's uniform random policy run in ``env``: uniform over the available actions it
    is given (``avail``) when the env has state-dependent ones (``env.avail_actions``) and
    ``masked``, else ``env.random_action`` (uniform over every valid action)."""
    if env.avail_actions is None or not masked:
        return state_policy(env, lambda key, state, params: env.random_action(key))

    def policy(algo_state: PyTree, carry: PyTree, key: jax.Array, obs: EnvObs,
               avail: jax.Array) -> tuple[jax.Array, jax.Array, PyTree]:
        logits = jnp.where(avail, 0.0, -jnp.inf)  # [N, num_actions]
        env_action = jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)
        return env_action, action_vector(env, env_action), carry

    return policy


def team_rows(env: Env, team: str) -> jax.Array:
    """Bool ``[N]``, True for the agents of ``team`` (ValueError if the env has no such team)."""
    if team not in env.spec.teams:
        raise ValueError(f"team {team!r} not in the scenario's teams {sorted(set(env.spec.teams))}")
    return jnp.asarray([t == team for t in env.spec.teams])


def script_rows(
    env: Env, rows: jax.Array, actions: jax.Array, key: jax.Array, state: Any, params: Any
) -> jax.Array:
    """``actions`` with the agents marked in ``rows`` (bool ``[N]``) replaced by the scripted
    policy's actions drawn with ``key``; actions ``[N]`` or ``[N, act_dim]`` (axis 0: agent)."""
    scripted = env.scripted_action(key, state, params)
    return jnp.where(rows.reshape((-1,) + (1,) * (actions.ndim - 1)), scripted, actions)


def mix_rows(policy: Policy, rows: jax.Array, other: Policy) -> Policy:
    """``policy`` with the agents marked in ``rows`` (bool ``[N]``) acting by ``other``, a
    policy without memory (given the carry ``()``; its carry is dropped).

    The key splits into ``policy``'s and ``other``'s, in that order; the actions and action
    vectors of ``rows`` are ``other``'s, the carry is ``policy``'s.
    """

    def mixed(algo_state: PyTree, carry: PyTree, key: jax.Array, obs: Any, avail: jax.Array
              ) -> tuple[jax.Array, jax.Array, PyTree]:
        own_key, other_key = jax.random.split(key)
        env_action, action_vec, carry = policy(algo_state, carry, own_key, obs, avail)
        their_action, their_vec, _ = other(algo_state, (), other_key, obs, avail)
        pick = lambda theirs, own: jnp.where(rows.reshape((-1,) + (1,) * (own.ndim - 1)),
                                             theirs, own)
        return pick(their_action, env_action), pick(their_vec, action_vec), carry

    return mixed


def scripted_team(env: Env, policy: Policy, team: str) -> Policy:
    """``policy`` (run in ``env``) with the rows of ``team``'s agents from the scripted
    policy (:func:`mix_rows`). E.g. random predators against scripted prey:
    ``scripted_team(env, random_policy(env), "prey")``, or learners against scripted prey."""
    return mix_rows(policy, team_rows(env, team), scripted_policy(env))


def against_opponents(env: Env, policy: Policy, team: str, opponent: str) -> Policy:
    """The agents of ``team`` acting by ``policy`` (e.g. greedy learners, run in ``env``)
    against ``opponent`` agents in every other team's rows: ``"random"`` (uniform over
    valid actions, ``env.random_action``) or ``"scripted"`` (the env's scripted policy).
    Cross-play for envs of several teams, e.g. trained taggers against random runners
    (:func:`mix_rows`: the carry is ``policy``'s)."""
    if opponent not in ("random", "scripted"):
        raise ValueError(f"opponent must be 'random' or 'scripted', got {opponent!r}")
    if team not in env.spec.teams:
        raise ValueError(f"team {team!r}: {env.spec.name} has teams "
                         f"{', '.join(dict.fromkeys(env.spec.teams))}")
    other = (random_policy(env, masked=False) if opponent == "random"
             else scripted_policy(env))
    return mix_rows(policy, ~team_rows(env, team), other)


__all__ = ["EnvObs", "action_vector", "against_opponents", "available_actions", "mix_rows",
           "observing", "random_policy", "script_rows", "scripted_policy", "scripted_team",
           "state_policy", "team_rows"]
