"""``python -m experiments.render_demo`` in a checkout: the installed ``jaxmarl-accel render``
(:mod:`jaxmarl_accel.cli.render`), same flags and outputs."""

import sys

from jaxmarl_accel.cli.render import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m experiments.render_demo"))
