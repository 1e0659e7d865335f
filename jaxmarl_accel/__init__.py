"""jaxmarl_accel: end-to-end off-policy multi-agent RL in one compiled JAX program."""

__version__ = "0.1.0"
