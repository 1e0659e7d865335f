"""Checkpoints: byte layout of sharded regions, round trips across layouts (orbax for the
learners, the streaming writer for the replay), what another program reads with orbax alone,
incomplete and damaged checkpoints, and saving without a second host copy of the replay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxmarl_accel.runs.array_files import contiguous_runs, read_region
from jaxmarl_accel.runs.checkpoint import (
    CheckpointMismatch,
    Checkpoints,
    read_streamed,
)


def read_arrays(folder: str, step: int | None = None) -> dict[str, np.ndarray]:
    """The tests' reader of a checkpoint: every array of checkpoint ``step`` (None: the
    newest) in the checkpoints ``folder``, as host arrays keyed by their state path (e.g.
    ``".algo.actor['params']..."``)."""
    checkpoints = Checkpoints(folder)
    step = checkpoints.latest_step() if step is None else step
    if step is None:
        raise ValueError(f"{folder} holds no checkpoints")
    index = checkpoints.index(step)
    target = {name: jax.ShapeDtypeStruct(tuple(entry["shape"]), jnp.dtype(entry["dtype"]))
              for name, entry in index["arrays"].items()}
    return {name: np.asarray(value) for name, value in checkpoints.restore(step, target).items()}


@st.composite
def shapes_and_regions(draw):
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=0, max_size=4)))
    index = []
    for n in shape:
        lo = draw(st.integers(0, n - 1))
        index.append(slice(lo, draw(st.integers(lo + 1, n))))
    return shape, tuple(index)


@settings(max_examples=200, deadline=None)
@given(shapes_and_regions())
def test_contiguous_runs_cover_exactly_the_region_in_order(case):
    shape, index = case
    flat = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
    region = flat[index]
    covered = []
    for prefix, start, length in contiguous_runs(shape, index):
        run = region[prefix] if prefix else region
        np.testing.assert_array_equal(run.reshape(-1), np.arange(start, start + length))
        covered.extend(range(start, start + length))
    assert covered == sorted(region.reshape(-1).tolist())


def test_a_region_sharded_on_the_leading_axis_is_one_run():
    assert list(contiguous_runs((4, 6, 3), (slice(2, 4), slice(None), slice(None)))) == [
        ((), 36, 36)]


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def example_items():
    x = jnp.arange(4 * 6 * 4, dtype=jnp.float32).reshape(4, 6, 4)
    items = {".algo.w": x, ".algo.opt[0]['mu']": x + 1, ".key": jax.random.PRNGKey(3),
             ".steps": jnp.int32(7), ".half": x.astype(jnp.bfloat16),
             ".buffer.obs": (x > 9).astype(jnp.uint8), ".buffer.count": jnp.int32(5)}
    return items


STREAMED = (".buffer",)


def targets(items):
    return {name: jax.ShapeDtypeStruct(v.shape, v.dtype) for name, v in items.items()}


@pytest.mark.parametrize("streamed", [(), STREAMED])
def test_round_trip_keeps_the_newest_two_and_every_dtype(tmp_path, streamed):
    checkpoints = Checkpoints(str(tmp_path / "ck"), streamed=streamed)
    items = example_items()
    for step in range(3):
        checkpoints.save(step, items)
    assert checkpoints.steps() == [1, 2]
    restored = checkpoints.restore(2, targets(items))
    for name, value in items.items():
        assert restored[name].dtype == value.dtype
        np.testing.assert_array_equal(np.asarray(restored[name]), np.asarray(value))
    parts = sorted(os.listdir(checkpoints.path(2)))
    assert parts == (["checkpoint.json", "replay", "state"] if streamed
                     else ["checkpoint.json", "state"])


def test_streamed_arrays_are_read_alone_from_their_files(tmp_path):
    folder = str(tmp_path / "ck")
    items = example_items()
    Checkpoints(folder, streamed=STREAMED).save(3, items)
    read = read_streamed(folder, (".buffer.obs", ".buffer.count"))
    assert sorted(read) == [".buffer.count", ".buffer.obs"]
    for name, value in read.items():
        assert value.dtype == items[name].dtype and value.shape == items[name].shape
        np.testing.assert_array_equal(value, np.asarray(items[name]))
    extra = read_streamed(folder, (".buffer.count",), optional=(".buffer.obs", ".buffer.none"))
    assert sorted(extra) == [".buffer.count", ".buffer.obs"]  # absent optional names skipped
    with pytest.raises(ValueError, match="streams no '.algo.w'; it streams .buffer.count"):
        read_streamed(folder, (".algo.w",))
    with pytest.raises(ValueError, match="holds no checkpoints"):
        read_streamed(str(tmp_path / "none"), (".buffer.obs",))


def test_another_program_restores_the_learners_with_orbax_alone(tmp_path):
    """``state/`` is a plain orbax checkpoint of nested dicts named by the tree path."""
    folder = str(tmp_path / "ck")
    items = example_items()
    Checkpoints(folder, streamed=STREAMED).save(4, items)
    out = run_script(f"""
        import numpy as np
        import orbax.checkpoint as ocp
        state = ocp.StandardCheckpointer().restore({os.path.join(folder, "4", "state")!r})
        print(sorted(state), sorted(state["algo"]), float(np.sum(state["algo"]["opt"]["0"]["mu"])))
    """)
    assert out.split("\n")[-2] == (
        f"['algo', 'half', 'key', 'steps'] ['opt', 'w'] {float(np.sum(items['.algo.w'] + 1))}")


def run_script(script: str, devices: int = 1) -> str:
    """Run ``script`` in a fresh Python on ``devices`` CPU devices; its standard output."""
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, env=env, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_sharded_arrays_restore_onto_another_layout(tmp_path):
    """Saved from 4 devices sharded on axes 0 and 1 (runs of 4 elements), restored sharded
    on axes 1 and 2."""
    out = run_script(f"""
        import jax, jax.numpy as jnp, numpy as np
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        from jaxmarl_accel.runs.checkpoint import Checkpoints

        mesh = Mesh(np.array(jax.devices()).reshape(2, 2), ("s", "e"))
        x = jnp.arange(4 * 6 * 4, dtype=jnp.float32).reshape(4, 6, 4)
        items = {{".w": jax.device_put(x, NamedSharding(mesh, P("s", "e"))),
                  ".k": jax.device_put(jax.random.split(jax.random.PRNGKey(0), 4),
                                       NamedSharding(mesh, P("s")))}}
        items[".buffer.w"] = items[".w"] + 1
        checkpoints = Checkpoints({str(tmp_path / "ck")!r}, streamed=(".buffer",))
        checkpoints.save(0, items)
        other = NamedSharding(mesh, P(None, "s", "e"))
        target = {{n: jax.ShapeDtypeStruct(v.shape, v.dtype) for n, v in items.items()}}
        restored = checkpoints.restore(0, target, {{".w": other, ".buffer.w": other}})
        assert restored[".w"].sharding == other and restored[".buffer.w"].sharding == other
        for name, value in items.items():
            np.testing.assert_array_equal(np.asarray(restored[name]), np.asarray(value))
        print(len(jax.devices()))
    """, devices=4)
    assert out.split()[-1] == "4"


def test_a_partial_checkpoint_is_ignored_and_replaced(tmp_path):
    folder = str(tmp_path / "ck")
    checkpoints = Checkpoints(folder, streamed=STREAMED)
    checkpoints.save(0, example_items())
    os.makedirs(os.path.join(folder, "1.partial"))  # a save that was killed
    assert checkpoints.steps() == [0]
    checkpoints.save(1, example_items())
    assert sorted(os.listdir(folder)) == ["0", "1"]


@pytest.mark.parametrize("damage, message", [
    ("truncate", "holds 60 bytes, the manifest says 120"),
    ("empty manifest", "manifest.json cannot be read"),
    ("empty index", "checkpoint.json cannot be read"),
    ("no index", "checkpoint.json is missing"),
    ("no orbax data", "state/.* is missing"),
    ("orbax data overwritten", "holds other bytes than were written"),
    ("no orbax data, no file list", "cannot be restored by orbax"),
])
def test_damaged_checkpoints_fail_in_one_line_naming_the_file(tmp_path, damage, message):
    folder = str(tmp_path / "ck")
    checkpoints = Checkpoints(folder, streamed=STREAMED)
    items = {".a": jnp.ones((30,), jnp.float32), ".buffer.a": jnp.ones((30,), jnp.float32)}
    checkpoints.save(0, items)
    path = os.path.join(folder, "0")
    if damage == "truncate":
        os.truncate(os.path.join(path, "replay", "00000.bin"), 60)
    elif damage == "empty manifest":
        open(os.path.join(path, "replay", "manifest.json"), "w").close()
    elif damage == "empty index":
        open(os.path.join(path, "checkpoint.json"), "w").close()
    elif damage == "no index":
        os.remove(os.path.join(path, "checkpoint.json"))
    else:  # the learners' orbax files: gone, or the same sizes with other bytes
        for root, _, files in os.walk(os.path.join(path, "state")):
            for name in files:
                if not name.startswith("_"):
                    file = os.path.join(root, name)
                    if damage == "orbax data overwritten":
                        with open(file, "r+b") as handle:
                            handle.write(bytes(255 - b for b in handle.read(8)))
                    else:
                        os.remove(file)
        if damage.endswith("no file list"):  # as written before checkpoints listed them
            index = json.loads(Path(path, "checkpoint.json").read_text())
            Path(path, "checkpoint.json").write_text(json.dumps(
                {k: v for k, v in index.items() if k != "state_files"}))
    with pytest.raises(ValueError, match=message) as error:
        checkpoints.restore(0, targets(items))
    assert "\n" not in str(error.value) and path in str(error.value)


def test_another_shape_is_a_mismatch_naming_the_array(tmp_path):
    checkpoints = Checkpoints(str(tmp_path / "ck"))
    checkpoints.save(0, {".a": jnp.ones((3,))})
    with pytest.raises(CheckpointMismatch, match=r"\.a is float32\[3\] there, the config "
                                                 r"needs float32\[4\]"):
        checkpoints.restore(0, {".a": jax.ShapeDtypeStruct((4,), jnp.float32)})


def test_omitted_parts_are_left_out_of_the_restore(tmp_path):
    checkpoints = Checkpoints(str(tmp_path / "ck"))
    checkpoints.save(0, {".algo.w": jnp.ones((2,))}, omitted=(".buffer",))
    target = {".algo.w": jax.ShapeDtypeStruct((2,), jnp.float32),
              ".buffer.obs": jax.ShapeDtypeStruct((9,), jnp.float32)}
    assert list(checkpoints.restore(0, target)) == [".algo.w"]
    with open(os.path.join(str(tmp_path / "ck"), "0", "checkpoint.json")) as file:
        assert json.load(file)["omitted"] == [".buffer"]


def test_read_region_reads_a_strided_region(tmp_path):
    data = np.arange(60, dtype=np.int16).reshape(3, 4, 5)
    path = str(tmp_path / "a.bin")
    data.tofile(path)
    index = (slice(1, 3), slice(1, 3), slice(None))
    np.testing.assert_array_equal(read_region(path, data.shape, data.dtype, index), data[index])


def test_saving_holds_no_second_copy_of_the_replay(tmp_path):
    """512 MiB of replay in two arrays: the peak resident memory of the process grows by far
    less than one array while both are saved (a host copy would add 512 MiB)."""
    out = run_script(f"""
        import jax.numpy as jnp
        from jaxmarl_accel.runs.checkpoint import Checkpoints

        def peak_mib():
            with open("/proc/self/status") as status:
                return next(int(l.split()[1]) for l in status if l.startswith("VmHWM")) / 1024

        items = {{name: jnp.full((64, 2**20), i, jnp.float32) for i, name in
                  enumerate((".buffer.obs", ".buffer.next_obs"))}}
        items[".buffer.obs"].block_until_ready(); items[".buffer.next_obs"].block_until_ready()
        before = peak_mib()
        items[".algo.w"] = jnp.ones((8, 1024))
        Checkpoints({str(tmp_path / "ck")!r}, streamed=(".buffer",)).save(0, items)
        print(peak_mib() - before)
    """)
    grown = float(out.split()[-1])
    assert grown < 64, f"saving 512 MiB raised the peak by {grown:.0f} MiB"
    assert os.path.getsize(os.path.join(str(tmp_path / "ck"), "0", "replay", "00000.bin")) == 2**28


def test_a_checkpoint_from_before_the_episode_counters_restores_them_as_zeros(tmp_path):
    """Checkpoints written before the state carried running episode counters (Tag's
    ``tags``) restore into today's state: the counters start from zero, every other array
    comes back bit for bit; a counter of another shape is still a mismatch."""
    from jaxmarl_accel.algos.on_policy import OnPolicyConfig
    from jaxmarl_accel.config import TrainConfig
    from jaxmarl_accel.runs.run_store import (
        ADDED_LATER,
        checkpoint_items,
        fill_added_later,
        save_checkpoint,
        state_from_items,
    )
    from jaxmarl_accel.trainer.train import make_trainer

    config = TrainConfig(env="tag_continuous", algo="a2c", num_envs=2, total_env_steps=20,
                         eval_every=20, learner=OnPolicyConfig(hidden_sizes=(8,),
                                                               rollout_length=5),
                         env_kwargs=(("num_other_agents_observed", 2), ("num_runners", 2),
                                     ("num_taggers", 1)))
    state = jax.jit(make_trainer(config).init)(jax.random.PRNGKey(0))
    state = state.replace(episode_stats={k: v + 3 for k, v in state.episode_stats.items()})
    manager = Checkpoints(str(tmp_path / "old"))
    save_checkpoint(manager, 0, state.replace(episode_stats={}))  # what older code wrote
    abstract = jax.eval_shape(lambda: state)
    target = checkpoint_items(abstract)
    restored = state_from_items(abstract, fill_added_later(
        target, manager.restore(0, target, optional=ADDED_LATER)))
    assert set(restored.episode_stats) == {"tags", "steps_before_first_tag"}
    for counter in restored.episode_stats.values():
        np.testing.assert_array_equal(counter, np.zeros((2,)))
    for a, b in zip(jax.tree.leaves(restored.replace(episode_stats={})),
                    jax.tree.leaves(state.replace(episode_stats={})), strict=True):
        np.testing.assert_array_equal(a, b)
    other = Checkpoints(str(tmp_path / "other"))
    save_checkpoint(other, 0, state.replace(
        episode_stats={k: jnp.zeros((3,)) for k in state.episode_stats}))
    with pytest.raises(CheckpointMismatch, match=r"episode_stats\['steps_before_first_tag'\]"):
        other.restore(0, target, optional=ADDED_LATER)
