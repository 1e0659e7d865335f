"""A run's folder: the options stored with it (``config.json``), preparing the folder, and
the run's state as checkpoint items by tree path (:mod:`jaxmarl_accel.runs.checkpoint`
writes and reads the files; :mod:`jaxmarl_accel.runs.resume` restores them)."""

from __future__ import annotations

import dataclasses
import os
import shutil
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel import config as cfg
from jaxmarl_accel.buffers.storage import LAYOUTS
from jaxmarl_accel.runs import outputs
from jaxmarl_accel.runs.checkpoint import Checkpoints, sync_processes
from jaxmarl_accel.trainer.sweep import Sweep

STORED_OPTIONS = ("seeds", "seed", "baseline_episodes", "render", "checkpoint_every", "loggers",
                  "checkpoint_replay")
"""The :class:`RunOptions` that change a run's outputs: stored in ``config.json`` with the
training config, and taken from there on ``--resume``."""


STORED_DEFAULTS = {"loggers": ("csv",), "checkpoint_replay": True}
"""The :data:`STORED_OPTIONS` that a ``config.json`` written before them lacks: such a run
resumes with these."""


REPLAY = ".buffer"
"""The name prefix of the replay's arrays among :func:`checkpoint_items`."""
STORAGE = REPLAY + ".experience"
"""The name prefix of the replay's storage: arrays of one slot axis each, saved up to the
slots written (:func:`written_corners`)."""
ADDED_LATER = (".episode_stats",)
"""Name prefixes of state arrays added after checkpoints were first written (the running
episode counters): a checkpoint without them restores (``optional`` of
:meth:`~.checkpoint.Checkpoints.restore`) and :func:`fill_added_later` starts them at 0."""


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How a run is executed and recorded (what the trained numbers do not depend on).

    Attributes:
      seeds: seeds trained at once (vmapped).
      seed: base PRNG seed; seed i uses ``split(PRNGKey(seed))[i]``.
      out_dir: output folder.
      resume: continue from the newest checkpoint of ``out_dir`` that restores (if any).
      overwrite: replace the run that ``out_dir`` holds (without it, and without
        ``resume``, a folder that holds a run is refused).
      render: render one evaluation episode of seed 0 to ``episode.gif`` / ``.png``.
      baseline_episodes: episodes of the random and scripted baselines of the score.
      checkpoint_every: save a checkpoint every this many chunks.
      checkpoint_replay: include the replay in checkpoints (False: smaller checkpoints; a
        resumed run starts with an empty replay and refills it before it learns again).
      quiet: no progress output.
      devices: devices to shard the seeds over (a count, or ``"auto"``).
      env_shards: devices each seed's envs are split over (None: chosen automatically).
      loggers: the metric streams (:data:`jaxmarl_accel.runs.loggers.LOGGERS`); ``metrics.csv`` is
        written whatever they are.
      sweep: the settings of a sweep (:class:`~jaxmarl_accel.trainer.sweep.Sweep`), each run
        for ``seeds`` seeds in the same program; ``None`` for one setting.
      pbt_every: with a sweep, population-based training of its lanes after every this
        many chunks (:mod:`jaxmarl_accel.trainer.pbt`); 0: none.
      extends: with ``resume``, the budget (env steps per seed on the run's clock) of the
        stored run that this one extends to its config's larger budget (its ``config.json``
        rewritten with it, :mod:`jaxmarl_accel.runs.resume`); 0: not an extension.
    """

    seeds: int
    seed: int
    out_dir: str
    resume: bool = False
    overwrite: bool = False
    render: bool = False
    baseline_episodes: int = 1000
    checkpoint_every: int = 1
    checkpoint_replay: bool = True
    quiet: bool = False
    devices: int | str = 1
    env_shards: int | None = None
    loggers: tuple[str, ...] = ("csv",)
    sweep: Any = None
    pbt_every: int = 0
    extends: int = 0

    @property
    def lanes(self) -> int:
        """The program's lanes: settings x seeds (``seeds`` without a sweep)."""
        return self.seeds * (1 if self.sweep is None else self.sweep.num_settings)


class Started(NamedTuple):
    """A run ready to train: its state, the metric rows so far and the next chunk."""

    state: Any
    rows: list[dict[str, float]]
    start: int


def checkpoint_items(state: Any, names: dict[str, Any] | None = None) -> dict[str, Any]:
    """The state's leaves keyed by tree path, without zero-size leaves (nothing to save).

    ``state`` may also be a tree of the same structure with other leaves (the state's
    shardings): then ``names`` (the state's own items) chooses the paths kept."""
    leaves = jax.tree_util.tree_flatten_with_path(state)[0]
    if names is not None:
        return {key: leaf for path, leaf in leaves
                if (key := jax.tree_util.keystr(path)) in names}
    return {jax.tree_util.keystr(path): leaf for path, leaf in leaves if leaf.size}


