"""Joint policies of one environment: scripted, random, learned, and mixtures of them.

A policy is a pure function ``policy_fn(key, obs [N, obs_dim], state, params) -> actions``
of one environment, with actions ``[N]`` (discrete) or ``[N, act_dim]`` (continuous).
:func:`scripted_policy` and :func:`random_policy` adapt an env's scripted and uniform
policies to it; :func:`scripted_team` hands one team's rows to the scripted policy.

A learner's joint policy (:func:`learner_policy`) also returns the critic-facing action
vector the replay stores: ``(algo_state, key, obs, env_state, params) -> (env_action,
action_vec [N, action_dim])``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxmarl_accel.envs.base import Env

PolicyFn = Callable[[jax.Array, jax.Array, Any, Any], jax.Array]
LearnerPolicyFn = Callable[..., tuple[jax.Array, jax.Array]]


def scripted_policy(env: Env) -> PolicyFn:
    """The env's scripted policy as a ``policy_fn``."""
    return lambda key, obs, state, params: env.scripted_action(key, state, params)


def random_policy(env: Env) -> PolicyFn:
    """The env's uniform random policy as a ``policy_fn``: uniform over the actions available
    in the state (``env.avail_actions``) when the env has them, else ``env.random_action``."""
    if env.avail_actions is None:
        return lambda key, obs, state, params: env.random_action(key)

    def policy(key: jax.Array, obs: jax.Array, state: Any, params: Any) -> jax.Array:
        avail = env.avail_actions(state, params)  # [N, num_actions]
        logits = jnp.where(avail, 0.0, -jnp.inf)
        return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)

    return policy


def team_rows(env: Env, team: str) -> jax.Array:
    """Bool ``[N]``, True for the agents of ``team`` (ValueError if the env has no such team)."""
    if team not in env.spec.teams:
        raise ValueError(f"team {team!r} not in the scenario's teams {sorted(set(env.spec.teams))}")
    return jnp.asarray([t == team for t in env.spec.teams])


def scripted_team(env: Env, policy_fn: PolicyFn, team: str) -> PolicyFn:
    """``policy_fn`` with the rows of ``team``'s agents replaced by the scripted policy.

    E.g. random predators against scripted prey: ``scripted_team(env, random_policy(env),
    "prey")``. Actions are ``[N]`` (discrete) or ``[N, act_dim]`` (continuous).
    """
    rows = team_rows(env, team)

    def policy(key, obs, state, params):
        own_key, scripted_key = jax.random.split(key)
        actions = policy_fn(own_key, obs, state, params)
        return script_rows(env, rows, actions, scripted_key, state, params)

    return policy


def script_rows(
    env: Env, rows: jax.Array, actions: jax.Array, key: jax.Array, state: Any, params: Any
) -> jax.Array:
    """``actions`` with the agents marked in ``rows`` (bool ``[N]``) replaced by the scripted
    policy's actions drawn with ``key``; actions ``[N]`` or ``[N, act_dim]`` (axis 0: agent)."""
    scripted = env.scripted_action(key, state, params)
    return jnp.where(rows.reshape((-1,) + (1,) * (actions.ndim - 1)), scripted, actions)


def action_vector(env: Env, env_action: jax.Array) -> jax.Array:
    """Critic-facing action vector of env actions: one-hot ``[..., N, num_actions]`` for
    discrete actions ``[..., N]``, the float vector itself for continuous ones."""
    if env.spec.continuous:
        return env_action.astype(jnp.float32)
    return jax.nn.one_hot(env_action, env.spec.num_actions, dtype=jnp.float32)


def learner_policy(env: Env, algo: Any, scripted_prey: bool, explore: bool) -> LearnerPolicyFn:
    """Joint policy of one environment driven by a learner's ``algo.act``:
    ``(algo_state, key, obs [N, obs_dim], env_state, params) -> (env_action,
    action_vec [N, action_dim])``.

    With ``scripted_prey`` the prey's rows come from the scenario's scripted policy
    instead of the learners (and their action vectors are those actions' vectors);
    ``explore`` (static) selects the learners' exploration noise.
    """
    is_prey = team_rows(env, "prey") if scripted_prey else None

    def policy(algo_state, key, obs, env_state, params):
        act_key, prey_key = jax.random.split(key)
        env_action, action_vec = algo.act(algo_state, obs, act_key, explore)
        if is_prey is None:
            return env_action, action_vec
        env_action = script_rows(env, is_prey, env_action, prey_key, env_state, params)
        action_vec = jnp.where(is_prey[:, None], action_vector(env, env_action), action_vec)
        return env_action, action_vec

    return policy


