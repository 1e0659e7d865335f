"""Where AccMER's reused set S- comes from, read from a run's checkpoint.

    python -m experiments.reuse_set runs/fig3b/accmer-fig3b --json reuse_set.json
    python -m experiments.reuse_set RUN_DIR --step 5

For each seed of the checkpoint (the newest, or ``--step``), the reuse sampler's state
(:mod:`jaxmarl_accel.buffers.reuse`: S- ``[S, K]``, the weight table ``[S, C]``) against
the replay's write position: how old S-'s episodes are (0 = the newest stored), how many of
them are among the K oldest stored (the initial S- of paper 004's Alg. 1 is the first K
slots), how far into its window the sampler is, S-'s weights beside the table's, and, for
episode replay, S-'s mean episode return (the team reward summed over the episode) beside
that of every stored episode. Only the sampler's few arrays and the rewards are read
(:func:`~jaxmarl_accel.cli.checkpoint.read_streamed`), not the observations.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import numpy as np

from experiments.bench.timing import write_record

NAMES = (".buffer.sampler.reused", ".buffer.sampler.weights", ".buffer.sampler.window",
         ".buffer.sampler.window_step", ".buffer.size", ".buffer.write_pos")
REWARD = ".buffer.experience.reward"
"""Episode replay's team rewards ``[S, C, T + 1]``, read when the checkpoint streams them."""


def reuse_set(arrays: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """One summary per seed of a reuse sampler's arrays (:data:`NAMES`, each with a leading
    seed axis S): S-'s ages in episodes ``[K]`` (0 = the newest stored), how many of S- are
    among the K oldest stored, the window's length and position, S-'s median weight and the
    filled table's median and maximum; with :data:`REWARD` ``[S, C, T + 1]`` also S-'s
    and the stored episodes' mean return."""
    reused, weights = arrays[NAMES[0]], arrays[NAMES[1]]
    capacity, num_reused = weights.shape[-1], reused.shape[-1]
    rows = []
    for seed in range(reused.shape[0]):
        size, pos = int(arrays[".buffer.size"][seed]), int(arrays[".buffer.write_pos"][seed])
        age = (pos - 1 - reused[seed]) % capacity
        filled = weights[seed][np.isfinite(weights[seed])]
        rows.append({
            "seed": seed, "stored": size, "reused": num_reused,
            "window": int(arrays[".buffer.sampler.window"][seed]),
            "window_step": int(arrays[".buffer.sampler.window_step"][seed]),
            "age_median": float(np.median(age)), "age_min": int(age.min()),
            "age_max": int(age.max()),
            "among_oldest": int(np.sum(age >= size - num_reused)),
            "reused_weight_median": float(np.median(weights[seed][reused[seed]])),
            "table_weight_median": float(np.median(filled)) if filled.size else None,
            "table_weight_max": float(filled.max()) if filled.size else None,
        })
        if REWARD in arrays and arrays[REWARD].ndim == 3:  # episodes: [S, C, T + 1]
            returns = arrays[REWARD][seed].sum(-1)
            rows[-1]["reused_return_mean"] = float(returns[reused[seed]].mean())
            rows[-1]["stored_return_mean"] = float(returns[:size].mean())
    return rows


def env_steps_at(run_dir: str, step: int) -> int | None:
    """The env steps per seed after chunk ``step``, from the run's ``metrics.csv``."""
    from jaxmarl_accel.cli import outputs

    steps = [int(row["env_steps"]) for row in outputs.read_rows(run_dir)
             if int(row["chunk"]) == step]
    return steps[0] if steps else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.reuse_set", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", help="a run folder (experiments.run --out) of --algo "
                                        "accmer or --sampler reuse, with checkpoints")
    parser.add_argument("--step", type=int, default=None,
                        help="the checkpoint (chunk) to read (default: the newest)")
    parser.add_argument("--json", default=None, help="write the record to this file")
    args = parser.parse_args(argv)
    from jaxmarl_accel.cli.checkpoint import Checkpoints, read_streamed

    folder = os.path.join(args.run_dir, "checkpoints")
    step = Checkpoints(folder).latest_step() if args.step is None else args.step
    try:
        arrays = read_streamed(folder, NAMES, step, optional=(REWARD,))
    except (ValueError, OSError) as error:
        parser.error(f"{args.run_dir}: {error} (is it a run of the reuse sampler with its "
                     "replay checkpointed?)")
    rows = reuse_set(arrays)
    for row in rows:
        print(f"seed {row['seed']}: {row['stored']} episodes stored, window step "
              f"{row['window_step']} of {row['window']}; S- ages {row['age_min']}-"
              f"{row['age_max']} (median {row['age_median']:.0f}), {row['among_oldest']} of "
              f"{row['reused']} among the {row['reused']} oldest; weight median "
              f"{row['reused_weight_median']:.3g} (table {row['table_weight_median']:.3g})"
              + (f"; mean return {row['reused_return_mean']:.1f} (stored "
                 f"{row['stored_return_mean']:.1f})" if "reused_return_mean" in row else ""))
    command = " ".join(["python -m experiments.reuse_set", *(argv if argv is not None
                                                            else sys.argv[1:])])
    write_record(args.json, {"command": command, "run_dir": args.run_dir, "step": step,
                             "env_steps": env_steps_at(args.run_dir, step), "seeds": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