def fill_added_later(target: dict[str, Any], items: dict[str, Any]) -> dict[str, Any]:
    """``items`` restored for ``target`` (name -> abstract array), with zeros for the arrays
    a checkpoint written before them lacks (:data:`ADDED_LATER`: running
    episode counters, so a resumed run's first episodes count from the resume on)."""
    later = [name for name in target.keys() - items.keys() if name.startswith(ADDED_LATER)]
    return {**items, **{name: jnp.zeros(target[name].shape, target[name].dtype)
                        for name in later}}


def save_checkpoint(manager: Checkpoints, chunk: int, state: Any, replay: bool = True,
                    layout: str | None = None) -> None:
    """Save the state after ``chunk`` (without the replay's arrays unless ``replay``); with
    the replay's storage ``layout`` (a name of :data:`~jaxmarl_accel.buffers.storage.LAYOUTS`)
    its storage is saved up to the slots written (:func:`written_corners`), else whole."""
    items = checkpoint_items(state)
    if not replay:
        items = {name: leaf for name, leaf in items.items() if not name.startswith(REPLAY)}
    slots = written_slots(state) if replay and layout is not None else None
    stored = None if slots is None else written_corners(items, layout, slots)
    manager.save(chunk, items, omitted=() if replay else (REPLAY,), stored=stored)


def _is_storage(name: str) -> bool:
    return name == STORAGE or name.startswith((STORAGE + ".", STORAGE + "["))


def written_corners(items: dict[str, Any], layout: str, slots: int) -> dict[str, tuple[int, ...]]:
    """The part of each replay storage array among ``items`` (:data:`STORAGE`; arrays or
    ``ShapeDtypeStruct``s with a leading seed axis S) that holds its slots ``[0, slots)``:
    its shape with the slot axis of ``layout`` (``[S, C, ...]``, agent-major
    ``[S, N, C, ...]``) cut at ``slots``. A replay fills its slots from 0 on, so with
    ``slots`` its ``size`` every slot after them is as a fresh replay holds it (zeros)."""
    axis = 1 + LAYOUTS[layout].slot_axis
    return {name: (*leaf.shape[:axis], min(slots, leaf.shape[axis]), *leaf.shape[axis + 1:])
            for name, leaf in items.items() if _is_storage(name)}


def written_slots(state: Any) -> int | None:
    """The most slots the replay of any seed of ``state`` has written (its ``size``, over
    every process of a ``jax.distributed`` run; all of them call this together); None for
    a state without a replay."""
    size = getattr(state.buffer, "size", None)
    if size is None:
        return None
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        size = multihost_utils.process_allgather(size, tiled=True)
    return int(np.max(np.asarray(size), initial=0))


def checkpoint_bytes(abstract_state: Any, replay: bool = True, layout: str | None = None,
                     slots: int | None = None) -> int:
    """Bytes one checkpoint of ``abstract_state`` (a tree of arrays or ``ShapeDtypeStruct``s)
    holds: every array, the replay's (:data:`REPLAY`) only if ``replay``; with ``layout``
    and ``slots``, the replay's storage up to that many slots (:func:`written_corners`)."""
    items = checkpoint_items(abstract_state)
    shapes = {name: leaf.shape for name, leaf in items.items()}
    if layout is not None and slots is not None:
        shapes.update(written_corners(items, layout, slots))
    return sum(int(np.prod(shapes[name])) * np.dtype(leaf.dtype).itemsize
               for name, leaf in items.items() if replay or not name.startswith(REPLAY))


