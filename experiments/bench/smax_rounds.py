"""``bench qmix_smax --breakdown``: what a round costs on each side once both learn.

A short side-by-side run does not compare the two learners at work: JaxMARL's ``qmix_rnn``
samples only once its trajectory buffer holds ``BUFFER_BATCH_SIZE`` (32) rounds along its
time axis (``min_length_time_axis``), so at its SMAX settings (16 envs x 128 steps a round)
it starts learning after 65,536 env steps whatever ``LEARNING_STARTS`` says, and in a run of
100K env steps it learns in 17 of its 48 rounds; ours learns from 10,000 counted env steps
on. Both sides therefore run once more with learning starting after the run, and the
difference splits a round into its collection and its updates:

* collection per round: the run without learning over its rounds (the one greedy test at
  the end, 512 episodes on each side, is spread over them);
* one update: the extra time of the run with learning over its updates.

The steady state is a round of each side with its updates, as its settings make them once
learning has started: ours, 16 whole episodes (their real steps: the run's mean episode
length times 16) and one update on 32 episodes; theirs, 16 envs x 128 steps and
``NUM_EPOCHS`` (8) updates on 32 trajectories of 128 steps. Its real env steps per second
are real steps per round over (collection + updates) per round, and ``steady_ratio`` is
ours over theirs.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import numpy as np


def split_round(with_learning: list[float], without: list[float], rounds: int,
                updates: int) -> tuple[float, float]:
    """Seconds of one round's collection and of one update, from the median seconds of the
    calls with and without learning (each a list over calls) and the run's rounds and
    updates."""
    full, collect = float(np.median(with_learning)), float(np.median(without))
    return collect / rounds, max(full - collect, 0.0) / max(updates, 1)


def steady_state(record: dict[str, Any], ours_rounds: int, ref_rounds: int,
                 ref_round_steps: int, ref_epochs: int) -> dict[str, Any]:
    """The split and the steady-state rates of both sides from ``record`` (the bench's
    record, holding ``{side}_seconds`` and ``{side}_seconds_without_learning``)."""
    out: dict[str, Any] = {}
    ours_real = float(np.median(record["ours_real_env_steps_per_seed"])) / ours_rounds
    for side, rounds, real_per_round, updates_per_round in (
            ("ours", ours_rounds, ours_real, 1),
            ("ref", ref_rounds, float(ref_round_steps), ref_epochs)):
        collect, update = split_round(record[f"{side}_seconds"],
                                      record[f"{side}_seconds_without_learning"], rounds,
                                      record[f"{side}_updates_per_seed"])
        round_s = collect + updates_per_round * update
        out.update({f"{side}_collect_ms_per_round": 1e3 * collect,
                    f"{side}_update_ms": 1e3 * update,
                    f"{side}_updates_per_round": updates_per_round,
                    f"{side}_real_steps_per_round": real_per_round,
                    f"{side}_steady_real_steps_per_s": real_per_round / round_s})
    out["steady_ratio"] = (out["ours_steady_real_steps_per_s"]
                           / out["ref_steady_real_steps_per_s"])
    return out


def run_without_learning(config: Any, reference: Any, ref_config: dict[str, Any],
                         keys: Any, steps: int, ref_steps: int) -> dict[str, Any]:
    """Both sides' programs once more with learning starting after the run (one seed,
    compiled and called as the bench's runs are); their seconds and compile times."""
    from experiments.bench.qmix import our_updates, reference_updates
    from experiments.bench.qmix_smax import our_win_rates, reference_win_rates, run_side
    from jaxmarl_accel.trainer.compiling import compiler_options
    from jaxmarl_accel.trainer.train import make_trainer

    quiet = dataclasses.replace(config, learning_starts=steps + 1)
    ours = run_side("ours", make_trainer(quiet).train, keys[:1], steps, our_win_rates,
                    our_updates, options=compiler_options())
    out = {"ours_seconds_without_learning": ours["ours_seconds"],
           "ours_updates_without_learning": ours["ours_updates_per_seed"]}
    if reference is not None:
        module = reference
        ref_quiet = {**copy.deepcopy(ref_config), "LEARNING_STARTS": steps + 1}
        env, _ = module.env_from_config(copy.deepcopy(ref_quiet))
        ref = run_side("ref", module.make_train(copy.deepcopy(ref_quiet), env), keys[:1],
                       ref_steps, reference_win_rates, reference_updates)
        out.update(ref_seconds_without_learning=ref["ref_seconds"],
                   ref_updates_without_learning=ref["ref_updates_per_seed"])
    return out


def breakdown(record: dict[str, Any], config: Any, reference: Any,
              ref_config: dict[str, Any], keys: Any, ref_round: int, ours_rounds: int,
              ref_epochs: int) -> None:
    """Adds to ``record`` the runs without learning and, with a reference, the split and the
    steady state (:func:`steady_state`); prints the steady-state rates."""
    steps = config.total_env_steps
    ref_steps = steps // ref_round * ref_round
    record.update(run_without_learning(config, reference, ref_config, keys, steps, ref_steps))
    if reference is None:
        return
    record.update(steady_state(record, ours_rounds, ref_steps // ref_round, ref_round,
                               ref_epochs))
    print(f"steady state: ours {record['ours_steady_real_steps_per_s']:,.0f}, theirs "
          f"{record['ref_steady_real_steps_per_s']:,.0f} real env steps/s (ratio "
          f"{record['steady_ratio']:.2f})", flush=True)
