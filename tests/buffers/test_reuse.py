"""AccMER reuse (paper 004 Alg. 1): every batch is S- (the top alpha*b of the weight table,
kept for a window of n = floor(d / b) updates, d the capacity or the filled entries) plus
S+ (uniform over the other filled slots); the table decays after each update and the
batch's weights are written back. Both transition and episode storage, all under jit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from jaxmarl_accel.buffers import BufferState, estimate_bytes, make_buffer
from jaxmarl_accel.buffers.reuse import complement_uniform
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.trainer.steps import example_episode
from jaxmarl_accel.types import Episode
from tests.buffers.helpers import NO_SHRINK, fill, jitted, transitions

CAPACITY, BATCH, AGENTS, T = 32, 8, 3, 3
SPEC = EnvSpec(name="toy", num_agents=AGENTS, obs_dim=2, obs_sizes=(2,) * AGENTS,
               teams=("agent",) * AGENTS, continuous=False, num_actions=4,
               action_sizes=(4,) * AGENTS, act_dim=4, episode_length=T, state_dim=5)


def episodes(counters: np.ndarray) -> Episode:
    """Episodes ``[E, T + 1, ...]`` shaped like ``example_episode(SPEC)`` whose reward rows
    and observations hold their counter."""
    counters = jnp.asarray(counters, jnp.float32)
    zero = example_episode(SPEC)
    batch = jax.tree.map(lambda leaf: jnp.broadcast_to(leaf, (counters.shape[0], *leaf.shape)),
                         zero)
    rows = jnp.broadcast_to(counters[:, None], (counters.shape[0], T + 1))
    return batch.replace(reward=rows, obs=batch.obs + rows[..., None, None])


def items(layout: str, counters: np.ndarray):
    """``len(counters)`` items of the layout: episodes or transitions of AGENTS agents."""
    return episodes(counters) if layout == "episode" else transitions(counters, AGENTS)


def first_item(layout: str):
    """One item, leaves ``[T + 1, ...]`` (episode) or ``[N, ...]`` (transition)."""
    return jax.tree.map(lambda leaf: leaf[0], items(layout, np.zeros(1)))


def counter_of(experience, layout: str) -> np.ndarray:
    """The counter of each sampled item, ``[B]``."""
    counters = np.asarray(experience.reward)[:, 0]
    if layout == "episode":  # every row and agent of the episode is the stored one
        obs = np.asarray(experience.obs)[..., 0]
        np.testing.assert_array_equal(obs, np.broadcast_to(counters[:, None, None], obs.shape))
    return counters


def arrivals(adds: list[int]) -> list[tuple[np.ndarray, int]]:
    """The items added before each update of a model test: ``(counters [n], items written
    so far)``, ``BATCH`` before the first update, then ``adds[k]``, numbered from 0."""
    sizes = [BATCH, *adds]
    return [(np.arange(end - num, end), int(end))
            for num, end in zip(sizes, np.cumsum(sizes), strict=True)]


def td_errors(rng: np.random.Generator, layout: str) -> np.ndarray:
    """Per-agent TD errors ``[B, N]``, or one per episode ``[B]``."""
    shape = (BATCH,) if layout == "episode" else (BATCH, AGENTS)
    return rng.uniform(0.0, 2.0, shape).astype(np.float32)


CASES = [  # layout, reuse_window (None: floor(d / b)), window_basis (d), reuse_ratio, decay,
    # reused_weights (S-'s new weights written or not)
    ("transition_major", None, "capacity", 0.5, 0.8, "write"),
    ("transition_major", None, "filled", 0.5, 0.8, "write"),
    ("episode", None, "filled", 0.25, 1.0, "write"),
    ("episode", 3, "capacity", 1.0, 0.8, "write"),
    ("agent_major", 2, "filled", 0.5, 0.9, "write"),
    ("transition_major", 2, "filled", 0.5, 0.8, "decay"),
    ("episode", None, "filled", 0.25, 0.9, "decay"),
    ("episode", 3, "capacity", 1.0, 0.8, "decay"),
]


def window_of(window: int | None, basis: str, size: int) -> int:
    """The model's window length ranked at ``size`` filled entries."""
    if window is not None:
        return window
    return max((CAPACITY if basis == "capacity" else size) // BATCH, 1)


@pytest.mark.parametrize(("layout", "window", "basis", "ratio", "decay", "rewrite"), CASES)
@settings(max_examples=3, deadline=None, phases=NO_SHRINK)
@given(seed=st.integers(0, 2**16), adds=st.lists(st.integers(0, 3), min_size=12, max_size=12))
@pytest.mark.fast_cases(1)
def test_reuse_follows_alg1_window_by_window(layout, window, basis, ratio, decay, rewrite,
                                             seed, adds):
    """A numpy model of Alg. 1 next to the jitted buffer, items added between updates so the
    filled size (and the window of the "filled" rule) grows and the ring wraps; with
    ``reused_weights="decay"`` the model writes only S+'s new weights."""
    buf = jitted("reuse", (("reuse_ratio", ratio), ("reuse_window", window), ("decay", decay),
                           ("window_basis", basis), ("reused_weights", rewrite)),
                 capacity=CAPACITY, batch_size=BATCH, layout=layout)
    num_reused = round(ratio * BATCH)
    table = np.full(CAPACITY, -np.inf)  # model of the weight table
    stored = np.full(CAPACITY, -1.0)  # counter held by each slot
    max_weight, reused, step = 1.0, np.arange(num_reused), 0
    length = window_of(window, basis, 0)  # the initial S- is ranked at d = 0 (filled rule)
    state, rng = buf.init(first_item(layout)), np.random.default_rng(seed)
    for update, (counters, written) in enumerate(arrivals(adds)):
        if counters.size:
            state = buf.add(state, items(layout, counters))
            table[counters % CAPACITY] = max_weight
            stored[counters % CAPACITY] = counters
        size = min(written, CAPACITY)
        assert int(state.size) == size
        batch = buf.sample(state, jax.random.key(seed + update))
        indices = np.asarray(batch.indices)
        np.testing.assert_array_equal(indices[:num_reused], reused)  # S- fixed in the window
        fresh = indices[num_reused:]
        assert not set(fresh.tolist()) & set(reused.tolist())  # S- and S+ disjoint
        assert np.all(indices < size)  # filled slots are [0, size): never an unfilled one
        np.testing.assert_array_equal(counter_of(batch.experience, layout), stored[indices])
        np.testing.assert_allclose(np.asarray(batch.weights),
                                   table[indices] / table[indices].max(), rtol=1e-5)
        errors = td_errors(rng, layout)
        state = buf.update_priorities(state, batch.indices, jnp.asarray(errors))
        priorities = (errors.max(-1) if errors.ndim == 2 else errors) + 1e-6
        table = table * decay  # the whole table decays ...
        new_part = slice(num_reused if rewrite == "decay" else 0, None)  # entries written
        table[indices[new_part]] = priorities[new_part]  # ... then the batch's (last wins)
        max_weight = max(max_weight * decay, float(priorities[new_part].max(initial=0.0)))
        np.testing.assert_allclose(np.asarray(state.sampler.weights), table, rtol=1e-5)
        step += 1
        if step == length:  # end of the window: S- becomes the top-k of the filled table
            new = np.asarray(state.sampler.reused)
            assert len(set(new.tolist())) == num_reused and np.all(new < size)
            rest = np.delete(table[:size], new)
            if num_reused:
                assert table[new].min() >= rest.max(initial=-np.inf)
            reused, step = new, 0
            length = window_of(window, basis, size)
        np.testing.assert_array_equal(np.asarray(state.sampler.reused), reused)
        assert int(state.sampler.window_step) == step and int(state.sampler.window) == length


@pytest.mark.parametrize("ratio", [0.0, 0.5])
def test_fresh_draws_are_uniform_over_the_filled_complement(ratio):
    """alpha = 0 is uniform sampling over the filled slots; with alpha > 0, S+ is uniform
    over the filled slots outside S- (chi-square over 2000 jitted batches)."""
    buf = jitted("reuse", (("reuse_ratio", ratio),), capacity=CAPACITY, batch_size=BATCH)
    state = fill(buf, AGENTS, 9, 3)  # 27 of 32 slots filled
    num_reused = round(ratio * BATCH)
    draw = jax.jit(jax.vmap(buf.sample, in_axes=(None, 0)))
    indices = np.asarray(draw(state, jax.random.split(jax.random.key(0), 2000)).indices)
    np.testing.assert_array_equal(indices[:, :num_reused],
                                  np.broadcast_to(np.arange(num_reused), (2000, num_reused)))
    counts = np.bincount(indices[:, num_reused:].reshape(-1), minlength=CAPACITY)
    assert counts[:num_reused].sum() == 0 and counts[27:].sum() == 0
    assert stats.chisquare(counts[num_reused:27]).pvalue > 1e-3


@settings(max_examples=8, deadline=None, phases=NO_SHRINK)
@given(written=st.integers(6, 70), seed=st.integers(0, 2**16))
def test_complement_draws_under_jit_cover_exactly_the_written_slots_outside_the_reused(
    written, seed
):
    size = min(written, CAPACITY)
    state = BufferState(experience=(), write_pos=jnp.int32(written % CAPACITY),
                        size=jnp.int32(size), sampler=())
    rng = np.random.default_rng(seed)
    excluded = np.sort(rng.choice(size, 4, replace=False)).astype(np.int32)  # [K] distinct
    draw = jax.jit(jax.vmap(complement_uniform, in_axes=(None, 0, None, None, None)),
                   static_argnums=(3, 4))
    fresh = draw(state, jax.random.split(jax.random.key(seed), 200), jnp.asarray(excluded), 8,
                 CAPACITY)
    assert fresh.shape == (200, 8) and fresh.dtype == jnp.int32
    allowed = sorted(set(range(size)) - set(excluded.tolist()))
    assert sorted(set(np.asarray(fresh).reshape(-1).tolist())) == allowed


def test_new_transitions_enter_at_the_largest_decayed_weight():
    decay = 0.9
    buf = jitted("reuse", (("reuse_ratio", 0.5), ("decay", decay)), capacity=CAPACITY,
                 batch_size=8)
    state = fill(buf, 3, 4, 3)
    errors = np.random.default_rng(0).uniform(0.0, 2.0, (8, 3)).astype(np.float32)
    batch = buf.sample(state, jax.random.key(0))
    state = buf.update_priorities(state, batch.indices, jnp.asarray(errors))
    top = max(decay * 1.0, float(errors.max() + 1e-6))
    np.testing.assert_allclose(float(state.sampler.max_weight), top, rtol=1e-6)
    state = buf.add(state, jax.tree.map(lambda x: x[:3], state.experience))
    new_slots = np.arange(12, 15)
    np.testing.assert_allclose(np.asarray(state.sampler.weights)[new_slots], top, rtol=1e-6)
    weights = np.asarray(buf.sample(state, jax.random.key(1)).weights)
    assert np.all((weights > 0) & (weights <= 1.0))


@pytest.mark.parametrize("layout", ["transition_major", "episode"])
def test_ones_loss_weights_sample_the_same_items_with_unit_weights(layout):
    config = dict(capacity=CAPACITY, batch_size=BATCH, layout=layout)
    table = jitted("reuse", (("reuse_window", 2),), **config)
    ones = jitted("reuse", (("reuse_window", 2), ("loss_weights", "ones")), **config)
    states = [buf.add(buf.init(first_item(layout)), items(layout, np.arange(20)))
              for buf in (table, ones)]
    rng = np.random.default_rng(0)
    for update in range(4):
        batches = [buf.sample(s, jax.random.key(update)) for buf, s in zip((table, ones), states,
                                                                          strict=True)]
        np.testing.assert_array_equal(batches[0].indices, batches[1].indices)
        np.testing.assert_array_equal(np.asarray(batches[1].weights), np.ones(BATCH))
        assert batches[1].weights.dtype == jnp.float32
        errors = jnp.asarray(td_errors(rng, layout))
        states = [buf.update_priorities(s, b.indices, errors)
                  for buf, s, b in zip((table, ones), states, batches, strict=True)]
        jax.tree.map(np.testing.assert_array_equal, states[0].sampler, states[1].sampler)
    assert np.asarray(batches[0].weights).min() < 1.0  # the table weights are not ones


def test_reuse_serves_episode_replay_with_one_weight_per_episode():
    buffer = make_buffer("reuse", capacity=6, batch_size=4, layout="episode",
                         index_sharing="shared")
    add, sample, update = jax.jit(buffer.add), jax.jit(buffer.sample), jax.jit(
        buffer.update_priorities)
    state = jax.jit(buffer.init)(example_episode(SPEC))
    assert state.experience.obs.shape == (6, T + 1, AGENTS, 2)
    assert state.sampler.weights.shape == (6,)
    state = add(state, episodes(np.arange(3)))
    assert not bool(jax.jit(buffer.can_sample)(state))  # 3 episodes < a batch of 4
    state = add(state, episodes(np.arange(3, 8)))  # 8 episodes into 6 slots: wrapped
    assert bool(jax.jit(buffer.can_sample)(state))
    batch = sample(state, jax.random.key(0))
    assert batch.experience.obs.shape == (4, T + 1, AGENTS, 2)
    assert batch.indices.shape == (4,) and batch.weights.shape == (4,)
    held = {0: 6, 1: 7, 2: 2, 3: 3, 4: 4, 5: 5}  # slot -> episode
    np.testing.assert_array_equal(counter_of(batch.experience, "episode"),
                                  [held[int(i)] for i in batch.indices])
    errors = jnp.asarray([0.5, 1.0, 1.5, 2.0])  # one per episode [B]
    state = update(state, batch.indices, errors)
    np.testing.assert_allclose(np.asarray(state.sampler.weights)[np.asarray(batch.indices)],
                               np.asarray(errors) + 1e-6, rtol=1e-6)
    per_agent = update(state, batch.indices, jnp.ones((4, AGENTS)))  # [B, N] reduced
    assert per_agent.sampler.weights.shape == (6,)


@pytest.mark.parametrize("layout", ["transition_major", "episode"])
def test_can_sample_is_false_below_a_batch(layout):
    buf = jitted("reuse", (), capacity=CAPACITY, batch_size=BATCH, layout=layout)
    state = buf.add(buf.init(first_item(layout)), items(layout, np.arange(BATCH - 1)))
    assert not bool(buf.can_sample(state))
    state = buf.add(state, items(layout, np.arange(1)))
    assert bool(buf.can_sample(state))


@pytest.mark.parametrize("basis", ["capacity", "filled"])
def test_dynamic_window_in_a_scan_vmapped_over_seeds(basis):
    """The ``None`` window under ``lax.scan`` and ``vmap``: every batch reuses the stored
    S-, holds only filled slots, and each window lasts max(floor(d / b), 1) updates, d the
    capacity (Alg. 1; the default) or the filled entries at the re-rank."""
    buffer = make_buffer("reuse", capacity=64, batch_size=BATCH, decay=0.8,
                         **({} if basis == "capacity" else {"window_basis": basis}))

    def step(state, key):
        sample_key, td_key = jax.random.split(key)
        state = buffer.add(state, transitions(jnp.zeros(2), AGENTS))
        batch = buffer.sample(state, sample_key)
        seen = (state.size, state.sampler.window, state.sampler.window_step,
                jnp.all(batch.indices[:4] == state.sampler.reused),
                jnp.all(batch.indices < state.size))
        errors = jax.random.uniform(td_key, (BATCH, AGENTS))
        return buffer.update_priorities(state, batch.indices, errors), seen

    def run(key):
        state = buffer.add(buffer.init(first_item("transition_major")),
                           transitions(jnp.zeros(BATCH), AGENTS))
        return jax.lax.scan(step, state, jax.random.split(key, 40))[1]

    size, length, at, reused_ok, filled_ok = map(
        np.asarray, jax.jit(jax.vmap(run))(jax.random.split(jax.random.key(0), 2)))
    assert reused_ok.all() and filled_ok.all()
    for seed in range(2):
        # the initial S- is ranked at d = 0 (filled) or lasts floor(C / b) (capacity)
        expected = left = 64 // BATCH if basis == "capacity" else 1
        for t in range(40):
            assert length[seed, t] == expected and at[seed, t] == expected - left
            left -= 1
            if left == 0:  # re-ranked at this update, with d = C or d = size
                d = 64 if basis == "capacity" else int(size[seed, t])
                expected = left = max(d // BATCH, 1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(reuse_ratio=-0.1), "reuse_ratio must be a number in"),
        (dict(reuse_ratio=1.5), "reuse_ratio must be a number in"),
        (dict(reuse_ratio="0.5"), "reuse_ratio must be a number in"),
        (dict(decay=0.0), r"decay must be a number in \(0.0, 1.0\]"),
        (dict(decay=-0.5), "decay must be a number in"),
        (dict(decay=1.01), "decay must be a number in"),
        (dict(reuse_window=0), "reuse_window must be a positive int or None"),
        (dict(reuse_window=-2), "reuse_window must be a positive int or None"),
        (dict(reuse_window=2.0), "reuse_window must be a positive int or None"),
        (dict(reuse_window=True), "reuse_window must be a positive int or None"),
        (dict(loss_weights="max"), "loss_weights must be one of table, ones; got 'max'"),
        (dict(loss_weights=None), "loss_weights must be one of"),
        (dict(window_basis="size"), "window_basis must be one of capacity, filled; got 'size'"),
        (dict(reused_weights="keep"),
         "reused_weights must be one of write, decay; got 'keep'"),
    ],
)
def test_reuse_rejects_bad_arguments_in_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message) as info:
        make_buffer("reuse", capacity=64, batch_size=8, **kwargs)
    assert "\n" not in str(info.value)


