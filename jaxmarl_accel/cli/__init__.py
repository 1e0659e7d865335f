"""The command line: train, evaluate and render from any folder after ``pip install``.

    jaxmarl-accel run --algo qmix --env stag_hunt --seeds 4 --out runs/qmix
    jaxmarl-accel run --resume runs/qmix
    jaxmarl-accel evaluate runs/qmix --episodes 1000
    jaxmarl-accel render --env simple_tag --out results/render

``python -m jaxmarl_accel.cli COMMAND ...`` is the same program; in a checkout,
``python -m experiments.run`` / ``experiments.evaluate`` / ``experiments.render_demo`` run
the same commands. Modules: :mod:`~jaxmarl_accel.cli.run` (flags of a training run),
:mod:`~jaxmarl_accel.cli.host_loop` (compile once, run chunk by chunk, log, checkpoint,
summarize), :mod:`~jaxmarl_accel.cli.checkpoint`, :mod:`~jaxmarl_accel.cli.outputs`,
:mod:`~jaxmarl_accel.cli.loggers`, :mod:`~jaxmarl_accel.cli.evaluate`,
:mod:`~jaxmarl_accel.cli.render`, :mod:`~jaxmarl_accel.cli.flags`,
:mod:`~jaxmarl_accel.cli.memory`, :mod:`~jaxmarl_accel.cli.progress`,
:mod:`~jaxmarl_accel.cli.marl_eval`.
"""
