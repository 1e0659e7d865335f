"""The trainer's rounds, one per replay kind a learner declares (``algo.needs.replay``).

A round is ``(state, round_index) -> (state, RoundOutput)`` plus its replay and schedule
(:class:`~.state.Round`); the trainer shell (:mod:`jaxmarl_accel.trainer.train`) runs chunks of
rounds, evaluates and reports the same way for every kind. A new kind is a module with a
``make_<kind>_round(config, env, env_params, algo) -> Round`` registered in :data:`ROUNDS`.
"""

from __future__ import annotations

from collections.abc import Callable

from jaxmarl_accel.trainer.rounds.episode import make_episode_round
from jaxmarl_accel.trainer.rounds.rollout import make_rollout_round
from jaxmarl_accel.trainer.rounds.state import (
    EpisodeEnds,
    Round,
    RoundFn,
    RoundOutput,
    TrainState,
    within_run,
)
from jaxmarl_accel.trainer.rounds.transition import make_transition_round

ROUNDS: dict[str, Callable[..., Round]] = {"transition": make_transition_round,
                                           "episode": make_episode_round,
                                           "rollout": make_rollout_round}
"""The round of each replay kind: ``make(config, env, env_params, algo) -> Round``."""

__all__ = ["ROUNDS", "EpisodeEnds", "Round", "RoundFn", "RoundOutput", "TrainState",
           "make_episode_round", "make_rollout_round", "make_transition_round", "within_run"]