def test_reuse_accepts_the_edges_of_its_ranges():
    for kwargs in (dict(reuse_ratio=0.0), dict(reuse_ratio=1), dict(decay=1.0),
                   dict(reuse_window=1), dict(reuse_window=None), dict(loss_weights="ones"),
                   dict(window_basis="filled"), dict(window_basis="capacity"),
                   dict(reused_weights="write"), dict(reused_weights="decay")):
        make_buffer("reuse", capacity=64, batch_size=8, **kwargs)


@pytest.mark.parametrize("layout", ["transition_major", "episode"])
def test_estimate_bytes_counts_the_whole_reuse_state(layout):
    config = dict(capacity=CAPACITY, batch_size=BATCH, layout=layout)
    example = first_item(layout)
    storage_bytes = estimate_bytes(example, sampler="uniform", **config)
    for ratio in (0.0, 0.5, 1.0):
        num_reused = round(ratio * BATCH)
        counted = estimate_bytes(example, sampler="reuse", reuse_ratio=ratio, **config)
        # table [C], max weight, S- [K], window step, window length
        assert counted - storage_bytes == 4 * CAPACITY + 4 + 4 * num_reused + 4 + 4
        buffer = make_buffer("reuse", reuse_ratio=ratio, **config)
        allocated = jax.jit(buffer.init)(example)
        assert counted == sum(leaf.nbytes for leaf in jax.tree.leaves(allocated))


