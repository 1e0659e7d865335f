"""Raw array files: pieces within their byte budget whatever the shape, and a restore that
overwrites the target in place and holds at most two pieces, even while the target is
still being computed."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmarl_accel.runs.array_files import _host_pieces, fill_rows, pieces
from tests.runs.test_checkpoint import run_script


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=0, max_size=4), st.sampled_from([1, 2, 4]),
       st.integers(1, 200))
def test_pieces_cover_the_array_in_order_within_the_budget(shape, itemsize, piece_bytes):
    shape = tuple(shape)
    flat = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
    covered = []
    for index in pieces(shape, itemsize, piece_bytes):
        region = flat[index].reshape(-1)
        assert region.size * itemsize <= max(piece_bytes, itemsize)
        covered.extend(region.tolist())
    assert covered == list(range(flat.size))


def test_host_pieces_of_a_device_array_split_a_row_larger_than_the_budget():
    array = jnp.arange(2 * 5 * 3, dtype=jnp.float32).reshape(2, 5, 3)  # rows of 60 bytes
    host = list(_host_pieces(array, 24))
    assert max(piece.nbytes for piece in host) <= 24
    np.testing.assert_array_equal(np.concatenate([p.reshape(-1) for p in host]),
                                  np.asarray(array).reshape(-1))


def test_fill_rows_writes_into_the_donated_array(tmp_path):
    """Every piece is written into the target's own buffer (the write donates it, XLA
    aliases output to input), rows larger than a piece included."""
    data = np.arange(3 * 7 * 5, dtype=np.int16).reshape(3, 7, 5).astype(jnp.bfloat16)
    path = str(tmp_path / "a.bin")
    data.tofile(path)
    target = jnp.zeros(data.shape, data.dtype).block_until_ready()
    pointer = target.unsafe_buffer_pointer()
    out = jax.block_until_ready(fill_rows(target, path, piece_bytes=16))  # rows of 70 bytes
    assert target.is_deleted() and out.unsafe_buffer_pointer() == pointer
    np.testing.assert_array_equal(np.asarray(out), data)


def test_restoring_in_place_holds_at_most_two_pieces(tmp_path):
    """256 MiB restored 4 MiB at a time into a target whose computation is still running
    (a fresh state's initialization, dispatched asynchronously): the peak resident memory
    grows by the target and at most a few pieces. Rows of one piece each (128 MiB) or
    reading ahead of the writes would add 128 to 256 MiB."""
    path = str(tmp_path / "replay.bin")
    np.arange(2 * 32 * 2**20, dtype=np.float32).tofile(path)
    out = run_script(f"""
        import jax, jax.numpy as jnp, numpy as np
        from jaxmarl_accel.runs.array_files import fill_rows

        def mib(key):
            with open("/proc/self/status") as status:
                return next(int(l.split()[1]) for l in status if l.startswith(key)) / 1024

        shape = (2, 32, 2**20)

        @jax.jit
        def slow_zeros(x):  # seconds of matrix products: dispatched without waiting
            m = jnp.full((2048, 2048), x)
            return jnp.zeros(shape, jnp.float32) + (m @ m @ m).sum() * 0

        jax.block_until_ready(slow_zeros.lower(jnp.float32(1)).compile())
        before = mib("VmRSS")
        out = fill_rows(slow_zeros(jnp.float32(1)), {path!r}, 4 * 2**20).block_until_ready()
        assert out[1, 31, -1] == np.float32(2 * 32 * 2**20 - 1)
        print(mib("VmHWM") - before - 256)
    """)
    grown = float(out.split()[-1])
    assert grown < 48, f"restoring 256 MiB held {grown:.0f} MiB besides the target"
    assert os.path.getsize(path) == 2**28
