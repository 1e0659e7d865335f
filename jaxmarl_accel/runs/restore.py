"""A saved run read back (for ``jaxmarl-accel evaluate``): its stored config and options, a
checkpoint restored on one device without its replay, and a sweep's setting picked from it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from jaxmarl_accel.runs import outputs
from jaxmarl_accel.runs.resume import first_line


def load_run(run_dir: str) -> tuple[Any, dict[str, Any]]:
    """The training config and stored run options of ``run_dir``; ``ValueError`` (one line)
    when it is not a run folder."""
    from jaxmarl_accel.runs import run_store

    if not os.path.isfile(os.path.join(run_dir, outputs.CONFIG_NAME)):
        what = "does not exist" if not os.path.exists(run_dir) else (
            f"is not a run folder (no {outputs.CONFIG_NAME})")
        raise ValueError(f"RUN_DIR {run_dir} {what}")
    return run_store.stored_run(run_dir)


def sweep_setting(run_dir: str, stored: dict[str, Any], trainer: Any, state: Any,
                  setting: int | None, log: Callable[[str], None]
                  ) -> tuple[Any, Any, list[dict[str, float]], dict[str, Any]]:
    """What an evaluation scores: for a sweep, setting ``setting`` (None: ``sweep.json``'s
    best; 0 before the sweep has finished), as ``(its own Trainer, the state with its seeds'
    learners [S, ...] and clocks, its metric rows, {"setting": k, "setting_values": ...})``,
    the setting's values said through ``log``; else the run's own (and ``{}``).
    ``ValueError`` (one line) for a setting the run lacks."""
    import jax

    from jaxmarl_accel.runs.sweep_outputs import read_sweep
    from jaxmarl_accel.trainer.sweep import setting_config
    from jaxmarl_accel.trainer.train import make_trainer

    rows, sweep = outputs.read_rows(run_dir), stored.get("sweep")
    if sweep is None:
        if setting is not None:
            raise ValueError(f"--setting {setting}: {run_dir} holds one setting, not a sweep")
        return trainer, state, rows, {}
    if setting is None:
        finished = read_sweep(run_dir)
        setting = 0 if finished is None else int(finished["best"])
    if not 0 <= setting < sweep.num_settings:
        raise ValueError(f"--setting {setting}: the sweep in {run_dir} has settings 0 to "
                         f"{sweep.num_settings - 1}")
    lanes = slice(setting * stored["seeds"], (setting + 1) * stored["seeds"])
    state = state.replace(algo=jax.tree.map(lambda x: x[lanes], state.algo),
                          env_steps=state.env_steps[lanes])
    log(f"setting {setting} of the sweep: {sweep.setting(setting)}")
    return (make_trainer(setting_config(trainer.config, sweep, setting)), state,
            [r for r in rows if int(r["setting"]) == setting],
            {"setting": setting, "setting_values": sweep.setting(setting)})


def restore_checkpoint(run_dir: str, config: Any, seeds: int, step: int | None,
                       sweep: Any = None) -> tuple[Any, Any, Any, int]:
    """Restore checkpoint ``step`` (None: the newest) of the run in ``run_dir`` on one device.

    Returns ``(trainer, sharded, state, step)``: the run's ``Trainer``, its
    ``ShardedTrainer`` for ``seeds`` seeds, and the restored state, each leaf with a leading
    seed axis ``[S, ...]`` (a ``sweep``'s: its lanes ``[K * S, ...]``, settings x seeds, and
    the base config's trainer). The replay is not read: its leaves stay ``ShapeDtypeStruct``, so
    evaluating needs the memory of the learners, not of the training state. ``ValueError``
    (one line, naming the checkpoint) when there is no checkpoint, ``step`` is not one of
    them, or it does not restore."""
    from jaxmarl_accel.runs import host_loop, run_store
    from jaxmarl_accel.runs.checkpoint import CheckpointMismatch, Checkpoints
    from jaxmarl_accel.trainer.sharding import make_sharded_trainer
    from jaxmarl_accel.trainer.sweep import make_sweep_trainer
    from jaxmarl_accel.trainer.train import make_trainer

    folder = os.path.join(run_dir, outputs.CHECKPOINTS_NAME)
    if not os.path.isdir(folder):
        raise ValueError(f"{run_dir} holds no checkpoints (no {outputs.CHECKPOINTS_NAME}/)")
    manager = Checkpoints(folder)
    steps = manager.steps()
    if not steps:
        raise ValueError(f"{folder} holds no checkpoints")
    if step is None:
        step = steps[-1]
    elif step not in steps:
        raise ValueError(f"--checkpoint {step}: {folder} holds checkpoint(s) "
                         f"{', '.join(map(str, steps))}")
    trainer, init_lanes = make_trainer(config), None
    if sweep is not None:
        lanes = make_sweep_trainer(config, sweep, seeds)
        trainer, init_lanes, seeds = lanes.trainer, lanes.init_lanes, lanes.lanes
    sharded = make_sharded_trainer(
        trainer, host_loop.choose_layout(seeds, config.num_envs, 1), seeds,
        init_lanes=init_lanes)
    abstract = sharded.abstract_state
    target = run_store.checkpoint_items(abstract)
    replay = {name: leaf for name, leaf in target.items() if name.startswith(run_store.REPLAY)}
    try:
        manager.check(step, target, run_store.ADDED_LATER)
        items = manager.restore(step, {n: v for n, v in target.items() if n not in replay},
                                optional=run_store.ADDED_LATER)
    except CheckpointMismatch:
        raise
    except (OSError, ValueError) as error:
        raise ValueError(f"the checkpoint after chunk {step} "
                         f"({os.path.join(folder, str(step))}) cannot be restored: "
                         f"{first_line(error)}") from None
    items = run_store.fill_added_later(target, items)
    state = run_store.state_from_items(abstract, {**replay, **items})
    return trainer, sharded, state, step
