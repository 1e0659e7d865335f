"""Checkpoints that never hold a second host copy of the training state.

A checkpoint is the folder ``<checkpoints>/<step>/``: one raw, C-ordered file per array
(``00000.bin``, ...) and ``manifest.json`` naming each array's file, shape and dtype, plus
the names of state parts left out (``omitted``, e.g. the replay). It is written as
``<step>.partial/`` and renamed once complete, so a folder named by a number is always a
whole checkpoint; a run killed while saving leaves only a ``.partial`` folder, which is
ignored and replaced.

Memory: every process writes the shards it holds, run by run of contiguous bytes. On the
CPU a shard's bytes are written straight from the array's own buffer (``np.asarray`` of a
CPU array is a view); on accelerators at most ``piece_bytes`` are copied to the host at a
time. A single-process restore overwrites a fresh state in place, ``piece_bytes`` of rows
at a time (:func:`fill_rows`); otherwise each array's shards are read into host buffers
of one shard and placed (``jax.make_array_from_callback``). The state is never held twice
either way.

With ``jax.distributed`` all processes call :meth:`Checkpoints.save` together: process 0
creates the files, every process writes its own shards, process 0 writes the manifest and
renames the folder. The checkpoint folder must be on a file system every process sees.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import threading
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

MANIFEST_NAME = "manifest.json"
PARTIAL_SUFFIX = ".partial"
FORMAT = 1
PIECE_BYTES = 64 * 2**20
"""Bytes copied between host and device at a time: from an accelerator while saving, into
the fresh state while restoring in place."""


class CheckpointMismatch(ValueError):
    """A checkpoint that reads but holds the state of another config."""


def sync_processes(name: str) -> None:
    """Wait until every process of a ``jax.distributed`` run has reached ``name``."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def contiguous_runs(shape: tuple[int, ...], index: tuple[slice, ...]
                    ) -> Iterator[tuple[tuple[int, ...], int, int]]:
    """The region ``index`` of a C-ordered array of ``shape`` as runs of contiguous
    elements: ``(prefix, start, length)`` per run, where ``prefix`` indexes the region's
    leading axes (the run is ``region[prefix]``, contiguous in a C-ordered region) and
    ``start`` / ``length`` count elements of the whole array.

    The runs span the region's last axes from the first one after which every axis is
    whole; a region sharded on the leading axis is one run.
    """
    bounds = [s.indices(n)[:2] for s, n in zip(index, shape, strict=True)]
    split = len(shape)
    while split > 0 and bounds[split - 1] == (0, shape[split - 1]):
        split -= 1
    # axes [split - 1, ...) form one run: the axis split - 1 partly, the rest whole
    lead = max(split - 1, 0)
    inner = int(np.prod(shape[lead + 1:], dtype=np.int64))
    strides = [int(np.prod(shape[a + 1:], dtype=np.int64)) for a in range(len(shape))]
    length = (bounds[lead][1] - bounds[lead][0]) * inner if shape else 1
    for prefix in np.ndindex(*[hi - lo for lo, hi in bounds[:lead]]):
        start = sum((lo + p) * strides[a] for a, (p, (lo, _)) in enumerate(
            zip(prefix, bounds[:lead], strict=True)))
        start += bounds[lead][0] * strides[lead] if shape else 0
        yield prefix, start, length


def fills_in_place() -> bool:
    """Whether :meth:`Checkpoints.restore` overwrites the arrays given as ``into`` (single
    process) rather than reading every array by shards."""
    return jax.process_count() == 1


