"""One policy-value network per team, shared by all agents of that team (paper 003, Sec. 3:
a policy per role, its parameters shared by the role's agents).

A team's network is WarpDrive's fully connected model: a ReLU torso, a policy head (logits
over the discrete actions, or the mean of a Gaussian over the continuous ones) and a value
head. Parameters are a tuple with one entry per team (:class:`Teams` order); the agents of
team k are the static rows ``Teams.rows[k]`` of the agent axis, so the networks run on
exactly their own agents' observations and a team's gradient never touches another's.
Initialization: orthogonal (the project's LAPACK-free :func:`~..initializers.orthogonal`),
gains sqrt(2) in the torso, 0.01 on the policy head and 1 on the value head (Andrychowicz
et al. 2021, Sec. 3.2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.algos.dense import Dense
from jaxmarl_accel.algos.distributions import FactoredCategorical, masked_categorical
from jaxmarl_accel.algos.initializers import orthogonal
from jaxmarl_accel.algos.on_policy import models
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import PyTree


class Teams(NamedTuple):
    """The agents of each team, static.

    Attributes:
      names: team labels in order of first appearance in ``spec.teams``.
      rows: per team, the agent indices of its members (int numpy arrays, ascending).
      slices: per team, ``slice(start, stop)`` when its members are contiguous, else
        ``None`` (then ``rows`` gathers them).
      inverse: the permutation putting the teams' concatenated rows back in agent order,
        or ``None`` when that concatenation already is in agent order.
    """

    names: tuple[str, ...]
    rows: tuple[np.ndarray, ...]
    slices: tuple[slice | None, ...]
    inverse: np.ndarray | None


def teams_of(spec: EnvSpec) -> Teams:
    """The :class:`Teams` of ``spec`` (``spec.teams`` labels)."""
    names = tuple(dict.fromkeys(spec.teams))
    rows = tuple(np.asarray([i for i, t in enumerate(spec.teams) if t == name]) for name in names)
    slices = tuple(slice(int(r[0]), int(r[-1]) + 1) if r[-1] - r[0] + 1 == len(r) else None
                   for r in rows)
    order = np.concatenate(rows)
    inverse = None if np.array_equal(order, np.arange(len(order))) else np.argsort(order)
    return Teams(names, rows, slices, inverse)


def team_rows(teams: Teams, k: int, x: jax.Array, axis: int) -> jax.Array:
    """Team ``k``'s rows of ``x`` along its agent ``axis`` (a slice when contiguous)."""
    if teams.slices[k] is not None:
        index = [slice(None)] * x.ndim
        index[axis] = teams.slices[k]
        return x[tuple(index)]
    return jnp.take(x, teams.rows[k], axis=axis)


def merge_teams(teams: Teams, parts: Sequence[jax.Array], axis: int) -> jax.Array:
    """Inverse of :func:`team_rows` over every team: the teams' parts (agent ``axis`` of
    sizes ``N_k``) as one array in agent order (``N`` along ``axis``)."""
    merged = parts[0] if len(parts) == 1 else jnp.concatenate(parts, axis=axis)
    return merged if teams.inverse is None else jnp.take(merged, teams.inverse, axis=axis)


