"""Defaults that follow the run: a replay no larger than the run fills or the machine holds,
and an evaluation period that draws a curve of several points at any budget.

The command line resolves these for the flags a user leaves out (``--buffer-capacity``,
``--eval-every``); a value given, or set by ``--preset``, is kept as it is. The library's
``TrainConfig`` keeps its families' defaults (the papers' replay, an evaluation every
50,000 env steps): this module is where a command asks the machine.

* Replay capacity: the smallest of the family's default, the items one seed's whole run
  adds to its replay (transitions, or episodes for episode replay:
  ``RoundSpec.items_written``), and what :data:`MEMORY_SHARE` of the memory available now
  holds for all the run's lanes (seeds x sweep settings) by the estimate of
  :mod:`jaxmarl_accel.runs.memory`; never below the batch.
* Evaluation period: :func:`budget_eval_every`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import jax

from jaxmarl_accel.runs.memory import available_bytes, estimate_peak
from jaxmarl_accel.tree_util import tree_leaf_bytes

EVAL_EVERY_MOST = 50_000
"""The longest default evaluation period in env steps (``TrainConfig.eval_every``'s default)."""

EVAL_POINTS = 10
"""Evaluations the default period aims at over a run shorter than ``EVAL_POINTS x``
:data:`EVAL_EVERY_MOST` env steps."""

MEMORY_SHARE = 0.5
"""Share of the memory available at the start that a default replay may fill, all lanes
together, beside the run's other state; the rest is left to the compiled chunk's
temporaries and to other programs."""


class Fitted(NamedTuple):
    """A run's trainer with its defaults fitted, and the line that says what was chosen.

    Attributes:
      trainer: the run's ``Trainer`` (the one given where nothing changed).
      note: one line for the start of the run, or ``None`` when nothing was chosen.
    """

    trainer: Any
    note: str | None


def round_down_nicely(value: int) -> int:
    """The largest of 1, 2 or 5 x 10^k (k >= 0) not above ``value`` (>= 1): 1 below 2."""
    if value < 2:
        return 1
    power = 10 ** int(math.floor(math.log10(value)))
    return max(step * power for step in (1, 2, 5) if step * power <= value)


def budget_eval_every(total_steps: int, steps_per_round: int) -> int:
    """The default evaluation period of a run of ``total_steps`` env steps per seed whose
    rounds take ``steps_per_round``: ``min(EVAL_EVERY_MOST, total_steps / EVAL_POINTS)``,
    the latter rounded down to 1, 2 or 5 x 10^k (:func:`round_down_nicely`), then up to
    whole rounds (at least one): 1.5M steps give 50,000, 60,000 give 5,000, 20,000 give 2,000."""
    wanted = min(EVAL_EVERY_MOST, round_down_nicely(max(1, total_steps // EVAL_POINTS)))
    return max(1, math.ceil(wanted / steps_per_round)) * steps_per_round


def round_down_figures(value: int, figures: int = 2) -> int:
    """``value`` rounded down to its first ``figures`` significant digits (3,456 -> 3,400)."""
    if value < 10 ** figures:
        return value
    unit = 10 ** (len(str(value)) - figures)
    return value // unit * unit


def memory_capacity(trainer: Any, lanes: int) -> tuple[int, float, str]:
    """The largest replay capacity whose run of ``lanes`` lanes stays within
    :data:`MEMORY_SHARE` of the memory available now, by :func:`estimate_peak` of the
    training state at that capacity (the replay grows linearly with it, the rest of the
    state does not); with the available bytes and where that figure comes from."""
    free, where = available_bytes()
    on_host = "host" in where
    state = jax.eval_shape(trainer.init, jax.random.PRNGKey(0))
    replay = tree_leaf_bytes(state.buffer)
    per_item = replay / trainer.config.buffer_capacity
    rest = tree_leaf_bytes(state) - replay
    base = estimate_peak(lanes * rest, on_host)
    slope = (estimate_peak(lanes * (rest + int(per_item * 2**20)), on_host) - base) / 2**20
    room = MEMORY_SHARE * free - base
    return (max(0, int(room // slope)) if slope > 0 else 2**62), free, where


def fit_defaults(trainer: Any, make_trainer: Any, lanes: int, capacity_given: bool,
                 eval_every_given: bool) -> Fitted:
    """``trainer`` rebuilt (``make_trainer(config)``) with the default
    replay capacity and evaluation period of this run where the user left them out
    (``capacity_given`` / ``eval_every_given`` False), and the line that says what was
    chosen (``None`` when neither was left out, or nothing applies)."""
    config, plan = trainer.config, trainer.plan
    fields: dict[str, int] = {}
    parts = []
    if not eval_every_given:
        fields["eval_every"] = budget_eval_every(config.total_env_steps,
                                                 plan.schedule.steps_per_round)
        parts.append(f"an evaluation every {fields['eval_every']:,} env steps "
                     "(--eval-every sets it)")
    written = plan.round.items_written
    if not capacity_given and written is not None:
        capacity, why = capacity_choice(trainer, lanes, written(config, plan.schedule))
        fields["buffer_capacity"] = capacity
        parts.insert(0, f"replay capacity {capacity:,} {plan.round.item_name} per seed "
                        f"({why}; --buffer-capacity sets it)")
    if not parts:
        return Fitted(trainer, None)
    changed = {name: value for name, value in fields.items() if getattr(config, name) != value}
    if changed:
        trainer = make_trainer(dataclasses.replace(config, **changed))
    return Fitted(trainer, "defaults for this run: " + "; ".join(parts))


def capacity_choice(trainer: Any, lanes: int, written: int) -> tuple[int, str]:
    """The default replay capacity of ``trainer``'s run (built at its family's default) of
    ``lanes`` lanes that adds ``written`` items per seed, and why (the part that decided)."""
    config = trainer.config
    default = config.buffer_capacity
    held, free, where = memory_capacity(trainer, lanes)
    held = round_down_figures(held)
    choices = [(default, f"the family's default; the run adds {written:,}"),
               (written, f"all the run adds; the family's default is {default:,}"),
               (held, f"what {MEMORY_SHARE:.0%} of the {free / 2**30:.1f} GiB available on "
                      f"{where} holds for {lanes} lane(s); the run adds {written:,}")]
    capacity, why = min(choices, key=lambda choice: choice[0])
    if capacity < config.batch_size:  # the memory check then refuses with its own hint
        return config.batch_size, f"the batch; {why}"
    return capacity, why


__all__ = ["EVAL_EVERY_MOST", "EVAL_POINTS", "MEMORY_SHARE", "Fitted", "budget_eval_every",
           "capacity_choice", "fit_defaults", "memory_capacity", "round_down_figures",
           "round_down_nicely"]
