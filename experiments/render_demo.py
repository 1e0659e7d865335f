"""``python -m experiments.render_demo`` in a checkout: the installed ``jaxmarl-accel render``
(:mod:`jaxmarl_accel.cli.render`), same flags and outputs."""

from jaxmarl_accel.cli.__main__ import exit_with
from jaxmarl_accel.cli.render import main

if __name__ == "__main__":
    exit_with(main(prog="python -m experiments.render_demo"))
