"""``jaxmarl-accel COMMAND ...``: the installed command line (``run``, ``evaluate``, ``render``)."""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "run": "train a learner for several seeds at once; --resume continues a run",
    "evaluate": "restore a run's checkpoint and score every seed's greedy policy",
    "render": "render a scripted or random rollout (MPE, stag hunt) to a GIF and a PNG",
}
USAGE = ("usage: jaxmarl-accel {run,evaluate,render} ...\n\n"
         + "\n".join(f"  {name:<9} {text}" for name, text in COMMANDS.items())
         + "\n\n'jaxmarl-accel COMMAND --help' explains a command's flags.")


def main(argv: list[str] | None = None) -> int:
    """Dispatch to the command named by the first argument; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] not in COMMANDS:
        print(f"jaxmarl-accel: unknown command {argv[0]!r}; choose from "
              f"{', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"jaxmarl_accel.cli.{argv[0]}")
    return module.main(argv[1:], prog=f"jaxmarl-accel {argv[0]}")


if __name__ == "__main__":
    sys.exit(main())
