"""Checkpoints: orbax for the learners, a streaming writer for the replay.

A checkpoint is the folder ``<checkpoints>/<step>/``:

- ``state/``: an orbax-checkpoint PyTree checkpoint (``StandardCheckpointHandler``) of every
  array but the streamed ones, as nested dicts named by the state's tree path
  (``state["algo"]["actor"]["params"]...``, each leaf with its leading seed axis). Another
  JAX program restores it with ``orbax.checkpoint`` alone::

      import orbax.checkpoint as ocp
      state = ocp.StandardCheckpointer().restore("/abs/runs/qmix/checkpoints/9/state")
      params = state["algo"]["params"]   # [S, ...] per leaf: one entry per seed

- ``replay/``: the replay (the arrays named by ``streamed``), one raw, C-ordered file per
  array (``00000.bin``, ...) and ``manifest.json`` naming each array's file, shape, dtype
  and ``stored``: the leading corner the file holds (a replay's written slots, so that a
  checkpoint grows with the data, not the capacity); the rest is zeros, as in a fresh
  replay, and is restored so.
- ``checkpoint.json``: every array's name, shape, dtype and part, the names of state
  parts left out (``omitted``, e.g. the replay with ``--checkpoint-replay false``), and the
  size and CRC-32 of every file of ``state/`` (``state_files``): a damaged checkpoint is
  found by reading its files, before orbax is asked to restore it (orbax's failed restore
  left its asynchronous reads printing tracebacks after the error).

A checkpoint is written as ``<step>.partial/`` and renamed once complete, so a folder named
by a number is always a whole checkpoint; a run killed while saving leaves only a
``.partial`` folder, which is ignored and replaced.

Why the replay is not an orbax item: saving a 2 GiB array through orbax 0.12 took 2.6x the
streaming writer's time on this project's CPU machine, one measurement saw orbax's host copy
raise the peak memory by 1.77 GiB (``docs/training.md``), and its per-save byte limit
(``save_concurrent_gb``) waits for ever on an array larger than the limit. The streaming
writer (:mod:`~jaxmarl_accel.runs.array_files`) writes each shard's bytes straight from the
array's own buffer on the CPU (``np.asarray`` of a CPU array is a view) and copies at most
``piece_bytes`` at a time from an accelerator. A single-process restore overwrites a fresh
replay in place, ``piece_bytes`` at a time, with at most two pieces held
(:func:`~.array_files.fill_rows`); otherwise each array's shards are read into host buffers
of one shard and placed (``jax.make_array_from_callback``). The replay is never held twice
either way.

With ``jax.distributed`` all processes call :meth:`Checkpoints.save` together: orbax
writes each process's shards of the learners; for the replay process 0 creates the files,
every process writes its own shards, process 0 writes the manifests and renames the folder.
The checkpoint folder must be on a file system every process sees.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.runs.array_files import (
    PIECE_BYTES,
    check_digests,
    file_digests,
    fill_rows,
    read_region,
    write_shards,
)
from jaxmarl_accel.runs.interrupts import deferred_interrupt
from jaxmarl_accel.runs.tree_paths import from_nested, nested

MANIFEST_NAME = "manifest.json"
INDEX_NAME = "checkpoint.json"
STATE_NAME = "state"
"""The orbax PyTree checkpoint of the learners (every array not streamed)."""
STREAMED_NAME = "replay"
"""The streamed arrays' raw files and manifest."""
PARTIAL_SUFFIX = ".partial"
FORMAT = 3
"""Written into ``checkpoint.json`` and ``manifest.json``; 3: a streamed array's file may
hold only its leading corner (``"stored"``)."""
READABLE = (2, 3)
"""The formats :meth:`Checkpoints.restore` reads (2: every streamed array whole)."""


class CheckpointMismatch(ValueError):
    """A checkpoint that reads but holds the state of another config."""


