"""Progress and the learning curve of a JaxMARL baseline run as one compiled call.

JaxMARL's ``qmix_rnn.py`` and ``vdn_rnn.py`` train a seed in one ``jax.lax.scan``: on this
CPU a 2s3z seed is one call of hours with nothing printed. Their only window is their wandb
report: when ``WANDB_MODE`` is not ``"disabled"`` every round (``NUM_STEPS`` steps of every
env, then ``NUM_EPOCHS`` updates) hands its metrics to a ``jax.debug.callback`` that calls
``wandb.log``. :class:`ReferenceProgress` stands in for the script's ``wandb``: it keeps each
round's metrics per seed (a learning curve for the record) and prints a line every
``1 / parts`` of the run. The program is theirs unchanged but for that callback, a copy of a
few scalars to the host once a round.

``python -m experiments.bench reference_progress --jaxmarl-src PATH --json FILE`` measures
what that costs: the script's program with the report off and on, compiled apart and timed
in interleaved calls, by default over rounds that collect only (fewer env steps than its
first update needs), the cheapest rounds and so the largest share the report can take.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import time
from typing import Any

import jax
import numpy as np

from experiments.bench import smax_sides
from experiments.bench.qmix import reference_updates
from experiments.bench.timing import Side, run_sides, write_record

CURVE_KEYS = ("env_step", "update_steps", "returned_won_episode", "returned_episode_returns",
              "loss")
"""The per-round metrics kept (each the mean over the round's envs, steps and agents, as the
script averages them; ``returned_won_episode``: whether each env's last finished battle was
won)."""
_SEED_KEY = re.compile(r"rng(-?\d+)/env_step$")


class ReferenceProgress:
    """The reference script's ``wandb`` while it trains ``total_steps`` env steps per seed."""

    def __init__(self, total_steps: int, parts: int = 20, name: str = "ref",
                 keys: Any = None) -> None:
        """``keys``: the ``[S, 2]`` seed keys the script trains, to name a seed by its index
        there (the script reports a seed by its key's first word)."""
        self.total_steps, self.name = total_steps, name
        self.labels = {int(key[0]): index for index, key in enumerate(np.asarray(keys))
                       } if keys is not None else {}
        self.every = max(1, total_steps // parts)
        self.rows: dict[int, list[dict[str, float]]] = {}
        self.started: dict[int, tuple[float, float]] = {}  # seed -> (time, env step)
        self.last: dict[int, tuple[float, float]] = {}  # at its last line

    def attach(self, module: Any, config: dict[str, Any]) -> dict[str, Any]:
        """A copy of the script's ``config`` with its per-round report on (each seed's
        metrics under ``rng<seed>/``), this object installed as ``module.wandb``."""
        module.wandb = self
        return {**copy.deepcopy(config), "WANDB_MODE": "bench-progress",
                "WANDB_LOG_ALL_SEEDS": True}

    def log(self, metrics: dict[str, Any]) -> None:
        """One round's metrics of one seed (the script's callback; called on the host)."""
        seed = next((int(m.group(1)) for key in metrics if (m := _SEED_KEY.match(key))), 0)
        row = {key: float(np.mean(metrics[key])) for key in CURVE_KEYS if key in metrics}
        rows = self.rows.setdefault(seed, [])
        now, step = time.perf_counter(), row.get("env_step", 0.0)
        if not rows or step <= rows[-1].get("env_step", 0.0):
            rows.clear()  # the seed's program called again: its curve starts over
            self.started[seed] = self.last[seed] = (now, step)
        rows.append(row)
        if int(step) // self.every > int(self.last[seed][1]) // self.every:
            # time left at the rate since the last line (rounds before learning are faster)
            last_time, last_step = self.last[seed]
            left = (now - last_time) * (self.total_steps - step) / max(step - last_step, 1.0)
            self.last[seed] = (now, step)
            print(f"  {self.name} seed {self.labels.get(seed, seed)}: {step:,.0f} of "
                  f"{self.total_steps:,} env steps, {now - self.started[seed][0]:,.0f} s "
                  f"(about {left:,.0f} s left), training win "
                  f"{row.get('returned_won_episode', float('nan')):.3f}, "
                  f"loss {row.get('loss', float('nan')):.4f}", flush=True)

    def curves(self) -> list[dict[str, Any]]:
        """Each seed's curve, in the order the seeds first reported: ``seed`` (its index in
        ``keys``, else its key's first word), then metric -> value per round."""
        return [{"seed": self.labels.get(seed, seed),
                 **{key: [row[key] for row in rows if key in row] for key in CURVE_KEYS}}
                for seed, rows in self.rows.items()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The cost bench's flags."""
    parser.add_argument("--jaxmarl-src", required=True,
                        help="root of a local copy of the JaxMARL repository")
    parser.add_argument("--algo", default="qmix", choices=("qmix", "vdn"),
                        help="JaxMARL's script: qmix_rnn.py (default) or vdn_rnn.py")
    parser.add_argument("--map", default="3m", help="SMAX map (default: 3m)")
    parser.add_argument("--env-steps", type=float, default=6e4,
                        help="env steps per call (default: 6e4, before the first update of "
                             "its SMAX settings at 65,536)")
    parser.add_argument("--reps", type=int, default=3, help="timed calls per side (default: 3)")
    parser.add_argument("--json", default=None, help="write the record to this JSON file")


def main(args: argparse.Namespace) -> None:
    if args.reps < 1 or args.env_steps < 1:
        raise ValueError("--reps and --env-steps must be >= 1")
    module, base = smax_sides.load_reference(args.jaxmarl_src, args.algo)
    settings = smax_sides.settings_from(base)
    config = smax_sides.reference_config(base, settings, args.map, int(args.env_steps))
    env, _ = module.env_from_config(copy.deepcopy(config))
    round_steps = settings.num_envs * settings.num_steps
    steps = int(args.env_steps) // round_steps * round_steps
    progress = ReferenceProgress(steps, name="report on")
    keys = jax.random.split(jax.random.PRNGKey(0), 1)
    record: dict[str, Any] = {"reference": os.path.abspath(args.jaxmarl_src),
                              "algo": args.algo, "map": args.map, "reps": args.reps,
                              "load_average_start": list(os.getloadavg())}
    sides = [Side("off", module.make_train(copy.deepcopy(config), env), keys, steps,
                  reference_updates),
             Side("on", module.make_train(progress.attach(module, config), env), keys, steps,
                  reference_updates)]
    run_sides(sides, args.reps)
    for side in sides:
        record.update(side.summary())
    record.update(rounds=steps // round_steps, load_average_end=list(os.getloadavg()),
                  on_over_off_fastest=min(sides[1].samples) / min(sides[0].samples),
                  on_over_off_median=float(np.median(sides[1].samples)
                                           / np.median(sides[0].samples)))
    write_record(args.json, record)
    print(f"{args.algo} on {args.map}, {record['rounds']} rounds of {round_steps:,} env steps, "
          f"{record['off_updates_per_seed']} updates: report on / off "
          f"{record['on_over_off_fastest']:.3f} fastest, {record['on_over_off_median']:.3f} "
          f"median of {args.reps}", flush=True)
