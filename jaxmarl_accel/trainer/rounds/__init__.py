"""The trainer's rounds, one per replay kind, each a registered record
(:class:`~.record.RoundSpec`: name, checks, schedule, round).

A round is ``(state, round_index) -> (state, RoundOutput)`` plus its replay and schedule
(:class:`~.state.Round`); the trainer shell (:mod:`jaxmarl_accel.trainer.train`) runs chunks of
rounds, evaluates and reports the same way for every kind. A learner family names the kind
a config of it learns from (``Family.replay``); :func:`round_of` finds its record. A new
kind is a module that registers its own record (:func:`register_round`), here or in user
code.
"""

from __future__ import annotations

from jaxmarl_accel.trainer.rounds.record import (
    RoundSpec,
    Schedule,
    register_round,
    registered_rounds,
    round_of,
    round_spec,
)
from jaxmarl_accel.trainer.rounds.state import (
    EpisodeEnds,
    Round,
    RoundFn,
    RoundOutput,
    TrainState,
    within_run,
)

# isort: split
# each round module registers its own record; this order is ROUNDS's
from jaxmarl_accel.trainer.rounds.transition import TRANSITION, make_transition_round  # noqa: E402

# isort: split
from jaxmarl_accel.trainer.rounds.episode import EPISODE, make_episode_round  # noqa: E402

# isort: split
from jaxmarl_accel.trainer.rounds.rollout import ROLLOUT, make_rollout_round  # noqa: E402

ROUNDS: dict[str, RoundSpec] = {name: round_spec(name) for name in registered_rounds()}
"""The package's own replay kinds by name, in the order their modules register them;
:func:`registered_rounds` lists every registered one, user code's too."""

__all__ = ["EPISODE", "ROLLOUT", "ROUNDS", "TRANSITION", "EpisodeEnds", "Round", "RoundFn",
           "RoundOutput", "RoundSpec", "Schedule", "TrainState", "make_episode_round",
           "make_rollout_round", "make_transition_round", "register_round",
           "registered_rounds", "round_of", "round_spec", "within_run"]
