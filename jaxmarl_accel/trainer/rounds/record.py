"""The one registry of replay kinds: one :class:`RoundSpec` record per kind of round.

A replay kind is what a learner learns from (single joint transitions, whole episodes, the
rollout it just collected) and the round the trainer runs for it. Its record says
everything the rest of the package asks about it: its name, its checks of a run's
settings, its schedule (rounds, chunks, updates, the clock), how to build its round, and
what to lower when its run does not fit in memory. A learner family's record names the
kind a config of it learns from (:attr:`~jaxmarl_accel.algos.registry.Family.replay`);
nothing outside the rounds and the families tests a kind's name.

Each round module registers its own record (:mod:`~.transition`, :mod:`~.episode`,
:mod:`~.rollout`, imported by :mod:`jaxmarl_accel.trainer.rounds`); user code registers the
same way::

    import jaxmarl_accel as jm
    jm.register_round(jm.RoundSpec(name="my_round", make=..., check=..., schedule=...))

or its family's ``replay`` returns the record itself, or a reference ``package.module:ROUND``
(loaded on first use, as ``--algo package.module:SPEC`` is).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

from jaxmarl_accel.algos.registry import algo_spec
from jaxmarl_accel.checks import choice_message
from jaxmarl_accel.user_code import is_reference, load_record


class Schedule(NamedTuple):
    """A run's rounds on its clock, the same for every seed (derived from ``config`` and the
    env, never from a seed's own counts).

    Attributes:
      steps_per_round: env steps on the run's clock per round (summed over envs).
      rounds_per_chunk: rounds between two evaluations (a chunk: what the host runs at once).
      total_rounds: rounds in the whole run.
      updates_per_round: learner updates in a round that learns (as the metrics count them).
      first_update_step: the run's clock at the end of the first round that learns.
      clock_stride: env steps on the run's clock between two actions of one env: the steps
        of all ``E`` envs, or a whole round when every env runs a whole episode per round
        (what an exploration schedule on the clock is read at).
    """

    steps_per_round: int
    rounds_per_chunk: int
    total_rounds: int
    updates_per_round: int
    first_update_step: int
    clock_stride: int


@dataclasses.dataclass(frozen=True, eq=False)
class RoundSpec:
    """One replay kind and its round, registered once (:func:`register_round`).

    Attributes:
      name: the name a family's ``replay`` gives, e.g. ``"transition"``.
      make: ``(config, env, env_params, algo) -> Round`` (:class:`~.state.Round`), the
        round of a run of ``config`` (a ``TrainConfig``) with the built learner ``algo``.
      schedule: ``(config, env_spec, algo) -> Schedule`` of such a run.
      check: ``config -> None``, a one-line ValueError for run settings this kind cannot run
        (called by ``TrainConfig`` after its learner's own checks); ``None`` for none.
      describe: ``(config, schedule) -> str``, what one round is (the command line's note
        when a run's budget is rounded up to whole rounds), e.g. ``"one whole episode of 25
        steps in each of the --num-envs 8 envs"``.
      summary: one line for help and docs.
      memory_hint: what to lower when a run of this kind does not fit in memory.
      temporaries_hint: what the compiled chunk's temporaries grow with, added to
        ``memory_hint`` when they count.
      items_written: ``(config, schedule) -> int``, the items one seed's whole run adds to
        its replay (what ``buffer_capacity`` counts); ``None`` for a kind without a replay.
      item_name: what ``buffer_capacity`` counts, plural (``"transitions"``).
    """

    name: str
    make: Callable[..., Any]
    schedule: Callable[[Any, Any, Any], Schedule]
    check: Callable[[Any], None] | None = None
    describe: Callable[[Any, Schedule], str] = lambda config, schedule: "whole rounds"
    summary: str = ""
    memory_hint: str = "lower --buffer-capacity, --seeds or --num-envs"
    temporaries_hint: str = "or --batch-size, which the temporaries grow with"
    items_written: Callable[[Any, Schedule], int] | None = None
    item_name: str = "transitions"


_ROUNDS: dict[str, RoundSpec] = {}


def register_round(spec: RoundSpec, *, replace: bool = False) -> RoundSpec:
    """Register replay kind ``spec`` under ``spec.name`` and return it; a one-line
    ValueError when ``spec`` is not a :class:`RoundSpec` or the name is taken (unless
    ``replace``)."""
    if not isinstance(spec, RoundSpec):
        raise ValueError(f"register_round takes a RoundSpec, got {type(spec).__name__}")
    if not spec.name or not isinstance(spec.name, str):
        raise ValueError(f"register_round: name must be a non-empty string, got {spec.name!r}")
    if spec.name in _ROUNDS and _ROUNDS[spec.name] is not spec and not replace:
        raise ValueError(f"round {spec.name!r} is already registered; choose another name")
    _ROUNDS[spec.name] = spec
    return spec


def round_spec(kind: str | RoundSpec) -> RoundSpec:
    """The record of replay kind ``kind``: a :class:`RoundSpec` itself, a registered name, or
    a reference ``package.module:attr`` to a :class:`RoundSpec` in user code (loaded and
    registered under the reference on first use). One-line ValueError otherwise."""
    if isinstance(kind, RoundSpec):
        return kind
    if isinstance(kind, str) and kind in _ROUNDS:
        return _ROUNDS[kind]
    if is_reference(kind):
        spec = load_record(kind, "round", RoundSpec)
        _ROUNDS[kind] = spec
        return spec
    raise ValueError(choice_message(
        "round", kind, (*(n for n in _ROUNDS if not is_reference(n)), "package.module:ROUND")))


def round_of(config: Any) -> RoundSpec:
    """The record of the replay kind a run of ``config`` (a ``TrainConfig``) uses: the one
    its learner's family names for the learner's hyperparameters (``Family.replay``)."""
    record = algo_spec(config.algo)
    try:
        return round_spec(record.family.replay(config.learner))
    except ValueError as error:
        raise ValueError(f"algo {config.algo!r}: its family {record.family.name!r} asks for "
                         f"a replay kind the trainer cannot run: {error}") from None


def registered_rounds() -> tuple[str, ...]:
    """The registered replay kinds' names, in registration order (the package's own first)."""
    return tuple(_ROUNDS)


__all__ = ["RoundSpec", "Schedule", "register_round", "registered_rounds", "round_of",
           "round_spec"]
