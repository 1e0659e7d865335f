"""Arrays as raw files: each a file of the C-ordered bytes of the whole array, or of its
leading corner (``array[:k0, :k1, ...]``: the written slots of a replay), written and read
one shard (and at most ``piece_bytes``) at a time, so that an array is never held twice.

The writer writes each shard this process holds straight from the array's own buffer on the
CPU (``np.asarray`` of a CPU array is a view) and copies at most ``piece_bytes`` at a time
from an accelerator (:func:`write_shards`). A reader reads any region of the file into a new
host array, with zeros outside a stored corner (:func:`read_region`), or overwrites an
existing array (or its corner) in place, ``piece_bytes`` at a time (:func:`fill_rows`).
:mod:`~jaxmarl_accel.runs.checkpoint` stores the replay this way.
"""

from __future__ import annotations

import functools
import os
import zlib
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

PIECE_BYTES = 64 * 2**20
"""Bytes copied between host and device at a time: from an accelerator while saving, into
the fresh state while restoring in place."""


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


def pieces(shape: tuple[int, ...], itemsize: int, piece_bytes: int
           ) -> Iterator[tuple[slice, ...]]:
    """An array of ``shape`` as consecutive regions in C order, each contiguous and at most
    ``piece_bytes`` (at least one element): one index of every axis before some axis, a
    range of that axis, every later axis whole. The axis is the first whose later axes fit
    in ``piece_bytes``, so a leading row larger than that (one seed's replay) is split too.
    """
    if not shape:
        yield ()
        return
    axis = 0
    while axis < len(shape) - 1 and (
            int(np.prod(shape[axis + 1:], dtype=np.int64)) * itemsize > piece_bytes):
        axis += 1
    inner = int(np.prod(shape[axis + 1:], dtype=np.int64)) * itemsize
    step = max(piece_bytes // max(inner, 1), 1)
    whole = tuple(slice(None) for _ in shape[axis + 1:])
    for outer in np.ndindex(*shape[:axis]):
        fixed = tuple(slice(i, i + 1) for i in outer)
        for lo in range(0, shape[axis], step):
            yield (*fixed, slice(lo, min(lo + step, shape[axis])), *whole)


def _pwrite_all(fd: int, data: memoryview, offset: int) -> None:
    while len(data):
        written = os.pwrite(fd, data, offset)
        data, offset = data[written:], offset + written


def _host_pieces(array: Any, piece_bytes: int, prefix: tuple[int, ...] = (),
                 corner: tuple[int, ...] | None = None) -> Iterator[np.ndarray]:
    """The region ``array[prefix]`` of ``array`` (a host array, or a single-device
    accelerator array), cut to its leading ``corner`` (its extent on each remaining axis;
    None: whole), as consecutive C-ordered host arrays (:func:`pieces`), each at most
    ``piece_bytes``: views of a host array where the piece is contiguous in it, else
    copies of one piece."""
    corner = tuple(array.shape[len(prefix):]) if corner is None else corner
    for index in pieces(corner, np.dtype(array.dtype).itemsize, piece_bytes):
        # explicit bounds: a whole axis of the corner may be part of one of the array
        index = tuple(slice(*s.indices(n)[:2]) for s, n in zip(index, corner, strict=True))
        yield np.ascontiguousarray(np.asarray(array[(*prefix, *index)]))


def clip_to_corner(shape: tuple[int, ...], index: tuple[slice, ...],
                   corner: tuple[int, ...]) -> tuple[slice, ...] | None:
    """The part of the region ``index`` of an array of ``shape`` that lies in its leading
    ``corner`` (``[0, corner[a])`` on each axis a), in the same coordinates; None when
    that part is empty."""
    bounds = [s.indices(n)[:2] for s, n in zip(index, shape, strict=True)]
    clipped = tuple(slice(lo, min(hi, k)) for (lo, hi), k in zip(bounds, corner, strict=True))
    return None if any(s.start >= s.stop for s in clipped) else clipped


def write_shards(path: str, array: jax.Array, piece_bytes: int = PIECE_BYTES,
                 corner: tuple[int, ...] | None = None) -> None:
    """Write the shards of ``array`` that this process holds (one replica of each), cut to
    the array's leading ``corner`` (``array[:corner[0], :corner[1], ...]``; None: whole),
    into ``path``, a file of the corner's C-ordered bytes that already has its size."""
    shape, itemsize = tuple(array.shape), np.dtype(array.dtype).itemsize
    corner = shape if corner is None else tuple(corner)
    fd = os.open(path, os.O_WRONLY)
    try:
        for shard in array.addressable_shards:
            clipped = clip_to_corner(shape, shard.index, corner)
            if shard.replica_id != 0 or clipped is None:
                continue
            data = shard.data
            if all(device.platform == "cpu" for device in data.devices()):
                data = np.asarray(data)  # a view: pieces are then views where contiguous
            # the clipped region is the shard's own leading corner of these extents
            extents = tuple(s.stop - s.start for s in clipped)
            for prefix, start, _ in contiguous_runs(corner, clipped):
                offset = start * itemsize
                for piece in _host_pieces(data, piece_bytes, prefix, extents[len(prefix):]):
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
                index: tuple[slice, ...] | None = None,
                corner: tuple[int, ...] | None = None) -> np.ndarray:
    """The region ``index`` (None or ``()``: all) of the array of ``shape`` and ``dtype``
    whose leading ``corner`` (None: the whole array) ``path`` holds as C-ordered bytes,
    read into a new host array of the region's shape; zeros outside the corner."""
    dtype = np.dtype(dtype)
    index = index or tuple(slice(None) for _ in shape)
    corner = tuple(shape) if corner is None else tuple(corner)
    region = tuple(len(range(*s.indices(n))) for s, n in zip(index, shape, strict=True))
    out = aligned_empty(region, dtype)
    clipped = clip_to_corner(shape, index, corner)
    extents = () if clipped is None else tuple(s.stop - s.start for s in clipped)
    if extents != region:
        out.fill(0)
    if clipped is None:
        return out
    # the clipped region is the output's leading corner of these extents
    target = out[(..., *(slice(0, n) for n in extents))]  # a view, also of a 0-d array
    with open(path, "rb", buffering=0) as file:
        for prefix, start, _ in contiguous_runs(corner, clipped):
            _read_into(file, start * dtype.itemsize, target[prefix] if prefix else target)
    return out


