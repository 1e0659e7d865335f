"""experiments.memory: the one memory check before allocation, with its one-line refusal."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from jaxmarl_accel.algos import ActorCriticConfig
from jaxmarl_accel.buffers import make_buffer
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.runs import memory
from jaxmarl_accel.trainer.train import make_trainer
from jaxmarl_accel.tree_util import tree_leaf_bytes


def test_available_bytes_names_its_source():
    free, source = memory.available_bytes()
    assert free > 0 and source


def test_ensure_fits_refuses_in_one_line():
    free, _ = memory.available_bytes()
    memory.ensure_fits(free // 2, "half", "lower it")
    with pytest.raises(ValueError, match=r"^a buffer needs [\d.]+ GiB but only [\d.]+ GiB are "
                                         r"available on .*; lower capacity$") as info:
        memory.ensure_fits(2 * free, "a buffer", "lower capacity")
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError):
        memory.ensure_fits(free // 2, "half", "lower it", fraction=0.25)


def test_state_check_counts_the_abstract_state_and_refuses_before_allocating():
    buffer = make_buffer("uniform", capacity=1_000_000, batch_size=4)
    small = jax.eval_shape(buffer.init, {"obs": jax.ShapeDtypeStruct((3,), jnp.float32)})
    state = 12 * 10**6 + 8
    assert memory.check_state_fits(small, seeds=1) == (state, memory.estimate_peak(state))
    big = jax.eval_shape(buffer.init, {"obs": jax.ShapeDtypeStruct((24, 10**6), jnp.float32)})
    with pytest.raises(ValueError, match=r"^the run of 2 seed\(s\) \(an estimated peak: the "
                                         r"state [\d.]+ GiB x [\d.]+ \+ [\d.]+ GiB for Python, "
                                         r"JAX and the compiled program, as measured by "
                                         r"experiments.bench memory\) needs"):
        memory.check_state_fits(big, seeds=2)


def test_on_an_accelerator_the_state_per_device_and_its_margin_count(monkeypatch):
    device = _Device({"bytes_limit": 9 * 2**30, "bytes_in_use": 2**30})
    monkeypatch.setattr(memory.jax, "local_devices", lambda: [device])
    state = {"a": jax.ShapeDtypeStruct((4, 2**30), jnp.int32)}  # 16 GiB over 2 devices
    with pytest.raises(ValueError, match=r"per device: the state 8\.00 GiB \+ 10% for XLA's "
                                         r"temporaries\) needs 8\.80 GiB but only 8\.00 GiB"):
        memory.check_state_fits(state, seeds=4, seed_shards=2)


class _Device:
    """A device that reports memory statistics, as accelerators do."""

    def __init__(self, stats: dict | None) -> None:
        self.stats = stats

    def memory_stats(self) -> dict | None:
        return self.stats

    def __str__(self) -> str:
        return "fake:0"


def test_available_bytes_prefers_the_device_statistics(monkeypatch):
    device = _Device({"bytes_limit": 10 * 2**30, "bytes_in_use": 4 * 2**30})
    monkeypatch.setattr(memory.jax, "local_devices", lambda: [device])
    assert memory.available_bytes() == (6 * 2**30, "fake:0 memory_stats")
    with pytest.raises(ValueError, match=r"^x needs 7\.00 GiB but only 6\.00 GiB are available "
                                         r"on fake:0 memory_stats; hint$"):
        memory.ensure_fits(7 * 2**30, "x", "hint")
    device.stats = None  # a CPU: the host's figure
    assert "host" in memory.available_bytes()[1]


def test_tree_bytes_counts_abstract_leaves():
    tree = {"a": jax.ShapeDtypeStruct((3, 4), jnp.float32), "b": jnp.zeros((5,), jnp.int8)}
    assert tree_leaf_bytes(tree) == 3 * 4 * 4 + 5


@pytest.mark.slow
def test_the_compiled_chunks_temporaries_enter_the_estimate():
    """A team learner's update over every agent of its joint steps needs temporaries that
    grow with the batch: the run's check counts them after compiling, before the state
    exists, and refuses in one line."""
    def temps(batch_size: int) -> int:
        config = TrainConfig(
            env="simple_spread", env_kwargs=(("num_agents", 24), ("k_nearest", 3)),
            num_envs=2, update_every=10, buffer_capacity=300, batch_size=batch_size,
            total_env_steps=40, eval_every=20, eval_episodes=1,
            learner=ActorCriticConfig(sharing="team", critic="knearest", critic_k=3))
        trainer = make_trainer(config)
        abstract = jax.eval_shape(trainer.init, jax.random.PRNGKey(0))
        compiled = jax.jit(trainer.run_chunk).lower(abstract, jnp.int32(0)).compile()
        return memory.compiled_temp_bytes(compiled)

    small, large = temps(8), temps(256)
    assert large > 8 * small > 0
    assert memory.estimate_peak(10, True, large) == memory.estimate_peak(10) + large
    free, _ = memory.available_bytes()
    state = {"a": jax.ShapeDtypeStruct((4,), jnp.float32)}
    with pytest.raises(ValueError, match=r"GiB of the compiled chunk's temporaries, as measured"
                                         r".* \(or --batch-size, which the temporaries grow "
                                         r"with\)$"):
        memory.check_state_fits(state, seeds=1, temp_bytes=2 * free)
    assert memory.compiled_temp_bytes(object()) == 0


def test_bench_memory_reads_the_state_and_estimate_from_the_runs_log():
    from experiments.bench.memory import STATE

    line = ("compiled in 10.5s; training state 3942.1 MiB; chunk temporaries 78.3 MiB; "
            "estimated peak 4.68 GiB")
    assert STATE.search(line).groups() == ("3942.1", "4.68")


def test_bench_memory_measures_every_replay_mode_at_every_seed_count():
    import argparse

    from experiments.bench import memory as bench_memory

    parser = argparse.ArgumentParser()
    bench_memory.add_arguments(parser)
    args = parser.parse_args(["--seeds", "1", "2", "--replay-next-obs", "stored", "next_slot",
                              "--replay-obs", "observation", "physical_state"])
    assert bench_memory.runs(args) == [
        (obs, nxt, n) for obs in ("observation", "physical_state")
        for nxt in ("stored", "next_slot") for n in (1, 2)]
    assert bench_memory.runs(parser.parse_args([])) == [
        ("observation", "stored", n) for n in (1, 2, 4, 8)]
