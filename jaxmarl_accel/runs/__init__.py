"""A run and its folder: what the commands (:mod:`jaxmarl_accel.cli`) and the experiments share.

:mod:`~.host_loop` compiles a run once and runs it chunk by chunk, logging
(:mod:`~.loggers`, :mod:`~.progress`), checkpointing (:mod:`~.run_store`,
:mod:`~.checkpoint`, :mod:`~.array_files`, :mod:`~.tree_paths`) and summarizing
(:mod:`~.summary`, :mod:`~.outputs`, :mod:`~.figures`, :mod:`~.marl_eval`,
:mod:`~.sweep_outputs`, :mod:`~.pbt_run`); :mod:`~.restore` reads a saved run back for
evaluation; :mod:`~.remote` mirrors a folder at a URL; :mod:`~.memory` checks that a run
fits before it allocates.
"""
