"""Benchmarks: a suite of runs (tasks x learners x seeds) and its statistics.

    jaxmarl-accel benchmark examples/benchmark_tiny.yaml --out runs/tiny

:mod:`~.suites` holds what a suite is (tasks, learners, seeds), the built-in suites and the
YAML a user writes; :mod:`~.execute` runs its pairs one after another into one folder and
resumes it; :mod:`~.scores` reads each pair's run folder into scores per seed;
:mod:`~.stats` aggregates them with ``rliable`` (IQM with stratified-bootstrap intervals,
median, mean, optimality gap, probability of improvement, performance profiles) and
:mod:`~.report` writes the marl-eval JSON, the markdown table and the figures;
:mod:`~.jaxmarl_reference` runs JaxMARL's own baseline scripts as reference pairs. The
command is :mod:`jaxmarl_accel.cli.benchmark`.
"""
