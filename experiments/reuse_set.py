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
(:func:`~jaxmarl_accel.runs.checkpoint.read_streamed`), not the observations.

A run of the AccMER authors' reuse (``--sampler reuse_block``,
:mod:`jaxmarl_accel.buffers.reuse_block`) keeps no S-: it is ranked at every sample as the
top K of the table over every slot, ties towards the higher slot, so it is ranked here the
same way (K from the run's ``config.json``); how many of those slots are filled is given
beside, and the ages, weights and returns are those of the filled ones.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import numpy as np

from experiments.bench.timing import write_record

NAMES = (".buffer.sampler.weights", ".buffer.size", ".buffer.write_pos")
WINDOWED = (".buffer.sampler.reused", ".buffer.sampler.window", ".buffer.sampler.window_step")
"""Alg. 1's reuse sampler's S- and window (``--sampler reuse``)."""
BLOCK = (".buffer.sampler.block_start", ".buffer.sampler.updates")
"""The authors' reuse sampler's counters (``--sampler reuse_block``)."""
REWARD = ".buffer.experience.reward"
"""Episode replay's team rewards ``[S, C, T + 1]``, read when the checkpoint streams them."""


def ranked_block(weights: np.ndarray, num_reused: int) -> np.ndarray:
    """The authors' S-: per seed the ``num_reused`` slots of ``weights [S, C]`` with the
    largest weights, ties towards the higher slot, ranked by the sampler's own
    :func:`~jaxmarl_accel.buffers.reuse_block.top_slots_high_first`; int ``[S, K]``."""
    from jaxmarl_accel.buffers.reuse_block import top_slots_high_first

    return np.stack([np.asarray(top_slots_high_first(table, num_reused)) for table in weights])


def top_blocks(table: np.ndarray, writes: int, batch: int, decay: float) -> list[int]:
    """The authors' reuse before its counter wraps: which written block (0 = the first,
    slots ``[0, b)``) held the top of ``table [C]`` after each of its ``writes`` writes,
    from the blocks' decayed values (block k holds its mean times ``decay ** (writes - k)``);
    S- is that block's upper half while it stays on top."""
    ages = writes - np.arange(writes)
    means = table[batch * np.arange(writes)] / decay ** ages
    return [int(np.argmax(means[:j + 1] * decay ** (j + 1 - np.arange(j + 1))))
            for j in range(writes)]


def reuse_set(arrays: dict[str, np.ndarray], num_reused: int | None = None,
              block: tuple[int, float, int] | None = None) -> list[dict[str, Any]]:
    """One summary per seed of a reuse sampler's arrays (:data:`NAMES` with
    :data:`WINDOWED`, or with :data:`BLOCK` and ``num_reused``; each with a leading seed
    axis S): S-'s ages in episodes ``[K]`` (0 = the newest stored), how many of S- are
    among the K oldest stored, the window's length and position (or the block counters),
    S-'s median weight and the filled table's median and maximum; with :data:`REWARD`
    ``[S, C, T + 1]`` also S-'s and the stored episodes' mean return. S-'s unfilled slots
    (the authors' reuse ranks them) are counted in ``reused_filled`` and left out of the
    rest. With ``block = (b, decay, write_every)`` and a counter that has not wrapped, also
    :func:`top_blocks`."""
    weights = arrays[NAMES[0]]
    capacity = weights.shape[-1]
    blocked = WINDOWED[0] not in arrays
    reused = ranked_block(weights, num_reused) if blocked else arrays[WINDOWED[0]]
    rows = []
    for seed in range(reused.shape[0]):
        size, pos = int(arrays[".buffer.size"][seed]), int(arrays[".buffer.write_pos"][seed])
        own = reused[seed][reused[seed] < size]
        age = (pos - 1 - own) % capacity
        table = weights[seed][:size]
        row = {"seed": seed, "stored": size, "reused": reused.shape[-1],
               "reused_filled": int(own.size)}
        row.update({name.rsplit(".", 1)[1]: int(arrays[name][seed])
                    for name in (BLOCK if blocked else WINDOWED[1:])})
        writes = -(-row["updates"] // block[2]) if blocked and block is not None else 0
        if writes and writes * block[0] <= capacity:  # not wrapped: block k from slot k b
            row["top_blocks"] = top_blocks(weights[seed], writes, block[0], block[1])
        row.update({
            "age_median": float(np.median(age)) if own.size else None,
            "age_min": int(age.min()) if own.size else None,
            "age_max": int(age.max()) if own.size else None,
            "among_oldest": int(np.sum(age >= size - reused.shape[-1])),
            "reused_weight_median": float(np.median(weights[seed][reused[seed]])),
            "table_weight_median": float(np.median(table)) if size else None,
            "table_weight_max": float(table.max()) if size else None,
        })
        if REWARD in arrays and arrays[REWARD].ndim == 3:  # episodes: [S, C, T + 1]
            returns = arrays[REWARD][seed].sum(-1)
            row["reused_return_mean"] = float(returns[own].mean()) if own.size else None
            row["stored_return_mean"] = float(returns[:size].mean())
        rows.append(row)
    return rows


def describe(row: dict[str, Any]) -> str:
    """One seed's summary (:func:`reuse_set`) as a line."""
    where = (f"window step {row['window_step']} of {row['window']}" if "window" in row else
             f"block at slot {row['block_start']} after {row['updates']} updates")
    line = (f"seed {row['seed']}: {row['stored']} episodes stored, {where}; "
            f"{row['reused_filled']} of {row['reused']} reused slots filled")
    if "top_blocks" in row:
        line += f"; top block after each write {row['top_blocks']}"
    if row["age_min"] is None:
        return line
    line += (f"; S- ages {row['age_min']}-{row['age_max']} (median {row['age_median']:.0f}), "
             f"{row['among_oldest']} of {row['reused']} among the {row['reused']} oldest; "
             f"weight median {row['reused_weight_median']:.3g} "
             f"(table {row['table_weight_median']:.3g})")
    if row.get("reused_return_mean") is not None:
        line += (f"; mean return {row['reused_return_mean']:.1f} (stored "
                 f"{row['stored_return_mean']:.1f})")
    return line


def block_settings(run_dir: str) -> tuple[int, int, float, int]:
    """K, b, the decay and ``write_every`` of a run's authors' reuse from its
    ``config.json``: ``round(reuse_ratio * batch_size)``, ``batch_size``, ``decay`` and
    ``write_every`` (the sampler's defaults 0.5, 0.8 and 1 unless set)."""
    import json

    with open(os.path.join(run_dir, "config.json")) as file:
        config = json.load(file)["train"]
    kwargs, batch = config.get("sampler_kwargs", {}), int(config["batch_size"])
    return (int(round(float(kwargs.get("reuse_ratio", 0.5)) * batch)), batch,
            float(kwargs.get("decay", 0.8)), int(kwargs.get("write_every", 1)))


def env_steps_at(run_dir: str, step: int) -> int | None:
    """The env steps per seed after chunk ``step``, from the run's ``metrics.csv``."""
    from jaxmarl_accel.runs import outputs

    steps = [int(row["env_steps"]) for row in outputs.read_rows(run_dir)
             if int(row["chunk"]) == step]
    return steps[0] if steps else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.reuse_set", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", help="a run folder (experiments.run --out) of --algo "
                                        "accmer, --sampler reuse or reuse_block, with "
                                        "checkpoints")
    parser.add_argument("--step", type=int, default=None,
                        help="the checkpoint (chunk) to read (default: the newest)")
    parser.add_argument("--json", default=None, help="write the record to this file")
    args = parser.parse_args(argv)
    from jaxmarl_accel.runs.checkpoint import Checkpoints, read_streamed

    folder = os.path.join(args.run_dir, "checkpoints")
    step = Checkpoints(folder).latest_step() if args.step is None else args.step
    try:
        arrays = read_streamed(folder, NAMES, step, optional=(*WINDOWED, *BLOCK, REWARD))
        if WINDOWED[0] not in arrays and BLOCK[0] not in arrays:
            raise ValueError(f"checkpoint {step} holds neither sampler's S- "
                             f"({WINDOWED[0]} or {BLOCK[0]})")
        if WINDOWED[0] in arrays:
            rows = reuse_set(arrays)
        else:
            num_reused, *block = block_settings(args.run_dir)
            rows = reuse_set(arrays, num_reused, tuple(block))
    except (ValueError, OSError, KeyError) as error:
        parser.error(f"{args.run_dir}: {error} (is it a run of a reuse sampler with its "
                     "replay checkpointed?)")
    for row in rows:
        print(describe(row))
    command = " ".join(["python -m experiments.reuse_set", *(argv if argv is not None
                                                            else sys.argv[1:])])
    write_record(args.json, {"command": command, "run_dir": args.run_dir, "step": step,
                             "env_steps": env_steps_at(args.run_dir, step), "seeds": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
