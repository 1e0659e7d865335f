"""How the on-policy learners act: every team's networks one step on (:func:`team_outputs`),
the rollout round's :func:`sample` and :func:`value` (:class:`~.skeleton.OnPolicyFns`), and
the policy of one env (:func:`make_policy`, :attr:`~jaxmarl_accel.algos.Algo.policy`)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxmarl_accel.algos.on_policy import models
from jaxmarl_accel.algos.on_policy import networks as nets
from jaxmarl_accel.algos.on_policy.skeleton import (
    OnPolicyState,
    PolicyStep,
    Skeleton,
    team_mask,
    unnormalized,
)
from jaxmarl_accel.types import Policy, PyTree


def team_outputs(s: Skeleton, params: tuple[PyTree, ...], carry: PyTree, obs: jax.Array,
                 world: jax.Array | None, values: bool = True
                 ) -> tuple[list[jax.Array], list[jax.Array | None], PyTree]:
    """One step of every team's networks on its own agents of ``obs [..., N, obs_dim]``:
    per team the policy outputs ``[..., N_k, out_size]`` and values ``[..., N_k]`` (MAPPO's
    critic on ``world [..., S]``, skipped without ``values``: ``None``), and the carry after
    the step (``()`` without memory; MAPPO's critic state only with ``values``)."""
    policy = s.policy
    if not policy.recurrent and policy.critic is None:
        outs, vals = nets.forward(policy, params, obs)
        return outs, vals, carry
    teams, num_agents = policy.teams, s.spec.num_agents
    outs, vals, states, critic_states = [], [], [], []
    for k, team in enumerate(params):
        rows = functools.partial(nets.team_rows, teams, k, axis=-2)
        out, val, h = models.step(policy.net, team["net"], rows(obs),
                                  rows(carry["net"]) if policy.recurrent else None)
        if policy.critic is not None:
            val = None
            if values:
                _, val, h_critic = models.step(
                    policy.critic, team["critic"],
                    models.critic_input(world, teams.rows[k], num_agents),
                    rows(carry["critic"]) if policy.recurrent else None)
                critic_states.append(h_critic)
        outs.append(out)
        vals.append(val)
        states.append(h)
    if not policy.recurrent:
        return outs, vals, carry
    merge = functools.partial(nets.merge_teams, teams, axis=-2)
    return outs, vals, {"net": merge(states),
                        **({"critic": merge(critic_states)} if critic_states else {})}


def initial_carry(s: Skeleton, lead: tuple[int, ...], critic: bool) -> PyTree:
    """The carry at an episode's start, leaves ``[*lead, N, H]`` zeros (``()`` without
    memory): the policy network's, and with ``critic`` MAPPO's critic's too."""
    if not s.policy.recurrent:
        return ()
    zeros = jnp.zeros((*lead, s.spec.num_agents, s.config.hidden_sizes[0]), jnp.float32)
    return {"net": zeros, **({"critic": zeros} if critic and s.policy.critic else {})}


def sample(s: Skeleton, state: OnPolicyState, carry: PyTree, obs: jax.Array,
           world: jax.Array | None, avail: jax.Array | None, key: jax.Array
           ) -> tuple[PolicyStep, PyTree]:
    """Exploration actions of every agent of ``obs [E, N, obs_dim]`` (:class:`PolicyStep`)
    and the carry after the step (:attr:`OnPolicyFns.sample`)."""
    outs, vals, carry = team_outputs(s, state.params, carry, obs, world)
    return draw(s, state, outs, unnormalized(s, state, vals), avail, key), carry


def draw(s: Skeleton, state: OnPolicyState, outs: list[jax.Array], vals: list[jax.Array] | None,
         avail: jax.Array | None, key: jax.Array) -> PolicyStep:
    """Actions drawn from the teams' policy outputs (:class:`PolicyStep`; its values
    ``vals`` merged, or zeros when ``None``)."""
    teams = s.policy.teams
    steps = []
    for k, team_key in enumerate(jax.random.split(key, len(teams.names))):
        dist = nets.distribution(s.policy, state.params[k], outs[k], team_mask(s, k, avail))
        action, log_prob = dist.sample_and_log_prob(seed=team_key)
        steps.append((action, log_prob))
    merge = lambda parts, axis: nets.merge_teams(teams, parts, axis)
    action = merge([a for a, _ in steps], -2 if s.spec.continuous else -1)
    env_action = jnp.clip(action, 0.0, 1.0) if s.spec.continuous else action
    log_prob = merge([lp for _, lp in steps], -1)
    return PolicyStep(env_action, action, log_prob,
                      jnp.zeros_like(log_prob) if vals is None else merge(vals, -1))


def value(s: Skeleton, state: OnPolicyState, carry: PyTree, obs: jax.Array,
          world: jax.Array | None, avail: jax.Array | None = None) -> jax.Array:
    """Values ``[..., N]`` of every agent's observation ``obs [..., N, obs_dim]`` (MAPPO:
    of the global state ``world [..., S]``), one step on from ``carry`` (state values:
    ``avail`` unused)."""
    del avail
    return nets.merge_teams(s.policy.teams, unnormalized(s, state, team_outputs(
        s, state.params, carry, obs, world)[1]), -1)


def make_policy(s: Skeleton, explore: bool) -> Policy:
    """The learner's policy of one env (:attr:`~jaxmarl_accel.algos.Algo.policy`): ``(state,
    carry, key, obs [N, obs_dim], avail [N, A] bool or None) -> (env_action, action_vec [N,
    action_dim], carry)``. Actions sampled (``explore``, static) or each distribution's mode
    (the Gaussian's mean clipped to [0, 1]) over ``avail`` (the spec's valid actions when
    None); ``action_vec`` their one-hot, or the continuous action itself; the carry ``()``,
    or the recurrent policy network's state ``{"net": [N, H]}`` (MAPPO's critic is not
    run: the policy reads no global state)."""
    teams, spec = s.policy.teams, s.spec

    def policy(state: OnPolicyState, carry: PyTree, key: jax.Array, obs: jax.Array,
               avail: jax.Array | None) -> tuple[jax.Array, jax.Array, PyTree]:
        outs, _, carry = team_outputs(s, state.params, carry, obs, None, values=False)
        if explore:
            env_action = draw(s, state, outs, None, avail, key).env_action
        elif spec.continuous:
            env_action = jnp.clip(nets.merge_teams(teams, outs, -2), 0.0, 1.0)
        else:
            env_action = nets.merge_teams(teams, [nets.distribution(
                s.policy, state.params[k], outs[k], team_mask(s, k, avail)).mode()
                for k in range(len(teams.names))], -1)
        vec = (env_action.astype(jnp.float32) if spec.continuous
               else jax.nn.one_hot(env_action, spec.num_actions, dtype=jnp.float32))
        return env_action, vec, carry

    return policy


__all__ = ["draw", "initial_carry", "make_policy", "sample", "team_outputs", "value"]
