"""The learner protocol every learner family satisfies.

A learner is an :class:`Algo`: a bundle of pure functions ``init / policy / update`` (the
steps an update is composed of, to run or time apart, are an optional hook of the learner's
record: :attr:`~jaxmarl_accel.algos.registry.AlgoSpec.phases`). What it learns from is its
family's word, not the learner's: the family's record names its replay kind
(:attr:`~jaxmarl_accel.algos.registry.Family.replay`), whose record builds the trainer's
round (:class:`~jaxmarl_accel.trainer.rounds.RoundSpec`). The actor-critic family (MADDPG,
MATD3, MASAC: :mod:`jaxmarl_accel.algos.actor_critic.learner`) replays single transitions;
the value-based family (QMIX, VDN, IQL: recurrent agents on whole episodes, paper 004)
whole episodes; the on-policy family (A2C, PPO: one network per team, paper 003) the
rollout it just collected. The available actions and the global state a learner reads, the
trainer takes from the env whenever the env has them.

Every learner acts through one policy signature (:data:`~jaxmarl_accel.types.Policy`):
``algo.policy(explore)`` is ``(state, carry, key, obs, avail) -> (env_action, action_vec,
carry)`` for one env, and ``algo.initial_carry()`` its carry at an episode's start, ``()``
for a learner without memory; nothing outside a learner asks whether it is recurrent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from jaxmarl_accel.types import Policy, PyTree


class Algo(NamedTuple):
    """A learner as pure functions (see :func:`jaxmarl_accel.algos.make_algo`).

    Attributes:
      init: ``key -> state`` (the family's learner state, e.g.
        :class:`~jaxmarl_accel.algos.actor_critic.state.ActorCriticState`).
      policy: ``explore -> policy`` (``explore`` static: exploration or greedy actions), the
        learner's policy of ONE env (:data:`~jaxmarl_accel.types.Policy`): ``(state, carry,
        key, obs [N, obs_dim], avail [N, A] bool) -> (env_action, action_vec [N,
        action_dim], carry)``; ``env_action`` is ``[N]`` int32 (discrete) or
        ``[N, act_dim]`` float32 in ``[0, 1]`` (continuous), ``action_vec`` the vector the
        replay stores (one-hot, or the continuous action itself). ``avail`` is the env's
        available actions (``spec.action_mask`` when it has none); a learner may act over
        the valid actions alone (the actor-critic family and the feed-forward value agents,
        whose replay stores no masks, do).
      update: ``(state, batch, weights, key) -> (state, metrics, td_errors)``. For
        transition replay ``batch`` leaves are ``[B, N, ...]`` (one batch for all agents;
        weights ``[B]``; td_errors ``[B, N]``) or ``[N, B, N, ...]`` (agent i learns from
        ``batch[i]``; weights ``[N, B]``; td_errors ``[N, B]``). For episode replay
        ``batch`` is a :class:`~jaxmarl_accel.types.Episode` with leaves ``[B, T + 1, ...]``,
        weights ``[B]`` and td_errors ``[B]`` (one priority per episode). ``metrics`` maps
        names to scalars.
      action_dim: width of the action vector the replay stores.
      initial_carry: ``() -> carry`` of one env at an episode's start: the recurrent value
        agents' memory (leaves ``[N, ...]``: hidden state, previous action), ``()`` (the
        default) for a learner without memory.
      observe: ``(state, env_steps [] int32, episodes [] int32) -> state``, told by the
        trainer how many env steps and finished episodes it has seen before acting and
        updating (for schedules such as epsilon-greedy and target updates every K
        episodes); ``None`` for learners whose schedules count their own updates.
      on_policy: for a learner of rollouts, what the rollout round calls besides ``update``
        (:class:`~jaxmarl_accel.algos.on_policy.learner.OnPolicyFns`: sampling with
        log-probabilities and values); ``None`` for replay learners. ``update`` then takes
        the round's :class:`~jaxmarl_accel.types.Rollout` (leaves ``[T, E, ...]``), weights
        ``None``, and returns td_errors ``[]`` (unused).
    """

    init: Callable[[jax.Array], PyTree]
    policy: Callable[[bool], Policy]
    update: Callable[..., tuple[PyTree, dict[str, jax.Array], jax.Array]]
    action_dim: int
    initial_carry: Callable[[], PyTree] = tuple
    observe: Callable[[PyTree, jax.Array, jax.Array], PyTree] | None = None
    on_policy: Any = None
