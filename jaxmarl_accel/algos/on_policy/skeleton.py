"""The parts every on-policy learner is made of: its state, the rollout round's functions
(:class:`OnPolicyFns`), minibatches and the :class:`Skeleton` of static parts that the
functions of :mod:`~.acting` and :mod:`~.learner` take first."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxmarl_accel.algos.on_policy import losses
from jaxmarl_accel.algos.on_policy import networks as nets
from jaxmarl_accel.algos.on_policy.config import (
    PPO_LIKE,
    OnPolicyConfig,
    normalizes_advantage,
    team_learning_rates,
)
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import PyTree


@struct.dataclass
class OnPolicyState:
    """Learner state.

    Attributes:
      params: one parameter tree per team (:func:`~.networks.init_params`).
      opt_state: one Adam state per team.
      updates: ``[]`` int32 gradient steps taken.
      value_norm: with ``normalize_value``, one :class:`~.losses.ValueNorm` per team (its
        value targets' running moments); else ``()``.
    """

    params: tuple[PyTree, ...]
    opt_state: tuple[PyTree, ...]
    updates: jax.Array
    value_norm: tuple[losses.ValueNorm, ...] = ()


class PolicyStep(NamedTuple):
    """Exploration actions of every agent with what the update needs of them.

    Attributes:
      env_action: ``[..., N]`` int32 (discrete) or ``[..., N, act_dim]`` in [0, 1] (the
        Gaussian sample clipped), what the env executes.
      action: what the log-probability is of: the discrete index ``[..., N]`` or the
        unclipped Gaussian sample ``[..., N, act_dim]``.
      log_prob: ``[..., N]`` log pi(action | obs).
      value: ``[..., N]`` V(obs).
    """

    env_action: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array


class OnPolicyFns(NamedTuple):
    """What the rollout round calls besides ``update`` (its contract:
    :mod:`jaxmarl_accel.trainer.rounds.rollout`).

    Attributes:
      sample: ``(state, carry, obs [E, N, obs_dim], world [E, S] or None, avail [E, N, A]
        bool or None, key) -> (PolicyStep, carry)``, :class:`PolicyStep` leaves ``[E, N,
        ...]``; the carry after the step (before any reset at an episode's end).
      value: ``(state, carry, obs [E, N, obs_dim], world [E, S] or None, avail [E, N, A]
        bool or None) -> [E, N]`` the values of the observations a step reached, from the
        carry :attr:`sample` returned; ``avail`` the actions available there (``None``: the
        spec's valid actions), which only learners of action values read.
      rollout_length: T, env steps per env in one rollout.
      initial_carry: ``num_envs -> carry`` of ``E`` envs at an episode's start (leaves ``[E,
        ...]``), ``()`` for networks without memory.
      reads_world: whether ``sample`` and ``value`` read the global state (``world``: the
        env's ``state_of``, or the concatenated observations); ``None`` is passed when not.
    """

    sample: Any
    value: Any
    rollout_length: int
    initial_carry: Any = lambda num_envs: ()
    reads_world: bool = False


class Minibatch(NamedTuple):
    """Joint steps to learn from (leaves ``[B, N, ...]``; ``avail`` may be ``None``). For
    recurrent networks, whole env sequences: leaves ``[T, B, N, ...]``, with ``carry`` the
    carry each sequence started from (leaves ``[B, ...]``) and ``first`` ``[T, B]`` 1 where
    a step's observation starts an episode. ``world`` ``[B, S]`` (``[T, B, S]``): MAPPO's
    global state, else ``None``."""

    obs: jax.Array
    action: jax.Array
    log_prob: jax.Array
    advantage: jax.Array
    target: jax.Array
    avail: jax.Array | None
    world: jax.Array | None = None
    carry: PyTree = None
    first: jax.Array | None = None


class Skeleton(NamedTuple):
    """The static parts of one on-policy learner, fixed by :func:`build` before tracing: the
    functions below take it first.

    Attributes:
      spec: the env spec.
      config: the hyperparameters.
      policy: the teams' networks (:func:`~.networks.make_policy`).
      txs: one optax transformation per team (its clipping and learning rate).
      ppo: PPO or MAPPO (True), or A2C.
      epochs, minibatches: PPO's, or ``(1, 1)`` for A2C.
      lam: GAE lambda (1 for A2C's n-step returns).
      normalize: advantages standardized per minibatch.
    """

    spec: EnvSpec
    config: OnPolicyConfig
    policy: nets.Policy
    txs: tuple[Any, ...]
    ppo: bool
    epochs: int
    minibatches: int
    lam: float
    normalize: bool


def init(s: Skeleton, key: jax.Array) -> OnPolicyState:
    """A fresh learner: every team's parameters and Adam state (and value moments)."""
    params = nets.init_params(s.policy, key, s.spec.obs_dim, s.config.log_std_init)
    return OnPolicyState(
        params=params, opt_state=tuple(tx.init(p) for tx, p in zip(s.txs, params, strict=True)),
        updates=jnp.zeros((), jnp.int32),
        value_norm=(tuple(losses.value_norm_init() for _ in s.txs)
                    if s.config.normalize_value else ()))


def unnormalized(s: Skeleton, state: OnPolicyState, vals: list[jax.Array]) -> list[jax.Array]:
    """The teams' value-head outputs ``[..., N_k]`` as values (ValueNorm undone)."""
    if not s.config.normalize_value:
        return vals
    moments = [losses.value_norm_moments(norm) for norm in state.value_norm]
    return [mu + sigma * v for v, (mu, sigma) in zip(vals, moments, strict=True)]


def team_mask(s: Skeleton, k: int, avail: jax.Array | None) -> jax.Array | None:
    """Team ``k``'s available actions ``[..., N_k, A]`` (the spec's when ``avail`` is None);
    None for continuous actions."""
    if s.spec.continuous:
        return None
    return nets.team_rows(s.policy.teams, k, s.spec.action_mask if avail is None else avail,
                          -2)


MAX_CRITIC_INPUT = 1 << 22
"""Most floats MAPPO's critic inputs of one env step may take (``N x (S + N)``, 16 MiB):
beyond it the global state cannot be formed at this scale (e.g. 1,000 agents' concatenated
observations, given to each agent)."""


def check_world(spec: EnvSpec) -> None:
    """A one-line ValueError when MAPPO's critic input (:func:`~.models.critic_input`) of
    ``spec`` would exceed :data:`MAX_CRITIC_INPUT` floats per env step."""
    width = spec.state_dim or spec.num_agents * spec.obs_dim
    size = spec.num_agents * (width + spec.num_agents)
    if size > MAX_CRITIC_INPUT:
        source = ("global state" if spec.state_dim else
                  f"concatenated observations ({spec.num_agents} x {spec.obs_dim})")
        raise ValueError(f"algo 'mappo': the global state of {spec.name} cannot be formed at "
                         f"this scale: its {source} of {width} floats, with the agent one-hot, "
                         f"for each of {spec.num_agents} agents is {size:,} floats per env "
                         f"step (at most {MAX_CRITIC_INPUT:,})")


def make_skeleton(name: str, spec: EnvSpec, config: OnPolicyConfig) -> Skeleton:
    """The static parts of on-policy learner ``name`` for ``spec``: the teams' networks,
    one optimizer per team, the epochs and minibatches (PPO's; A2C: one of each)."""
    centralized = name == "mappo"
    if centralized:
        check_world(spec)
    policy = nets.make_policy(spec, config.hidden_sizes, config.factored_actions,
                              centralized=centralized, recurrent=config.agent == "rnn")
    ppo = name in PPO_LIKE
    clip = [optax.clip_by_global_norm(config.grad_clip)] if config.grad_clip is not None else []
    txs = tuple(optax.chain(*clip, optax.adam(lr))
                for lr in team_learning_rates(config, policy.teams.names))
    return Skeleton(spec, config, policy, txs, ppo,
                    *((config.epochs, config.minibatches) if ppo else (1, 1)),
                    config.gae_lambda if ppo else 1.0, normalizes_advantage(name, config))


__all__ = ["MAX_CRITIC_INPUT", "Minibatch", "OnPolicyFns", "OnPolicyState", "PolicyStep",
           "Skeleton", "check_world", "init", "make_skeleton", "team_mask", "unnormalized"]