class PolicyValueNet(nn.Module):
    """``[..., obs_dim] -> (policy output [..., out_size], value [...])``.

    Attributes:
      hidden_sizes: widths of the torso's ReLU layers.
      out_size: logits (discrete) or Gaussian means (continuous) per agent.
    """

    hidden_sizes: Sequence[int]
    out_size: int

    @nn.compact
    def __call__(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        for width in self.hidden_sizes:
            x = nn.relu(Dense(width, kernel_init=orthogonal(math.sqrt(2.0)))(x))
        out = Dense(self.out_size, kernel_init=orthogonal(0.01))(x)
        value = Dense(1, kernel_init=orthogonal(1.0))(x)[..., 0]
        return out, value


class Policy(NamedTuple):
    """The teams' networks and their action distributions for one env spec.

    Attributes:
      net: the network every team instantiates: :class:`PolicyValueNet` (A2C and PPO,
        feed-forward) or :class:`~.models.TeamNet` (recurrent, or MAPPO's actor).
      teams: the team layout.
      continuous: Gaussian over ``act_dim`` components (True) or masked categorical.
      factors: discrete actions drawn factor by factor (``EnvSpec.action_factors``, one
        categorical each), or ``None`` for one categorical over the index.
      critic: MAPPO's critic every team instantiates (:class:`~.models.TeamNet` with a
        value head only, on :func:`~.models.critic_input`), or ``None`` (the value head
        is ``net``'s).
      critic_dim: width of the critic's input (global state and agent one-hot), or 0.
      recurrent: the networks carry a GRU state (:mod:`~.models`).
    """

    net: PolicyValueNet | models.TeamNet
    teams: Teams
    continuous: bool
    factors: tuple[int, ...] | None = None
    critic: models.TeamNet | None = None
    critic_dim: int = 0
    recurrent: bool = False


def make_policy(spec: EnvSpec, hidden_sizes: Sequence[int], factored: bool = True, *,
                centralized: bool = False, recurrent: bool = False) -> Policy:
    """The :class:`Policy` of ``spec``: one network shape for every team (observations are
    padded to ``spec.obs_dim``, actions to ``num_actions`` or ``act_dim``). With
    ``factored`` and ``spec.action_factors`` the policy head has ``sum(factors)`` logits, one
    block per factor (WarpDrive's multi-discrete heads), instead of ``num_actions``.
    ``centralized``: MAPPO's separate critic of the global state (``spec.state_dim``, or
    ``N x obs_dim`` concatenated observations) with the agent one-hot; ``recurrent``: GRU
    networks (:mod:`~.models`)."""
    factors = spec.action_factors if factored and not spec.continuous else None
    out_size = (spec.act_dim if spec.continuous else
                sum(factors) if factors else spec.num_actions)
    sizes, teams = tuple(hidden_sizes), teams_of(spec)
    if not (centralized or recurrent):
        return Policy(PolicyValueNet(sizes, out_size), teams, spec.continuous, factors)
    critic = models.TeamNet(sizes, 0, True, recurrent) if centralized else None
    critic_dim = (spec.state_dim or spec.num_agents * spec.obs_dim) + spec.num_agents
    return Policy(models.TeamNet(sizes, out_size, not centralized, recurrent), teams,
                  spec.continuous, factors, critic, critic_dim if centralized else 0, recurrent)


def init_params(policy: Policy, key: jax.Array, obs_dim: int, log_std_init: float
                ) -> tuple[PyTree, ...]:
    """One parameter tree per team: ``{"net": flax params, "log_std": [act_dim]}`` (the
    ``log_std`` entry for continuous actions only; MAPPO's critic's as ``"critic"``)."""
    params = []
    for team_key in jax.random.split(key, len(policy.teams.names)):
        if isinstance(policy.net, PolicyValueNet):
            team = {"net": policy.net.init(team_key, jnp.zeros((1, obs_dim)))}
        else:  # MAPPO's actor and critic, or a recurrent policy-value network
            net_key, critic_key = jax.random.split(team_key)
            team = {"net": models.init(policy.net, net_key, obs_dim)}
            if policy.critic is not None:
                team["critic"] = models.init(policy.critic, critic_key, policy.critic_dim)
        if policy.continuous:
            team["log_std"] = jnp.full((policy.net.out_size,), log_std_init, jnp.float32)
        params.append(team)
    return tuple(params)


def team_forward(policy: Policy, params: PyTree, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
    """One team's network on its agents' observations ``[..., N_k, obs_dim]``: policy
    outputs ``[..., N_k, out_size]`` and values ``[..., N_k]``."""
    return policy.net.apply(params["net"], obs)


def distribution(policy: Policy, params: PyTree, out: jax.Array, mask: jax.Array | None
                 ) -> distrax.Distribution:
    """A team's action distribution over policy outputs ``out [..., N_k, out_size]``:
    the categorical with unavailable actions (``mask [..., N_k, A]`` False) at probability
    0, the factored categorical (``policy.factors``; every action available, ``mask``
    unused), or the diagonal Gaussian ``N(out, exp(log_std))`` over ``[..., N_k, act_dim]``
    (events of ``act_dim`` components; the env executes the sample clipped to [0, 1])."""
    if policy.factors:
        return FactoredCategorical(out, policy.factors)
    if policy.continuous:
        scale = jnp.broadcast_to(jnp.exp(params["log_std"]), out.shape)
        return distrax.MultivariateNormalDiag(out, scale)
    return masked_categorical(out, mask)


def forward(policy: Policy, params: tuple[PyTree, ...], obs: jax.Array
            ) -> tuple[list[jax.Array], list[jax.Array]]:
    """Every team's network on its own agents: per team, outputs ``[..., N_k, out_size]``
    and values ``[..., N_k]`` from ``obs [..., N, obs_dim]``."""
    outs, values = [], []
    for k, team_params in enumerate(params):
        out, value = team_forward(policy, team_params, team_rows(policy.teams, k, obs, -2))
        outs.append(out)
        values.append(value)
    return outs, values


__all__ = ["Policy", "PolicyValueNet", "Teams", "distribution", "forward", "init_params",
           "make_policy", "merge_teams", "team_forward", "team_rows", "teams_of"]
