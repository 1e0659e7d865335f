"""``python -m experiments.evaluate`` in a checkout: the installed ``jaxmarl-accel evaluate``
(:mod:`jaxmarl_accel.cli.evaluate`), same flags and outputs."""

from jaxmarl_accel.cli.__main__ import exit_with
from jaxmarl_accel.cli.evaluate import main

if __name__ == "__main__":
    exit_with(main(prog="python -m experiments.evaluate"))
