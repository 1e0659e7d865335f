"""Checkpoints hold what was written: a replay's storage is saved up to the slots it has
written, so a checkpoint grows with the data, not the capacity; it is restored into the
full-capacity replay with the unwritten slots as a fresh replay has them, and a resumed
run repeats the uninterrupted one bit for bit (transition and episode replay, partly
filled and wrapped)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmarl_accel.buffers import make_buffer
from jaxmarl_accel.cli import run
from jaxmarl_accel.runs import run_store
from jaxmarl_accel.runs.array_files import read_region, write_shards
from jaxmarl_accel.runs.checkpoint import Checkpoints, read_streamed
from tests.cli.test_evaluate import STAG_TINY
from tests.cli.test_run import TIMING, TINY
from tests.runs.test_checkpoint import read_arrays, run_script

pytestmark = pytest.mark.xdist_group("run")


def with_flag(argv: list[str], flag: str, value: str) -> list[str]:
    """``argv`` with ``flag``'s value replaced (or the flag added)."""
    if flag not in argv:
        return [*argv, flag, value]
    at = argv.index(flag)
    return [*argv[:at + 1], value, *argv[at + 2:]]


@st.composite
def corners_and_regions(draw):
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=0, max_size=4)))
    corner = tuple(draw(st.integers(0, n)) for n in shape)
    index = []
    for n in shape:
        lo = draw(st.integers(0, n - 1))
        index.append(slice(lo, draw(st.integers(lo + 1, n))))
    return shape, corner, tuple(index)


@settings(max_examples=150, deadline=None)
@given(corners_and_regions())
def test_a_corner_file_reads_back_as_the_array_with_zeros_outside_it(tmp_path_factory, case):
    shape, corner, index = case
    path = str(tmp_path_factory.mktemp("corner") / "a.bin")
    inside = tuple(slice(0, k) for k in corner)
    full = np.zeros(shape, np.int16)
    full[inside] = np.arange(1, int(np.prod(corner, dtype=np.int64)) + 1).reshape(corner)
    with open(path, "wb") as file:
        file.truncate(full[inside].nbytes)
    write_shards(path, jnp.asarray(full), piece_bytes=6, corner=corner)
    assert os.path.getsize(path) == full[inside].nbytes
    np.testing.assert_array_equal(np.fromfile(path, np.int16), full[inside].reshape(-1))
    np.testing.assert_array_equal(read_region(path, shape, np.int16, index, corner), full[index])


def replay_items(slots: int, capacity: int = 10):
    """Two seeds' replay storage ``[S, C, 3]`` written up to ``slots``, and the rest."""
    rows = jnp.arange(2 * capacity * 3, dtype=jnp.float32).reshape(2, capacity, 3) + 1
    rows = jnp.where(jnp.arange(capacity)[None, :, None] < slots, rows, 0)
    return {".buffer.experience.obs": rows, ".buffer.size": jnp.full((2,), slots, jnp.int32),
            ".algo.w": jnp.ones((2, 4))}


def targets(items):
    return {name: jax.ShapeDtypeStruct(v.shape, v.dtype) for name, v in items.items()}


@pytest.mark.parametrize("slots", [0, 4, 10])
def test_the_written_slots_round_trip_in_place_and_by_shards(tmp_path, slots):
    folder = str(tmp_path / "ck")
    items = replay_items(slots)
    corners = run_store.written_corners(items, "transition_major", slots)
    assert corners == {".buffer.experience.obs": (2, slots, 3)}
    checkpoints = Checkpoints(folder, streamed=(".buffer",))
    checkpoints.save(0, items, stored=corners)
    manifest = checkpoints.manifest(0)["arrays"][".buffer.experience.obs"]
    assert manifest["shape"] == [2, 10, 3] and manifest["stored"] == [2, slots, 3]
    assert os.path.getsize(os.path.join(folder, "0", "replay", manifest["file"])) == 24 * slots
    fresh = {name: jnp.zeros(v.shape, v.dtype) for name, v in items.items()}
    for into in (None, fresh):
        restored = checkpoints.restore(0, targets(items), into=into)
        for name, value in items.items():
            np.testing.assert_array_equal(np.asarray(restored[name]), np.asarray(value))
    on_host = read_streamed(folder, (".buffer.experience.obs",))[".buffer.experience.obs"]
    np.testing.assert_array_equal(on_host, np.asarray(items[".buffer.experience.obs"]))