def available_actions(env: Env, env_state: Any, params: Any) -> jax.Array:
    """Bool ``[N, A]``: the actions available in one env state (``env.avail_actions``), or
    every valid action (``spec.action_mask``) when the env has no such function."""
    if env.avail_actions is None:
        return env.spec.action_mask
    return env.avail_actions(env_state, params)


def with_memory(policy_fn: Callable[..., Any], initial_carry: Callable[[], Any] | None
                ) -> tuple[Callable[..., tuple[Any, Any]], Callable[[], Any]]:
    """A policy in the carried form ``(key, obs, state, params, carry) -> (actions, carry)``
    with its ``initial_carry``: returned as given when ``initial_carry`` is set, else a
    plain ``policy_fn(key, obs, state, params) -> actions`` wrapped with the empty carry
    ``()`` (same keys, same actions)."""
    if initial_carry is not None:
        return policy_fn, initial_carry
    return (lambda key, obs, state, params, carry: (policy_fn(key, obs, state, params), carry),
            tuple)


class StepPolicy(NamedTuple):
    """A learner's joint policy of one environment with its memory: one protocol for
    stateless and recurrent learners (the carry of a stateless one is ``()``).

    Attributes:
      initial_carry: ``() -> carry`` of one env at an episode's start.
      step: ``(algo_state, carry, key, obs [N, obs_dim], env_state, params) -> (env_action,
        action_vec [N, action_dim], carry)``.
    """

    initial_carry: Callable[[], Any]
    step: Callable[..., tuple[jax.Array, jax.Array, Any]]


def learner_step_policy(env: Env, algo: Any, scripted_prey: bool, explore: bool
                        ) -> StepPolicy:
    """:class:`StepPolicy` of a learner: :func:`learner_policy` with an empty carry for
    stateless learners; for recurrent ones (``algo.initial_carry`` set) its ``act`` over
    the env's available actions (``env.avail_actions``, every valid action when the env has
    none), carrying the learner's memory. ``scripted_prey`` as in :func:`learner_policy`."""
    if algo.initial_carry is None:
        policy = learner_policy(env, algo, scripted_prey, explore)

        def stateless(algo_state, carry, key, obs, env_state, params):
            return (*policy(algo_state, key, obs, env_state, params), carry)

        return StepPolicy(lambda: (), stateless)
    is_prey = team_rows(env, "prey") if scripted_prey else None

    def recurrent(algo_state, carry, key, obs, env_state, params):
        act_key, prey_key = jax.random.split(key)
        env_action, carry = algo.act(algo_state, carry, obs,
                                     available_actions(env, env_state, params), act_key, explore)
        if is_prey is not None:
            env_action = script_rows(env, is_prey, env_action, prey_key, env_state, params)
        return env_action, action_vector(env, env_action), carry

    return StepPolicy(algo.initial_carry, recurrent)


def against_opponents(env: Env, policy: StepPolicy, team: str, opponent: str
                      ) -> Callable[..., tuple[jax.Array, Any]]:
    """The learners of ``team`` (``policy``, a learner's :class:`StepPolicy`) against
    ``opponent`` agents in every other team's rows: ``"random"`` (uniform over valid actions)
    or ``"scripted"`` (the env's scripted policy). Cross-play for envs of several teams,
    e.g. trained taggers against random runners.

    Returns ``(algo_state, key, obs [N, obs_dim], state, params, carry) -> (actions, carry)``
    with actions ``[N]`` or ``[N, act_dim]``; ``policy.initial_carry`` is its carry.
    """
    if opponent not in ("random", "scripted"):
        raise ValueError(f"opponent must be 'random' or 'scripted', got {opponent!r}")
    if team not in env.spec.teams:
        raise ValueError(f"team {team!r}: {env.spec.name} has teams "
                         f"{', '.join(dict.fromkeys(env.spec.teams))}")
    others = ~team_rows(env, team)

    def step(algo_state, key, obs, state, params, carry):
        own_key, other_key = jax.random.split(key)
        actions, _, carry = policy.step(algo_state, carry, own_key, obs, state, params)
        other = (env.random_action(other_key) if opponent == "random"
                 else env.scripted_action(other_key, state, params))
        return jnp.where(others.reshape((-1,) + (1,) * (actions.ndim - 1)), other,
                         actions), carry

    return step
