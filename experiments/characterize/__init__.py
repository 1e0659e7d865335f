"""Workload characterization: where the time of MADDPG-style training goes, phase by phase.

``python -m experiments.characterize --env simple_tag --agents 3 6 12 24 48 --out DIR``;
see :mod:`experiments.characterize.cli` for the flags and outputs. Modules: ``cli`` (flags,
the loop over agent counts), ``measure`` (one configuration: its filled buffer state, the
comparisons, the trainer cross-check), ``phase_timing`` (every phase on that state and the
whole steps), ``report`` (the 60K-episode table, the papers' ratios, CSV / JSON / PNG).
The timing loop is :mod:`experiments.timing`.
"""

from experiments.characterize.cli import main

__all__ = ["main"]
