"""``bench qmix_smax --breakdown``: what a round costs on each side once both learn.

A short side-by-side run does not compare the two learners at work: JaxMARL's ``qmix_rnn``
samples only once its trajectory buffer holds ``BUFFER_BATCH_SIZE`` (32) rounds along its
time axis (``min_length_time_axis``), so at its SMAX settings (16 envs x 128 steps a round)
it starts learning after 65,536 env steps whatever ``LEARNING_STARTS`` says, and in a run of
100K env steps it learns in 17 of its 48 rounds; ours learns from 10,000 counted env steps
on. Each side therefore also runs without learning (learning starting after the run), once
at the bench's length and once at twice it, one seed each:

* collection per round: the difference of the two runs without learning over the rounds the
  longer one adds, so that what both lengths share (initialization, the greedy tests: ours
  512 episodes at the end, theirs 512 envs x 128 steps before and after training) cancels;
* one update: the run with learning minus the run without it at the same length, over the
  updates.

The steady state is a round of each side with its updates, as its settings make them once
learning has started: ours, 16 whole episodes (their real steps: the learning run's mean
episode length times 16) and one update on 32 episodes; theirs, 16 envs x 128 steps and
``NUM_EPOCHS`` (8) updates on 32 trajectories of 128 steps. Its real env steps per second
are real steps per round over (collection + updates) per round, and ``steady_ratio`` is
ours over theirs. Ours without learning acts by an untrained network, so its battles may
last otherwise than in the learning run; the collection figure is per round at those
lengths.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import jax.numpy as jnp
import numpy as np

from experiments.bench.qmix import our_updates, reference_updates
from experiments.bench.smax_sides import our_win_rates, reference_win_rates, run_side
from jaxmarl_accel.trainer.compiling import compiler_options
from jaxmarl_accel.trainer.train import make_trainer


def split_round(record: dict[str, Any], side: str, extra_rounds: int) -> tuple[float, float]:
    """Seconds of one round's collection and of one update of ``side`` from the bench's
    ``record``: the median seconds of its calls with learning (``{side}_seconds``), the
    fastest of its calls without learning at the same length and at twice it
    (``{side}_seconds_without_learning``, ``{side}_seconds_without_learning_2x``), and the
    ``extra_rounds`` the longer run adds."""
    full = float(np.median(record[f"{side}_seconds"]))
    quiet = min(record[f"{side}_seconds_without_learning"])
    quiet_2x = min(record[f"{side}_seconds_without_learning_2x"])
    updates = max(record[f"{side}_updates_per_seed"], 1)
    return max(quiet_2x - quiet, 0.0) / extra_rounds, max(full - quiet, 0.0) / updates


def steady_state(record: dict[str, Any], ours_rounds: int, ref_round_steps: int,
                 ref_epochs: int) -> dict[str, Any]:
    """The split (:func:`split_round`) and the steady-state rates of both sides from the
    bench's ``record`` (with ``{side}_extra_rounds``, the rounds that the run without
    learning at twice the length adds): ``ours_rounds`` (the learning run's, for its real
    steps per round), theirs steps per round and updates per round."""
    out: dict[str, Any] = {}
    ours_real = float(np.median(record["ours_real_env_steps_per_seed"])) / ours_rounds
    for side, real_per_round, updates_per_round in (
            ("ours", ours_real, 1), ("ref", float(ref_round_steps), ref_epochs)):
        collect, update = split_round(record, side, record[f"{side}_extra_rounds"])
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
                         keys: Any, ref_round: int) -> dict[str, Any]:
    """Both sides' programs without learning (it starts after the run), at the bench's
    length and at twice it, one seed, compiled as the bench's runs are and called twice with
    the same key (the first call in a process may pay one-time costs): their seconds
    (``{side}_seconds_without_learning`` and ``..._2x``) and the rounds the longer run adds
    (``ref_extra_rounds``; ours, the bench's rounds)."""
    steps, twice = config.total_env_steps, jnp.concatenate([keys[:1], keys[:1]])
    out: dict[str, Any] = {}
    for factor, suffix in ((1, ""), (2, "_2x")):
        total = factor * steps
        quiet = dataclasses.replace(config, total_env_steps=total, eval_every=total,
                                    learning_starts=total + 1)
        ours = run_side("ours", make_trainer(quiet).train, twice, total, our_win_rates,
                        our_updates, options=compiler_options())
        out[f"ours_seconds_without_learning{suffix}"] = ours["ours_seconds"]
        if reference is None:
            continue
        ref_quiet = {**copy.deepcopy(ref_config), "TOTAL_TIMESTEPS": total,
                     "LEARNING_STARTS": total + 1}
        env, _ = reference.env_from_config(copy.deepcopy(ref_quiet))
        ref = run_side("ref", reference.make_train(copy.deepcopy(ref_quiet), env), twice,
                       total // ref_round * ref_round, reference_win_rates, reference_updates)
        out[f"ref_seconds_without_learning{suffix}"] = ref["ref_seconds"]
    out["ref_extra_rounds"] = 2 * steps // ref_round - steps // ref_round
    return out


def breakdown(record: dict[str, Any], config: Any, reference: Any,
              ref_config: dict[str, Any], keys: Any, ref_round: int, ours_rounds: int,
              ref_epochs: int) -> None:
    """Adds to ``record`` the runs without learning (:func:`run_without_learning`) and,
    with a reference, the split and the steady state (:func:`steady_state`); prints the
    steady-state rates."""
    record.update(run_without_learning(config, reference, ref_config, keys, ref_round))
    record["ours_extra_rounds"] = ours_rounds
    if reference is None:
        return
    record.update(steady_state(record, ours_rounds, ref_round, ref_epochs))
    print(f"steady state: ours {record['ours_steady_real_steps_per_s']:,.0f}, theirs "
          f"{record['ref_steady_real_steps_per_s']:,.0f} real env steps/s (ratio "
          f"{record['steady_ratio']:.2f})", flush=True)
