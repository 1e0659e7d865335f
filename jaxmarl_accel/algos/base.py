"""The learner protocol every learner family satisfies, and what a learner declares it needs.

A learner is an :class:`Algo`: a bundle of pure functions ``init / act / update`` plus the
``phases`` its update is composed of (to run or time apart), and a :class:`Needs`
declaration of what it needs from the replay and from the environment. The trainer picks
its round from ``needs.replay`` (:data:`jaxmarl_accel.trainer.rounds.ROUNDS`). The actor-critic
family (MADDPG, MATD3, MASAC: :mod:`jaxmarl_accel.algos.actor_critic.learner`) replays single
transitions and needs nothing else from the env; the value-based family (QMIX, VDN, IQL:
recurrent agents on whole episodes, paper 004) declares ``replay="episode"``, the env's
available-action masks and its global state; the on-policy family (A2C, PPO: one network
per team, paper 003) declares ``replay="rollout"``: it learns from the rollout it just
collected.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from jaxmarl_accel.types import PyTree

REPLAY_KINDS = ("transition", "episode", "rollout")


class Needs(NamedTuple):
    """What a learner needs from the replay and the environment.

    Attributes:
      replay: ``"transition"`` (batches of single joint transitions ``[B, N, ...]``) or
        ``"episode"`` (batches of whole episodes ``[B, T, N, ...]``) or ``"rollout"`` (no
        replay: the ``[T, E, ...]`` steps just collected, then the update). What else a
        learner reads (available actions, the global state) the trainer takes from the env
        whenever the env has it.
    """

    replay: str = "transition"


class Algo(NamedTuple):
    """A learner as pure functions (see :func:`jaxmarl_accel.algos.make_algo`).

    Attributes:
      init: ``key -> state`` (the family's learner state, e.g.
        :class:`~jaxmarl_accel.algos.actor_critic.state.ActorCriticState`).
      act: ``(state, obs [..., N, obs_dim], key, explore: bool) -> (env_action,
        action_vec [..., N, action_dim])``; ``env_action`` is ``[..., N]`` int32 (discrete)
        or ``[..., N, act_dim]`` float32 in ``[0, 1]`` (continuous). ``explore`` is static.
      update: ``(state, batch, weights, key) -> (state, metrics, td_errors)``. For
        transition replay ``batch`` leaves are ``[B, N, ...]`` (one batch for all agents;
        weights ``[B]``; td_errors ``[B, N]``) or ``[N, B, N, ...]`` (agent i learns from
        ``batch[i]``; weights ``[N, B]``; td_errors ``[N, B]``). For episode replay
        ``batch`` is a :class:`~jaxmarl_accel.types.Episode` with leaves ``[B, T + 1, ...]``,
        weights ``[B]`` and td_errors ``[B]`` (one priority per episode). ``metrics`` maps
        names to scalars.
      action_dim: width of the action vector the replay stores.
      phases: the steps ``update`` is composed of (e.g.
        :class:`~jaxmarl_accel.algos.actor_critic.state.Phases`), to run or time apart.
      needs: what the learner needs from the replay and the env (:class:`Needs`).
      initial_carry: for recurrent learners (episode replay), ``() -> carry`` of one env at
        an episode start (leaves ``[N, ...]``: hidden state, previous action); their ``act``
        is then ``(state, carry, obs [N, obs_dim], avail [N, A] bool, key, explore: bool)
        -> (env_action [N] int32, carry)`` for one env. On-policy learners have the empty
        carry ``()`` and act in that form too (their policies read the available actions).
        ``None`` for stateless policies.
      observe: ``(state, env_steps [] int32, episodes [] int32) -> state``, told by the
        trainer how many env steps and finished episodes it has seen before acting and
        updating (for schedules such as epsilon-greedy and target updates every K
        episodes); ``None`` for learners whose schedules count their own updates.
      on_policy: for ``needs.replay == "rollout"``, what the rollout round calls besides
        ``update`` (:class:`~jaxmarl_accel.algos.on_policy.learner.OnPolicyFns`: sampling
        with log-probabilities and values); ``None`` for replay learners. ``update`` then
        takes the round's :class:`~jaxmarl_accel.algos.on_policy.learner.Rollout` (leaves
        ``[T, E, ...]``), weights ``None``, and returns td_errors ``[]`` (unused).
    """

    init: Callable[[jax.Array], PyTree]
    act: Callable[..., tuple[jax.Array, jax.Array]]
    update: Callable[..., tuple[PyTree, dict[str, jax.Array], jax.Array]]
    action_dim: int
    phases: Any
    needs: Needs = Needs()
    initial_carry: Callable[[], PyTree] | None = None
    observe: Callable[[PyTree, jax.Array, jax.Array], PyTree] | None = None
    on_policy: Any = None