def nearest_folder(path: str) -> str:
    """``path`` or the nearest of its parents that exists (where a new folder would be made)."""
    path = os.path.abspath(path)
    while not os.path.isdir(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def check_disk_fits(abstract_state: Any, options: RunOptions, layout: str | None = None,
                    slots: int | None = None) -> None:
    """Refuse (``ValueError``, one line) before training when the run's checkpoints cannot
    fit on the disk that holds ``options.out_dir``: at the peak the newest ``keep``
    (:class:`Checkpoints`) and the one being written, less those a resumed run already
    holds, each at most the size of the last (its replay ``layout`` written up to
    ``slots``: at most one slot per env step of the run's clock; without them, whole).
    A run that would fail hours later writing a checkpoint is refused at its start
    instead."""
    each = checkpoint_bytes(abstract_state, options.checkpoint_replay, layout, slots)
    checkpoints = Checkpoints(os.path.join(options.out_dir, outputs.CHECKPOINTS_NAME))
    keep = checkpoints.keep
    needed = max(0, keep + 1 - len(checkpoints.steps())) * each
    where = nearest_folder(options.out_dir)
    free = shutil.disk_usage(where).free
    if needed <= free:
        return
    hint = "free some space or choose another --out"
    if options.checkpoint_replay:
        lean = checkpoint_bytes(abstract_state, replay=False)
        hint += f", or pass --checkpoint-replay false ({_size(lean)} each)"
    raise ValueError(f"the run's checkpoints need {_size(needed)} on {where} ({keep} kept + 1 "
                     f"being written, up to {_size(each)} each) but only {_size(free)} are free; "
                     f"{hint}")


def _size(num_bytes: int) -> str:
    return (f"{num_bytes / 2**30:.2f} GiB" if num_bytes >= 2**30
            else f"{num_bytes / 2**20:.1f} MiB")


def state_from_items(abstract: Any, items: dict[str, Any]) -> Any:
    """Inverse of :func:`checkpoint_items` given the abstract state."""
    paths, treedef = jax.tree_util.tree_flatten_with_path(abstract)
    leaves = [items[jax.tree_util.keystr(path)] if leaf.size else jnp.zeros(leaf.shape, leaf.dtype)
              for path, leaf in paths]
    return jax.tree_util.tree_unflatten(treedef, leaves)


def run_record(config: cfg.TrainConfig, options: RunOptions) -> dict[str, Any]:
    """What ``config.json`` stores: the training config and the :data:`STORED_OPTIONS`."""
    sweep = options.sweep
    return {"train": cfg.config_to_dict(config),
            **{name: getattr(options, name) for name in STORED_OPTIONS},
            **({} if sweep is None else {"sweep": {"names": list(sweep.names),
                                                   "values": [list(v) for v in sweep.values]}}),
            **({"pbt_every": options.pbt_every} if options.pbt_every else {})}


def stored_run(out_dir: str) -> tuple[cfg.TrainConfig, dict[str, Any]]:
    """The training config and the :data:`STORED_OPTIONS` of the run in ``out_dir``;
    ``ValueError`` (one line) when ``config.json`` is missing, unreadable or incomplete."""
    required = [name for name in STORED_OPTIONS if name not in STORED_DEFAULTS]
    record = {**STORED_DEFAULTS, **outputs.read_run_config(out_dir, ("train", *required))}
    try:
        config = cfg.config_from_dict(record["train"])
    except (TypeError, KeyError, AttributeError) as error:
        raise ValueError(f"{os.path.join(out_dir, outputs.CONFIG_NAME)}: the training config "
                         f"cannot be read ({error})") from None
    stored = {name: tuple(record[name]) if isinstance(record[name], list) else record[name]
              for name in STORED_OPTIONS}
    if record.get("sweep"):
        stored["sweep"] = Sweep(tuple(record["sweep"]["names"]),
                                tuple(tuple(row) for row in record["sweep"]["values"]))
    if record.get("pbt_every"):
        stored["pbt_every"] = int(record["pbt_every"])
    return config, stored


def check_folder_free(options: RunOptions) -> None:
    """``ValueError`` (one line) when ``options.out_dir`` is a file, or, for a new run
    without ``options.overwrite``, a folder that holds a run already. It only reads, so a
    run calls it before compiling: a refusal the user can fix costs no compile time."""
    out_dir = options.out_dir
    outputs.refuse_a_file(out_dir)
    present = outputs.run_entries(out_dir)
    if not options.resume and present and not options.overwrite:
        raise ValueError(f"--out {out_dir} holds a run already ({', '.join(present)}); continue "
                         f"it with --resume {out_dir}, or replace it with --overwrite")


def prepare_folder(record: dict[str, Any], options: RunOptions, writer: bool) -> None:
    """Make sure the run may write to ``options.out_dir`` and store its config there
    (``record``, :func:`run_record`).

    A new run refuses a folder that holds another run unless ``options.overwrite`` (which
    removes that run's files first); a resumed run keeps its stored config, rewritten with
    the larger budget when it extends the run (``options.extends``). Under
    ``jax.distributed`` every process checks the folder before process 0 writes to it.
    """
    out_dir = options.out_dir
    if writer:
        outputs.ensure_writable_folder(out_dir)
    check_folder_free(options)  # again: another process may have written it meanwhile
    sync_processes("output folder checked")
    if writer and not options.resume:
        outputs.clear_run(out_dir)
    if writer and (options.extends or not options.resume):
        outputs.write_run_config(out_dir, record)
    sync_processes("output folder ready")
