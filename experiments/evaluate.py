"""``python -m experiments.evaluate`` in a checkout: the installed ``jaxmarl-accel evaluate``
(:mod:`jaxmarl_accel.cli.evaluate`), same flags and outputs."""

import sys

from jaxmarl_accel.cli.evaluate import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m experiments.evaluate"))