def _read_into(file: Any, offset: int, target: np.ndarray) -> None:
    """Fill ``target`` (a host array or view, any strides) with the C-ordered bytes of
    ``file`` from ``offset`` on: straight into it where it is contiguous, else through a
    buffer of at most :data:`PIECE_BYTES` (or of one element)."""
    if target.flags.c_contiguous:
        _readinto_all(file, offset, memoryview(target.reshape(-1).view(np.uint8)))
        return
    row = target[0].nbytes
    step = PIECE_BYTES // row
    if not step:
        for i in range(target.shape[0]):
            _read_into(file, offset + i * row, target[i])
        return
    for lo in range(0, target.shape[0], step):
        part = target[lo:lo + step]
        buffer = np.empty(part.shape, part.dtype)
        _readinto_all(file, offset + lo * row, memoryview(buffer.reshape(-1).view(np.uint8)))
        part[...] = buffer


def _readinto_all(file: Any, offset: int, target: memoryview) -> None:
    file.seek(offset)
    done = 0
    while done < len(target):
        got = file.readinto(target[done:])
        if not got:
            raise ValueError(f"{file.name} ends before its data")
        done += got


@functools.partial(jax.jit, donate_argnums=0)
def _write_region(array: jax.Array, values: jax.Array, starts: jax.Array) -> jax.Array:
    """``array`` (donated: written in place) with ``values`` from the ``starts`` (one index
    per axis) on."""
    return jax.lax.dynamic_update_slice(array, values.astype(array.dtype), tuple(starts))


def fill_rows(array: jax.Array, path: str, piece_bytes: int = PIECE_BYTES,
              corner: tuple[int, ...] | None = None) -> jax.Array:
    """``array`` (donated) overwritten in place with the C-ordered array of its shape in
    ``path``, read ``piece_bytes`` at a time (:func:`pieces`); with a ``corner``, ``path``
    holds only the array's leading corner (:func:`write_shards`), and only that corner is
    overwritten: the rest of ``array`` stays as it is.

    At most two pieces are held at once: the next piece is read while one is written, and
    each write is dispatched once the one before it (at first: whatever computes ``array``,
    e.g. a fresh state's initialization) has finished. A write dispatched before its input
    exists waits with its piece, so without that wait the loop reads ahead and may hold
    the whole file.
    """
    shape, dtype = tuple(array.shape), jnp.dtype(array.dtype)
    corner = shape if corner is None else tuple(corner)
    for index in pieces(corner, dtype.itemsize, piece_bytes):
        values = read_region(path, corner, dtype, index)
        starts = np.array([s.start or 0 for s in index], np.int32)
        array = _write_region(array.block_until_ready(), values, starts)
    return array


def file_digests(folder: str) -> dict[str, list[int]]:
    """Every file under ``folder`` (paths relative to it, ``/``-separated) with its size in
    bytes and CRC-32: what :func:`check_digests` compares a folder against later."""
    digests = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            digests[os.path.relpath(path, folder).replace(os.sep, "/")] = [
                os.path.getsize(path), _crc32(path)]
    return dict(sorted(digests.items()))


def check_digests(folder: str, digests: dict[str, list[int]]) -> None:
    """``ValueError`` (one line, naming the file) when a file that :func:`file_digests` listed
    under ``folder`` is missing or holds other bytes (another size or CRC-32)."""
    for name, (size, crc) in digests.items():
        path = os.path.join(folder, *name.split("/"))
        if not os.path.isfile(path):
            raise ValueError(f"{path} is missing")
        if os.path.getsize(path) != size:
            raise ValueError(f"{path} holds {os.path.getsize(path)} bytes, {size} were written")
        if _crc32(path) != crc:
            raise ValueError(f"{path} holds other bytes than were written (CRC-32 differs)")


def _crc32(path: str) -> int:
    crc = 0
    with open(path, "rb") as file:
        while block := file.read(2**20):
            crc = zlib.crc32(block, crc)
    return crc