def sync_processes(name: str) -> None:
    """Wait until every process of a ``jax.distributed`` run has reached ``name``."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def fills_in_place() -> bool:
    """Whether :meth:`Checkpoints.restore` overwrites the arrays given as ``into`` (single
    process) rather than reading every array by shards."""
    return jax.process_count() == 1


def quiet_closed_loop_reports() -> None:
    """Drop the reports of ``RuntimeError: Event loop is closed`` from now on: after a failed
    orbax restore (a damaged checkpoint written without ``state_files``), tensorstore's reads
    still in flight complete into orbax's closed event loop, and each printed that traceback
    (through ``sys.unraisablehook``) after the one-line error."""
    previous = sys.unraisablehook
    if getattr(previous, "drops_closed_loop", False):
        return

    def hook(report: Any) -> None:
        if report.exc_type is RuntimeError and str(report.exc_value) == "Event loop is closed":
            return
        previous(report)

    hook.drops_closed_loop = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook


def _orbax_error(path: str, error: BaseException) -> ValueError:
    text = (str(error).strip().splitlines() or [type(error).__name__])[0][:160]
    return ValueError(f"{path} cannot be restored by orbax ({type(error).__name__}: {text})")


class Checkpoints:
    """The checkpoints of one run folder, keyed by an integer step (the chunk).

    Args:
      folder: the checkpoints folder.
      keep: how many of the newest checkpoints :meth:`save` keeps.
      piece_bytes: bytes copied from an accelerator to the host at a time.
      streamed: name prefixes of the arrays written by the streaming writer (``replay/``);
        every other array is saved by orbax (``state/``).
    """

    def __init__(self, folder: str, keep: int = 2, piece_bytes: int = PIECE_BYTES,
                 streamed: tuple[str, ...] = ()):
        self.folder, self.keep, self.piece_bytes = folder, keep, piece_bytes
        self.streamed = streamed

    def steps(self) -> list[int]:
        """The complete checkpoints' steps, oldest first."""
        if not os.path.isdir(self.folder):
            return []
        return sorted(int(name) for name in os.listdir(self.folder) if name.isdigit())

    def path(self, step: int) -> str:
        return os.path.join(self.folder, str(step))

    def latest_step(self) -> int | None:
        steps = self.steps()
        return steps[-1] if steps else None

    def _is_streamed(self, name: str) -> bool:
        return bool(self.streamed) and name.startswith(self.streamed)

    def save(self, step: int, items: dict[str, jax.Array], omitted: tuple[str, ...] = (),
             stored: dict[str, tuple[int, ...]] | None = None) -> None:
        """Save ``items`` (name -> array, possibly sharded over processes) as checkpoint
        ``step``, then delete all but the newest ``keep``. ``omitted`` names state parts
        deliberately left out (stored in ``checkpoint.json``). ``stored`` cuts streamed
        arrays to their leading corner (name -> the extent kept on each axis; the rest of
        the array must be zeros, as a fresh replay's slots are: it is restored as zeros).
        A Ctrl-C during the save takes effect after it."""
        import orbax.checkpoint as ocp

        partial = self.path(step) + PARTIAL_SUFFIX
        names = sorted(items)
        streamed = [name for name in names if self._is_streamed(name)]
        learned = [name for name in names if not self._is_streamed(name)]
        entries = {name: {"part": STREAMED_NAME if name in streamed else STATE_NAME,
                          "shape": list(items[name].shape),
                          "dtype": jnp.dtype(items[name].dtype).name} for name in names}
        corners = {name: _corner(name, items[name].shape, (stored or {}).get(name))
                   for name in streamed}
        if stored and stored.keys() - corners.keys():
            raise ValueError(f"stored names arrays that are not streamed: "
                             f"{sorted(stored.keys() - corners.keys())}")
        manifest = {"format": FORMAT, "step": step, "arrays": {
            name: {"file": f"{i:05d}.bin", "shape": list(items[name].shape),
                   "stored": list(corners[name]), "dtype": jnp.dtype(items[name].dtype).name,
                   "bytes": int(np.prod(corners[name], dtype=np.int64))
                   * jnp.dtype(items[name].dtype).itemsize}
            for i, name in enumerate(streamed)}}
        replay = os.path.join(partial, STREAMED_NAME)
        writer = jax.process_index() == 0
        with deferred_interrupt():
            if writer:
                shutil.rmtree(partial, ignore_errors=True)
                os.makedirs(partial)
                if streamed:
                    os.makedirs(replay)
                for entry in manifest["arrays"].values():
                    with open(os.path.join(replay, entry["file"]), "wb") as file:
                        file.truncate(entry["bytes"])
            sync_processes(f"checkpoint {step} files")
            if learned:
                with ocp.Checkpointer(ocp.StandardCheckpointHandler()) as checkpointer:
                    checkpointer.save(os.path.abspath(os.path.join(partial, STATE_NAME)),
                                      args=ocp.args.StandardSave(
                                          nested({n: items[n] for n in learned})))
            for name in streamed:
                write_shards(os.path.join(replay, manifest["arrays"][name]["file"]),
                             items[name], self.piece_bytes, corners[name])
            sync_processes(f"checkpoint {step} written")
            if writer:
                if streamed:
                    with open(os.path.join(replay, MANIFEST_NAME), "w") as file:
                        json.dump(manifest, file, indent=1)
                state = os.path.join(partial, STATE_NAME)
                files = file_digests(state) if os.path.isdir(state) else {}
                with open(os.path.join(partial, INDEX_NAME), "w") as file:
                    json.dump({"format": FORMAT, "step": step, "omitted": list(omitted),
                               "arrays": entries, "state_files": files}, file, indent=1)
                shutil.rmtree(self.path(step), ignore_errors=True)
                os.rename(partial, self.path(step))
                for old in self.steps()[:-self.keep]:
                    self.delete(old)
            sync_processes(f"checkpoint {step} done")

    def discard_partial(self, step: int) -> None:
        """Remove the incomplete files of checkpoint ``step`` (after a failed :meth:`save`;
        process 0 only)."""
        if jax.process_index() == 0:
            shutil.rmtree(self.path(step) + PARTIAL_SUFFIX, ignore_errors=True)

    def delete(self, step: int) -> None:
        """Remove checkpoint ``step`` (process 0 only; others do nothing)."""
        if jax.process_index() == 0:
            shutil.rmtree(self.path(step), ignore_errors=True)

    def index(self, step: int) -> dict[str, Any]:
        """Checkpoint ``step``'s ``checkpoint.json``; ``ValueError`` (one line, naming the
        file) when it is missing, unreadable or not of this format, when a file of the
        learners' ``state/`` is missing or holds other bytes than were written (its size and
        CRC-32 in ``state_files``; a checkpoint written before them has none to check), and
        when the replay's manifest or data files are (a data file of another size). The
        replay's manifest, read and checked once here, is under the key ``"manifest"``."""
        path = os.path.join(self.path(step), INDEX_NAME)
        if not os.path.exists(path):
            found = ("a checkpoint of an earlier version (raw files without orbax)"
                     if os.path.exists(os.path.join(self.path(step), MANIFEST_NAME))
                     else "no index")
            raise ValueError(f"{path} is missing ({found})")
        index = _read_json(path, "arrays")
        check_digests(os.path.join(self.path(step), STATE_NAME), index.get("state_files", {}))
        if any(entry["part"] == STREAMED_NAME for entry in index["arrays"].values()):
            index["manifest"] = self.manifest(step)
        return index

    def manifest(self, step: int) -> dict[str, Any]:
        """The replay's manifest in checkpoint ``step``, checked against its data files'
        sizes; ``ValueError`` (one line, naming the file) as :meth:`index`."""
        folder = os.path.join(self.path(step), STREAMED_NAME)
        path = os.path.join(folder, MANIFEST_NAME)
        if not os.path.exists(path):
            raise ValueError(f"{path} is missing")
        manifest = _read_json(path, "arrays")
        for name, entry in manifest["arrays"].items():
            file = os.path.join(folder, entry["file"])
            size = os.path.getsize(file) if os.path.exists(file) else None
            if size != entry["bytes"]:
                raise ValueError(f"{file} ({name}) holds {size} bytes, the manifest says "
                                 f"{entry['bytes']}")
        return manifest

    def check(self, step: int, target: dict[str, Any],
              optional: tuple[str, ...] = ()) -> dict[str, Any]:
        """Checkpoint ``step``'s index after checking that it holds every array of
        ``target`` (name -> array or ``ShapeDtypeStruct``) but those under the parts its
        ``omitted`` names or under the name prefixes ``optional`` (arrays it may lack, e.g.
        ones its writer did not have yet), with the same shapes and dtypes;
        :class:`CheckpointMismatch` naming the first that differs."""
        index = self.index(step)
        skippable = (*index.get("omitted", ()), *optional)
        for name, want in target.items():
            got = index["arrays"].get(name)
            if got is None and skippable and name.startswith(skippable):
                continue
            if (got is None or tuple(got["shape"]) != tuple(want.shape)
                    or jnp.dtype(got["dtype"]) != jnp.dtype(want.dtype)):
                found = "missing" if got is None else f"{got['dtype']}{list(got['shape'])}"
                raise CheckpointMismatch(
                    f"the checkpoint after chunk {step} in {self.folder} does not match the "
                    f"config.json beside it: {name} is {found} there, the config needs "
                    f"{jnp.dtype(want.dtype)}{list(want.shape)}")
        return index

    def restore(self, step: int, target: dict[str, Any],
                shardings: dict[str, Any] | None = None,
                into: dict[str, jax.Array] | None = None,
                optional: tuple[str, ...] = ()) -> dict[str, jax.Array]:
        """The arrays of checkpoint ``step`` that ``target`` names (name ->
        ``ShapeDtypeStruct``), each placed with ``shardings[name]`` (default: the first
        device). Arrays of parts the checkpoint omitted, and arrays under the prefixes
        ``optional`` that it lacks, are left out of the result. Raises as :meth:`check`;
        ``ValueError`` (one line) when orbax cannot restore ``state/``.

        Streamed arrays: without ``into`` each is read one shard at a time into a host
        buffer that the CPU then uses in place. Such borrowed buffers cannot be donated, so
        a program that donates its input copies them; ``into`` avoids that: arrays of the
        same shapes (a fresh state's, nothing else referring to them) that are overwritten
        in place, ``piece_bytes`` at a time (single-process runs; with several
        processes every array is read by shards).
        """
        import orbax.checkpoint as ocp

        index = self.check(step, target, optional)
        device = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
        shardings = shardings or {}
        present = {name: want for name, want in target.items() if name in index["arrays"]}
        learned = [n for n in present if index["arrays"][n]["part"] == STATE_NAME]
        out = {}
        if learned:
            path = os.path.abspath(os.path.join(self.path(step), STATE_NAME))
            abstract = nested({n: jax.ShapeDtypeStruct(
                present[n].shape, present[n].dtype, sharding=shardings.get(n, device))
                for n in learned})
            try:
                with ocp.Checkpointer(ocp.StandardCheckpointHandler()) as checkpointer:
                    tree = checkpointer.restore(path, args=ocp.args.StandardRestore(abstract))
            except Exception as error:  # orbax and tensorstore raise many kinds
                quiet_closed_loop_reports()
                raise _orbax_error(path, error) from None
            out.update(from_nested(tree, learned))
        streamed = [n for n in present if index["arrays"][n]["part"] == STREAMED_NAME]
        manifest = index.get("manifest", {"arrays": {}})
        fill = into is not None and fills_in_place()
        folder = os.path.join(self.path(step), STREAMED_NAME)
        for name in streamed:
            entry, want = manifest["arrays"][name], present[name]
            path = os.path.join(folder, entry["file"])
            shape, dtype, corner = tuple(want.shape), jnp.dtype(want.dtype), stored_corner(entry)
            if fill and len(shape) and name in into:
                out[name] = fill_rows(into.pop(name), path, self.piece_bytes, corner)
                continue
            out[name] = jax.make_array_from_callback(
                shape, shardings.get(name, device),
                lambda index, p=path, s=shape, d=dtype, c=corner: read_region(p, s, d, index, c))
        return out


