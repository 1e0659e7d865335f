"""``python -m experiments.run`` in a checkout: the installed ``jaxmarl-accel run``
(:mod:`jaxmarl_accel.cli.run`), same flags and outputs."""

import sys

from jaxmarl_accel.cli.run import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m experiments.run"))