def test_agent_major_storage_is_cut_on_its_slot_axis():
    items = {".buffer.experience.obs": jax.ShapeDtypeStruct((2, 3, 100, 5), jnp.float32),
             ".buffer.experience['x']": jax.ShapeDtypeStruct((2, 3, 100), jnp.uint8),
             ".buffer.experiences": jax.ShapeDtypeStruct((2, 100), jnp.float32),
             ".buffer.sampler.weights": jax.ShapeDtypeStruct((2, 100), jnp.float32)}
    assert run_store.written_corners(items, "agent_major", 7) == {
        ".buffer.experience.obs": (2, 3, 7, 5), ".buffer.experience['x']": (2, 3, 7)}
    assert run_store.written_corners(items, "episode", 700)[".buffer.experience.obs"] == (
        2, 3, 100, 5)  # never more than the capacity


def test_a_format_2_checkpoint_of_whole_arrays_still_restores(tmp_path):
    folder = str(tmp_path / "ck")
    items = replay_items(4)
    Checkpoints(folder, streamed=(".buffer",)).save(0, items)
    for path in (os.path.join(folder, "0", "checkpoint.json"),
                 os.path.join(folder, "0", "replay", "manifest.json")):
        record = json.loads(Path(path).read_text())
        record["format"] = 2
        for entry in record["arrays"].values():
            entry.pop("stored", None)
        Path(path).write_text(json.dumps(record))
    restored = read_arrays(folder)
    for name, value in items.items():
        np.testing.assert_array_equal(restored[name], np.asarray(value))


def test_a_stored_corner_must_be_a_leading_corner_of_a_streamed_array(tmp_path):
    checkpoints = Checkpoints(str(tmp_path / "ck"), streamed=(".buffer",))
    items = replay_items(4)
    with pytest.raises(ValueError, match="not a leading corner of its shape"):
        checkpoints.save(0, items, stored={".buffer.experience.obs": (2, 11, 3)})
    with pytest.raises(ValueError, match="not streamed"):
        checkpoints.save(0, items, stored={".algo.w": (2, 4)})


def test_sharded_corners_restore_onto_another_layout(tmp_path):
    """Saved from 4 devices sharded on the seed and slot axes, the corner ending inside the
    second slot shard; restored sharded on other axes, by shards and in place."""
    out = run_script(f"""
        import jax, jax.numpy as jnp, numpy as np
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        from jaxmarl_accel.runs.checkpoint import Checkpoints

        mesh = Mesh(np.array(jax.devices()).reshape(2, 2), ("s", "e"))
        x = jnp.arange(4 * 6 * 4, dtype=jnp.float32).reshape(4, 6, 4) + 1
        x = jnp.where(jnp.arange(6)[None, :, None] < 4, x, 0)
        items = {{".buffer.experience.obs": jax.device_put(x, NamedSharding(mesh, P("s", "e")))}}
        checkpoints = Checkpoints({str(tmp_path / "ck")!r}, streamed=(".buffer",))
        checkpoints.save(0, items, stored={{".buffer.experience.obs": (4, 4, 4)}})
        other = {{".buffer.experience.obs": NamedSharding(mesh, P(None, "s", "e"))}}
        target = {{n: jax.ShapeDtypeStruct(v.shape, v.dtype) for n, v in items.items()}}
        fresh = {{".buffer.experience.obs": jax.device_put(jnp.zeros(x.shape),
                                                          other[".buffer.experience.obs"])}}
        for into in (None, fresh):
            restored = checkpoints.restore(0, target, other, into=into)
            np.testing.assert_array_equal(np.asarray(restored[".buffer.experience.obs"]), x)
        print("restored", len(jax.devices()))
    """, devices=4)
    assert out.split()[-2:] == ["restored", "4"]


@pytest.mark.parametrize("layout, next_obs", [
    ("transition_major", "stored"), ("agent_major", "stored"), ("episode", "stored"),
    ("transition_major", "next_slot"), ("agent_major", "next_slot")])
def test_the_slots_past_the_written_ones_are_zeros(layout, next_obs):
    """What a restore puts in the slots a checkpoint did not hold: a fresh replay's storage,
    and the slots a replay has not written yet (``[size, C)``), are zeros."""
    from jaxmarl_accel.types import Transition

    item = Transition(obs=jnp.ones((3, 4)), action=jnp.ones((3, 2)), reward=jnp.ones((3,)),
                      next_obs=jnp.ones((3, 4)), done=jnp.ones((3,)))
    buffer = make_buffer("per", capacity=8, batch_size=2, layout=layout, next_obs=next_obs,
                         num_envs=2 if next_obs == "next_slot" else None)
    state = jax.jit(buffer.init)(item)
    add = jax.jit(buffer.add)
    for step in range(3):
        batch = jax.tree.map(lambda leaf, s=step: jnp.stack([leaf + s, leaf - s]), item)
        state = add(state, batch)
    assert int(state.size) == 6
    axis = 1 if layout == "agent_major" else 0
    for leaf in jax.tree.leaves(state.experience):
        written = np.asarray(jnp.moveaxis(leaf, axis, 0))
        assert np.all(written[6:] == 0) and np.any(written[:6] != 0)