def _read_json(path: str, required: str) -> dict[str, Any]:
    try:
        with open(path) as file:
            data = json.load(file)
        data[required]  # noqa: B018
        if data.get("format") not in READABLE:
            raise KeyError("format")
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path} cannot be read ({type(error).__name__}: {error})") from None
    return data


def read_streamed(folder: str, names: tuple[str, ...], step: int | None = None,
                  optional: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """The streamed (``replay/``) arrays ``names`` of checkpoint ``step`` (None: the newest)
    in the checkpoints ``folder``, read from their raw files alone (a replay's sampler state
    without loading its gigabytes of experience), keyed by name, each with its leading seed
    axis; the ``optional`` names too where the checkpoint streams them. An unknown name of
    ``names``: one-line ``ValueError`` listing the streamed names."""
    checkpoints = Checkpoints(folder)
    step = checkpoints.latest_step() if step is None else step
    if step is None:
        raise ValueError(f"{folder} holds no checkpoints")
    entries = checkpoints.manifest(step)["arrays"]
    missing = [name for name in names if name not in entries]
    if missing:
        raise ValueError(f"checkpoint {checkpoints.path(step)} streams no {missing[0]!r}; it "
                         f"streams {', '.join(sorted(entries))}")
    names = (*names, *(name for name in optional if name in entries))
    replay = os.path.join(checkpoints.path(step), STREAMED_NAME)
    out = {}
    for name in names:
        entry = entries[name]
        corner = stored_corner(entry)
        data = np.fromfile(os.path.join(replay, entry["file"]), dtype=entry["dtype"])
        out[name] = np.zeros(entry["shape"], data.dtype)
        out[name][tuple(slice(0, n) for n in corner)] = data.reshape(corner)
    return out


def stored_corner(entry: dict[str, Any]) -> tuple[int, ...]:
    """The leading corner of a streamed array that its file holds, from its manifest entry
    (a format-2 entry has no ``"stored"``: the whole array)."""
    return tuple(entry.get("stored", entry["shape"]))


def _corner(name: str, shape: tuple[int, ...], corner: tuple[int, ...] | None
            ) -> tuple[int, ...]:
    if corner is None:
        return tuple(shape)
    corner = tuple(int(n) for n in corner)
    if len(corner) != len(shape) or not all(
            0 <= k <= n for k, n in zip(corner, shape, strict=True)):
        raise ValueError(f"{name}: the stored corner {list(corner)} is not a leading corner "
                         f"of its shape {list(shape)}")
    return corner
