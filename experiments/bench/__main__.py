"""Benchmarks: ``python -m experiments.bench COMMAND --json PATH`` (commands below).

Each subcommand lives in a module of this folder that defines ``add_arguments(parser)``
and ``main(args)``; it times ours and the reference side by side in one process. Learning
against JaxMARL's own baseline scripts (win rates and returns over seeds, with the field's
statistics) is the ``jaxmarl-accel benchmark SUITE --reference jaxmarl=PATH`` command; the
benches here that run a JaxMARL script (``ippo``, ``qmix``, ``qmix_smax``) load it as that
command does (:mod:`jaxmarl_accel.benchmark.jaxmarl_scripts`) and add what it does not
measure: both sides' compile and steps per second in interleaved calls, and where asked the
split of a round into collection and updates.
"""

from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS = {
    "envs": "our MPE environments against jaxmarl's, random actions, lax.scan over steps",
    "samplers": "replay samplers and layouts against flashbax, ms per batch and GB/s",
    "train": "end-to-end training throughput (env steps/s including learning)",
    "ippo": "PPO against JaxMARL's ippo_ff_mpe.py on MPE spread at its settings (steps/s, "
            "compile, final return per seed)",
    "qmix": "recurrent QMIX against JaxMARL's qmix_rnn.py on MPE spread (steps/s, compile)",
    "qmix_smax": "QMIX (--algo: or VDN, MAC-PO) on JaxMARL's SMAX (heuristic enemy, 3m) "
                 "against JaxMARL's qmix_rnn.py (vdn_rnn.py): greedy win rate over seeds, "
                 "steps/s, compile",
    "accmer": "AccMER against MAC-PO on the stag hunt: end to end, update and sampling times",
    "gru_paths": "the recurrent agent's saved-gates and rematerialized unrolls, forward and "
                 "backward, shape by shape, and which one the library picks",
    "update_profile": "one value-learner update (bench qmix's settings) profiled op by op: "
                      "loops, mixer and the rest, busy cores",
    "memory": "peak resident memory of whole runs against the state and the run's estimate",
    "chunk_memory": "the compiled chunk's state, temporaries and estimated peak against the "
                    "replay's capacity (no training)",
    "checkpoint": "saving a replay-sized array: the streaming writer against orbax (memory "
                  "growth, seconds)",
    "hangs": "short value-learner runs (2 and 4 seeds, repeated) under a timeout: any hang?",
    "interrupts": "Ctrl-C at random moments of a tiny run: exit statuses of the installed "
                  "command's exit against the interpreter's teardown",
    "scale": "100 to 1,000 agents, team-shared learners: env and agent steps/s with learning "
             "and rollout alone",
    "tag_scale": "A2C and PPO at 1,000 agents on Tag and MPE tag: rollout and end-to-end env "
                 "steps/s, compiled memory and measured peak per env count",
    "sweep": "a 3 x 3 hyperparameter sweep in one program against its nine runs one after the "
             "other: compile seconds and end-to-end wall time",
    "warpdrive": "our Tag envs (vmapped) against WarpDrive's numpy Tag envs, env steps/s at 5 "
                 "and 1,000 agents (paper 003)",
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m experiments.bench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text in SUBCOMMANDS.items():
        module = importlib.import_module(f"experiments.bench.{name}")
        module.add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    importlib.import_module(f"experiments.bench.{args.command}").main(args)


if __name__ == "__main__":
    try:
        main()
    except ValueError as error:  # bad flags: one line, not a traceback
        sys.exit(f"python -m experiments.bench: error: {error}")