def rows_per_piece(shape: tuple[int, ...], itemsize: int, piece_bytes: int) -> int:
    """Leading-axis rows of an array of ``shape`` in at most ``piece_bytes`` (at least 1)."""
    row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * itemsize
    return max(piece_bytes // max(row_bytes, 1), 1)


def _pwrite_all(fd: int, data: memoryview, offset: int) -> None:
    while len(data):
        written = os.pwrite(fd, data, offset)
        data, offset = data[written:], offset + written


def _host_pieces(array: Any, piece_bytes: int) -> Iterator[np.ndarray]:
    """``array`` (a host view, or a single-device accelerator array) as C-ordered host
    arrays along its first axis, each at most ``piece_bytes`` (a host view: itself)."""
    if isinstance(array, np.ndarray) or array.ndim == 0:
        yield np.ascontiguousarray(np.asarray(array))
        return
    rows = rows_per_piece(array.shape, array.dtype.itemsize, piece_bytes)
    for lo in range(0, array.shape[0], rows):
        yield np.ascontiguousarray(np.asarray(array[lo:lo + rows]))


def write_shards(path: str, array: jax.Array, piece_bytes: int = PIECE_BYTES) -> None:
    """Write the shards of ``array`` that this process holds (one replica of each) into
    ``path``, a file of the whole array's C-ordered bytes that already has its size."""
    shape, itemsize = tuple(array.shape), np.dtype(array.dtype).itemsize
    fd = os.open(path, os.O_WRONLY)
    try:
        for shard in array.addressable_shards:
            if shard.replica_id != 0:
                continue
            data = shard.data
            if all(device.platform == "cpu" for device in data.devices()):
                data = np.asarray(data)  # a view: runs are then views too, never copies
            for prefix, start, _ in contiguous_runs(shape, shard.index):
                run = data[prefix] if prefix else data
                offset = start * itemsize
                for piece in _host_pieces(run, piece_bytes):
                    _pwrite_all(fd, memoryview(piece.reshape(-1).view(np.uint8)), offset)
                    offset += piece.nbytes
    finally:
        os.close(fd)


def aligned_empty(shape: tuple[int, ...], dtype: Any, alignment: int = 64) -> np.ndarray:
    """An uninitialized host array whose data starts at a multiple of ``alignment`` bytes:
    placing it on a CPU device then keeps its buffer instead of copying it."""
    count = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    raw = np.empty(count + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start:start + count].view(dtype).reshape(shape)


def read_region(path: str, shape: tuple[int, ...], dtype: Any,
                index: tuple[slice, ...] | None = None) -> np.ndarray:
    """The region ``index`` (None or ``()``: all) of the C-ordered array of ``shape`` and
    ``dtype`` in ``path``, read into a new host array of the region's shape."""
    dtype = np.dtype(dtype)
    index = index or tuple(slice(None) for _ in shape)
    region = tuple(len(range(*s.indices(n))) for s, n in zip(index, shape, strict=True))
    out = aligned_empty(region, dtype)
    with open(path, "rb", buffering=0) as file:
        for prefix, start, length in contiguous_runs(shape, index):
            target = memoryview((out[prefix] if prefix else out).reshape(-1).view(np.uint8))
            file.seek(start * dtype.itemsize)
            done = 0
            while done < length * dtype.itemsize:
                got = file.readinto(target[done:])
                if not got:
                    raise ValueError(f"{path} ends before its data")
                done += got
    return out


@contextlib.contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Finish the block before a Ctrl-C (SIGINT) that arrives during it takes effect."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[Any] = []
    previous = signal.signal(signal.SIGINT, lambda *args: caught.append(args))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            raise KeyboardInterrupt


class Checkpoints:
    """The checkpoints of one run folder, keyed by an integer step (the chunk).

    Args:
      folder: the checkpoints folder.
      keep: how many of the newest checkpoints :meth:`save` keeps.
      piece_bytes: bytes copied from an accelerator to the host at a time.
    """

    def __init__(self, folder: str, keep: int = 2, piece_bytes: int = PIECE_BYTES):
        self.folder, self.keep, self.piece_bytes = folder, keep, piece_bytes

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

    def save(self, step: int, items: dict[str, jax.Array],
             omitted: tuple[str, ...] = ()) -> None:
        """Save ``items`` (name -> array, possibly sharded over processes) as checkpoint
        ``step``, then delete all but the newest ``keep``. ``omitted`` names state parts
        deliberately left out (stored in the manifest). A Ctrl-C during the save takes
        effect after it."""
        partial = self.path(step) + PARTIAL_SUFFIX
        names = sorted(items)
        manifest = {"format": FORMAT, "step": step, "omitted": list(omitted), "arrays": {
            name: {"file": f"{i:05d}.bin", "shape": list(items[name].shape),
                   "dtype": jnp.dtype(items[name].dtype).name,
                   "bytes": int(items[name].size) * jnp.dtype(items[name].dtype).itemsize}
            for i, name in enumerate(names)}}
        writer = jax.process_index() == 0
        with deferred_interrupt():
            if writer:
                shutil.rmtree(partial, ignore_errors=True)
                os.makedirs(partial)
                for entry in manifest["arrays"].values():
                    with open(os.path.join(partial, entry["file"]), "wb") as file:
                        file.truncate(entry["bytes"])
            sync_processes(f"checkpoint {step} files")
            for name in names:
                write_shards(os.path.join(partial, manifest["arrays"][name]["file"]),
                             items[name], self.piece_bytes)
            sync_processes(f"checkpoint {step} written")
            if writer:
                with open(os.path.join(partial, MANIFEST_NAME), "w") as file:
                    json.dump(manifest, file, indent=1)
                shutil.rmtree(self.path(step), ignore_errors=True)
                os.rename(partial, self.path(step))
                for old in self.steps()[:-self.keep]:
                    self.delete(old)
            sync_processes(f"checkpoint {step} done")

    def delete(self, step: int) -> None:
        """Remove checkpoint ``step`` (process 0 only; others do nothing)."""
        if jax.process_index() == 0:
            shutil.rmtree(self.path(step), ignore_errors=True)

    def manifest(self, step: int) -> dict[str, Any]:
        """Checkpoint ``step``'s manifest; ``ValueError`` (one line, naming the file) when it
        is missing, unreadable, or not one of this format, or when a data file has another
        size than the manifest says (a truncated write)."""
        path = os.path.join(self.path(step), MANIFEST_NAME)
        if not os.path.exists(path):
            found = ("an orbax checkpoint of an earlier version"
                     if os.path.exists(os.path.join(self.path(step), "_CHECKPOINT_METADATA"))
                     else "no manifest")
            raise ValueError(f"{path} is missing ({found})")
        try:
            with open(path) as file:
                manifest = json.load(file)
            arrays = manifest["arrays"]
            if manifest.get("format") != FORMAT:
                raise KeyError("format")
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{path} cannot be read ({type(error).__name__}: {error})") from None
        for name, entry in arrays.items():
            file = os.path.join(self.path(step), entry["file"])
            size = os.path.getsize(file) if os.path.exists(file) else None
            if size != entry["bytes"]:
                raise ValueError(f"{file} ({name}) holds {size} bytes, the manifest says "
                                 f"{entry['bytes']}")
        return manifest

    def check(self, step: int, target: dict[str, Any]) -> dict[str, Any]:
        """Checkpoint ``step``'s manifest after checking that it holds every array of
        ``target`` (name -> array or ``ShapeDtypeStruct``) but those under the parts its
        ``omitted`` names, with the same shapes and dtypes; :class:`CheckpointMismatch`
        naming the first that differs."""
        manifest = self.manifest(step)
        arrays, left_out = manifest["arrays"], tuple(manifest.get("omitted", ()))
        for name, want in target.items():
            got = arrays.get(name)
            if got is None and name.startswith(left_out) and left_out:
                continue
            if (got is None or tuple(got["shape"]) != tuple(want.shape)
                    or jnp.dtype(got["dtype"]) != jnp.dtype(want.dtype)):
                found = "missing" if got is None else f"{got['dtype']}{list(got['shape'])}"
                raise CheckpointMismatch(
                    f"the checkpoint after chunk {step} in {self.folder} does not match the "
                    f"config.json beside it: {name} is {found} there, the config needs "
                    f"{jnp.dtype(want.dtype)}{list(want.shape)}")
        return manifest

    def restore(self, step: int, target: dict[str, Any],
                shardings: dict[str, Any] | None = None,
                into: dict[str, jax.Array] | None = None) -> dict[str, jax.Array]:
        """The arrays of checkpoint ``step`` that ``target`` names (name ->
        ``ShapeDtypeStruct``), each placed with ``shardings[name]`` (default: the first
        device). Arrays of parts the checkpoint omitted are left out of the result. Raises
        as :meth:`check`.

        Without ``into`` each array is read one shard at a time into a host buffer that the
        CPU then uses in place. Such borrowed buffers cannot be donated, so a program that
        donates its input copies them; ``into`` avoids that: arrays of the same shapes (a
        fresh state's, nothing else referring to them) that are overwritten in place,
        ``piece_bytes`` of rows at a time (single-process runs; with several processes
        every array is read by shards).
        """
        manifest = self.check(step, target)
        device = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
        fill = into is not None and fills_in_place()
        out = {}
        for name, want in target.items():
            entry = manifest["arrays"].get(name)
            if entry is None:
                continue
            path = os.path.join(self.path(step), entry["file"])
            shape, dtype = tuple(want.shape), jnp.dtype(want.dtype)
            if fill and len(shape) and name in into:
                out[name] = fill_rows(into.pop(name), path, self.piece_bytes)
                continue
            sharding = (shardings or {}).get(name, device)
            out[name] = jax.make_array_from_callback(
                shape, sharding, lambda index, p=path, s=shape, d=dtype: read_region(
                    p, s, d, index))
        return out


@functools.partial(jax.jit, donate_argnums=0)
def _write_rows(array: jax.Array, rows: jax.Array, start: jax.Array) -> jax.Array:
    return jax.lax.dynamic_update_slice_in_dim(array, rows.astype(array.dtype), start, axis=0)


def fill_rows(array: jax.Array, path: str, piece_bytes: int = PIECE_BYTES) -> jax.Array:
    """``array`` (donated) overwritten in place with the C-ordered array of its shape in
    ``path``, read ``piece_bytes`` of leading-axis rows at a time."""
    shape, dtype = tuple(array.shape), jnp.dtype(array.dtype)
    step = rows_per_piece(shape, dtype.itemsize, piece_bytes)
    whole = tuple(slice(None) for _ in shape[1:])
    for lo in range(0, shape[0], step):
        rows = read_region(path, shape, dtype, (slice(lo, min(lo + step, shape[0])), *whole))
        array = _write_rows(array, rows, np.int32(lo))
    return array


def read_arrays(folder: str, step: int | None = None) -> dict[str, np.ndarray]:
    """Every array of checkpoint ``step`` (None: the newest) in the checkpoints ``folder``,
    as host arrays keyed by their state path (e.g. ``".algo.actor['params']..."``)."""
    checkpoints = Checkpoints(folder)
    step = checkpoints.latest_step() if step is None else step
    if step is None:
        raise ValueError(f"{folder} holds no checkpoints")
    manifest = checkpoints.manifest(step)
    return {name: read_region(os.path.join(checkpoints.path(step), entry["file"]),
                              tuple(entry["shape"]), jnp.dtype(entry["dtype"]))
            for name, entry in manifest["arrays"].items()}