def test_decayed_reused_weights_give_way_at_the_next_ranking():
    """With ``reused_weights="decay"`` the items reused for a window lose ``gamma ** n`` of
    their weight and the next S- is drawn from the others; with ``"write"`` equal fresh
    weights keep S- at its first K slots."""
    nexts = {}
    for rewrite in ("write", "decay"):
        buf = jitted("reuse", (("reuse_ratio", 0.5), ("reuse_window", 3), ("decay", 0.5),
                               ("reused_weights", rewrite)),
                     capacity=CAPACITY, batch_size=BATCH)
        state = fill(buf, AGENTS, 8, 3)  # 24 slots, all at weight 1
        for update in range(3):
            batch = buf.sample(state, jax.random.key(update))
            state = buf.update_priorities(state, batch.indices, jnp.ones((BATCH, AGENTS)))
        nexts[rewrite] = set(np.asarray(state.sampler.reused).tolist())
        weights = np.asarray(state.sampler.weights)
        if rewrite == "decay":  # S- (slots 0-3) decayed three times from 1, never rewritten
            np.testing.assert_allclose(weights[:4], 0.5 ** 3, rtol=1e-6)
    assert nexts["write"] == {0, 1, 2, 3}  # refreshed S- ties the last S+, lower slots win
    assert not nexts["decay"] & {0, 1, 2, 3}
