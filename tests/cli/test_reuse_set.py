"""experiments.reuse_set: S-'s ages and origin from a checkpoint's sampler arrays alone."""

from __future__ import annotations

import json
import os

import jax.numpy as jnp
import numpy as np
import pytest

from experiments import reuse_set
from jaxmarl_accel.runs.checkpoint import Checkpoints


def sampler_items(reused, write_pos, size, capacity=10):
    """A two-seed reuse sampler's arrays as a run checkpoints them (leading seed axis)."""
    weights = np.full((2, capacity), -np.inf, np.float32)
    for seed in range(2):
        weights[seed, :size[seed]] = np.linspace(0.1, 1.0, size[seed])
    return {".buffer.sampler.reused": jnp.asarray(reused, jnp.int32),
            ".buffer.sampler.weights": jnp.asarray(weights),
            ".buffer.sampler.window": jnp.asarray([5, 5], jnp.int32),
            ".buffer.sampler.window_step": jnp.asarray([2, 4], jnp.int32),
            ".buffer.size": jnp.asarray(size, jnp.int32),
            ".buffer.write_pos": jnp.asarray(write_pos, jnp.int32),
            ".buffer.experience.reward":  # episode rows [S, C, T + 1]: slot c returns 3c
                jnp.broadcast_to(jnp.arange(capacity, dtype=jnp.float32)[None, :, None],
                                 (2, capacity, 3)),
            ".algo.step": jnp.asarray([7, 7], jnp.int32)}


def test_ages_count_from_the_newest_episode_and_wrap_with_the_ring():
    # seed 0: 8 of 10 slots written, S- = slots 0, 1, 7 (two oldest, the newest);
    # seed 1: the ring wrapped (write position 3): slot 2 is the newest, slot 3 the oldest
    items = sampler_items([[0, 1, 7], [2, 3, 4]], write_pos=[8, 3], size=[8, 10])
    rows = reuse_set.reuse_set({k: np.asarray(v) for k, v in items.items()})
    assert [r["age_min"] for r in rows] == [0, 0] and [r["age_max"] for r in rows] == [7, 9]
    assert [r["among_oldest"] for r in rows] == [2, 2]  # slots 0, 1 / slots 3, 4
    assert rows[1]["window_step"] == 4 and rows[0]["stored"] == 8
    assert rows[0]["reused_weight_median"] == pytest.approx(np.linspace(0.1, 1.0, 8)[1])
    assert rows[0]["reused_return_mean"] == pytest.approx(8.0)  # slots 0, 1, 7: 3 (0+1+7)/3
    assert rows[0]["stored_return_mean"] == pytest.approx(10.5)  # slots 0-7
    assert rows[1]["stored_return_mean"] == pytest.approx(13.5)  # all 10 slots


def test_cli_reads_the_newest_checkpoint_and_refuses_a_run_without_one(tmp_path, capsys):
    run = tmp_path / "run"
    checkpoints = Checkpoints(str(run / "checkpoints"), streamed=(".buffer",))
    checkpoints.save(3, sampler_items([[0, 1, 7], [2, 3, 4]], [8, 3], [8, 10]))
    (run / "metrics.csv").write_text("seed,chunk,env_steps\n0,3,400\n1,3,400\n")
    out = tmp_path / "record.json"
    assert reuse_set.main([str(run), "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["step"] == 3 and record["env_steps"] == 400 and len(record["seeds"]) == 2
    assert "2 of 3 among the 3 oldest" in capsys.readouterr().out
    assert record["seeds"][0]["reused_return_mean"] == pytest.approx(8.0)
    with pytest.raises(SystemExit):
        reuse_set.main([os.path.join(str(tmp_path), "empty")])
    assert "holds no checkpoints" in capsys.readouterr().err


def block_items(weights, size):
    """A two-seed authors' reuse sampler's arrays (``reuse_block``: no S- of its own)."""
    weights = np.asarray(weights, np.float32)
    capacity = weights.shape[-1]
    return {".buffer.sampler.weights": jnp.asarray(weights),
            ".buffer.sampler.block_start": jnp.asarray([4, 8], jnp.int32),
            ".buffer.sampler.updates": jnp.asarray([9, 9], jnp.int32),
            ".buffer.size": jnp.asarray(size, jnp.int32),
            ".buffer.write_pos": jnp.asarray(size, jnp.int32) % capacity,
            ".buffer.experience.reward":
                jnp.broadcast_to(jnp.arange(capacity, dtype=jnp.float32)[None, :, None],
                                 (2, capacity, 3))}


def test_the_authors_reuse_is_ranked_over_every_slot_with_ties_to_the_higher():
    # seed 0: slots 4-7 share the top weight, 6 slots filled: S- (K=2) = 7, 6, both unfilled
    # seed 1: slots 2 and 5 top it, all filled: S- = 5, 2
    weights = [[0.1, 0.1, 0.1, 0.1, 0.5, 0.5, 0.5, 0.5, 0.1, 0.1],
               [0.1, 0.1, 0.9, 0.1, 0.1, 0.9, 0.1, 0.1, 0.1, 0.1]]
    arrays = {k: np.asarray(v) for k, v in block_items(weights, [6, 10]).items()}
    np.testing.assert_array_equal(reuse_set.ranked_block(arrays[".buffer.sampler.weights"], 2),
                                  [[7, 6], [5, 2]])
    rows = reuse_set.reuse_set(arrays, num_reused=2)
    assert [r["reused_filled"] for r in rows] == [0, 2]
    assert rows[0]["age_min"] is None and rows[0]["reused_return_mean"] is None
    assert rows[1]["block_start"] == 8 and rows[1]["updates"] == 9
    assert rows[1]["reused_return_mean"] == pytest.approx(10.5)  # slots 2, 5: 3 (2+5)/2
    assert [r["age_min"] for r in rows[1:]] == [4]  # slot 5 of a ring written up to 9


def test_cli_takes_k_of_the_authors_reuse_from_the_runs_config(tmp_path, capsys):
    run = tmp_path / "run"
    weights = [[0.1] * 4 + [0.5] * 4 + [0.1] * 2, [0.1, 0.1, 0.9] + [0.1] * 7]
    Checkpoints(str(run / "checkpoints"), streamed=(".buffer",)).save(
        2, block_items(weights, [6, 10]))
    (run / "metrics.csv").write_text("seed,chunk,env_steps\n0,2,300\n1,2,300\n")
    (run / "config.json").write_text(json.dumps(
        {"train": {"batch_size": 8, "sampler_kwargs": {"reuse_ratio": 0.25}}}))
    assert reuse_set.main([str(run)]) == 0
    out = capsys.readouterr().out
    assert "seed 0: 6 episodes stored, block at slot 4 after 9 updates; 0 of 2" in out
    assert "seed 1: 10 episodes stored" in out and "2 of 2 reused slots filled" in out


def test_top_blocks_follow_the_written_means_through_the_decay():
    # writes of means 1.0, 0.4, 0.3 with decay 0.5, blocks of 2 slots: block 0 stays on top
    # after the second write (0.25 against 0.2) and block 2 takes it at the third (0.15)
    table = np.asarray([0.125, 0.125, 0.1, 0.1, 0.15, 0.15, 0.00125, 0.00125])
    assert reuse_set.top_blocks(table, writes=3, batch=2, decay=0.5) == [0, 0, 2]
