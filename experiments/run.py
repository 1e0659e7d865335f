"""``python -m experiments.run`` in a checkout: the installed ``jaxmarl-accel run``
(:mod:`jaxmarl_accel.cli.run`), same flags and outputs."""

from jaxmarl_accel.cli.__main__ import exit_with
from jaxmarl_accel.cli.run import main

if __name__ == "__main__":
    exit_with(main(prog="python -m experiments.run"))