def replay_bytes(out: str, step: int) -> int:
    """Bytes of the replay's data files in checkpoint ``step`` of the run ``out``."""
    folder = Path(out, "checkpoints", str(step), "replay")
    return sum(path.stat().st_size for path in folder.glob("*.bin"))


def stored_slots(out: str, step: int, axis: int = 1) -> tuple[int, int]:
    """(slots stored, capacity) of the replay's observations in checkpoint ``step``, whose
    slot axis is ``axis`` (2: agent-major ``[S, N, C, ...]``)."""
    manifest = json.loads(Path(out, "checkpoints", str(step), "replay",
                               "manifest.json").read_text())
    entry = manifest["arrays"][".buffer.experience.obs"]
    return entry["stored"][axis], entry["shape"][axis]


def assert_resumes_exactly(finished: str, tmp_path: Path, step: int) -> None:
    """A copy of the ``finished`` run resumed from its checkpoint ``step`` writes the same
    metrics and summary, and its final checkpoint holds the same arrays, replay included."""
    out = str(tmp_path / "resumed")
    shutil.copytree(finished, out)
    steps = sorted(int(name) for name in os.listdir(os.path.join(out, "checkpoints")))
    for later in (s for s in steps if s > step):
        shutil.rmtree(os.path.join(out, "checkpoints", str(later)))
    assert run.main(["--resume", out, "--quiet"]) == 0
    assert Path(out, "metrics.csv").read_text() == Path(finished, "metrics.csv").read_text()
    summaries = [json.loads(Path(folder, "summary.json").read_text())
                 for folder in (finished, out)]
    for summary in summaries:
        for name in TIMING:
            summary.pop(name)
    assert summaries[0] == summaries[1]
    want, got = (read_arrays(os.path.join(folder, "checkpoints")) for folder in (finished, out))
    assert want.keys() == got.keys() and any(name.startswith(".buffer.experience")
                                             for name in want)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)


RUNS = {
    # TINY: 3 chunks of 200 env steps (5 envs); one slot per env step. "transition" is TINY
    # as it is (its capacity is 1000), which the fixture below takes from the session's run
    "transition": with_flag(TINY, "--buffer-capacity", "1000"),
    "transition wrapped": with_flag(TINY, "--buffer-capacity", "250"),
    "agent-major, large": [*with_flag(TINY, "--buffer-capacity", "100000"),
                           "--layout", "agent_major"],
    # STAG_TINY: 2 chunks of 5 rounds of 2 episodes; one slot per episode (the ring wraps
    # in the second chunk, after the restore)
    "episode": with_flag(STAG_TINY, "--buffer-capacity", "16"),
}


@pytest.fixture(scope="module")
def finished(tmp_path_factory, request):
    """The finished run of each of :data:`RUNS`, made when first asked for; ``transition``
    (``TINY`` as it is) is the session's ``tiny_run`` (``tests/conftest.py``)."""
    folders: dict[str, str] = {}

    def get(name: str) -> str:
        if name == "transition":
            return request.getfixturevalue("tiny_run")[0]
        if name not in folders:
            out = str(tmp_path_factory.mktemp("written") / name.replace(" ", "_"))
            assert run.main([*RUNS[name], "--out", out]) == 0
            folders[name] = out
        return folders[name]

    return get


@pytest.mark.slow
def test_checkpoint_size_grows_with_the_fill_not_the_capacity(finished):
    """A run keeps its last two checkpoints: after chunks 1 (400 env steps) and 2 (600)."""
    small, large = finished("transition"), finished("agent-major, large")
    assert stored_slots(small, 1) == (400, 1000)
    assert stored_slots(large, 1, axis=2) == (400, 100_000)
    assert replay_bytes(small, 1) == replay_bytes(large, 1)  # 100x the capacity, same bytes
    assert replay_bytes(small, 2) == pytest.approx(1.5 * replay_bytes(small, 1), rel=0.01)
    total = lambda out: sum(p.stat().st_size for p in Path(out, "checkpoints", "2").rglob("*")
                            if p.is_file())
    assert total(large) < 1.1 * total(small)


@pytest.mark.parametrize("name, step, axis, fill", [
    ("transition", 1, 1, (400, 1000)),  # the fast tier's: the session's run, compiled already
    ("agent-major, large", 1, 2, (400, 100_000)),
    ("transition wrapped", 1, 1, (250, 250)),
    ("episode", 0, 1, (10, 16)),
])
@pytest.mark.fast_cases(1)
def test_a_run_resumed_from_a_written_part_repeats_the_uninterrupted_run(
        finished, tmp_path, name, step, axis, fill):
    out = finished(name)
    assert stored_slots(out, step, axis) == fill
    assert_resumes_exactly(out, tmp_path, step)
