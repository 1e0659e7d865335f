"""The command line: train, evaluate and render from any folder after ``pip install``.

    jaxmarl-accel run --algo qmix --env stag_hunt --seeds 4 --out runs/qmix
    jaxmarl-accel run --resume runs/qmix
    jaxmarl-accel evaluate runs/qmix --episodes 1000
    jaxmarl-accel render --env simple_tag --out results/render

``jaxmarl-accel benchmark SUITE --out DIR`` runs a whole suite (:mod:`~.benchmark`).
``python -m jaxmarl_accel.cli COMMAND ...`` is the same program; in a checkout,
``python -m experiments.run`` / ``experiments.evaluate`` / ``experiments.render_demo`` run
the same commands. This package holds the commands and their flags: :mod:`~.run` (flags of
a training run), :mod:`~.evaluate`, :mod:`~.render`, :mod:`~.flags` (generated from the
config dataclasses), :mod:`~.scenario_flags`, :mod:`~.sweep_flags`. What a run does and
leaves in its folder (the host loop, checkpoints, outputs, loggers, remote folders) is
:mod:`jaxmarl_accel.runs`.
"""
