"""envs.stag_hunt: each rule as a small golden scenario (every one stepped under 16 keys, so
that it holds in every agent and prey order), invariants of random rollouts, shapes, jit,
vmap, retracing, auto-reset, the policies and bad input."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import checkify

from jaxmarl_accel.envs import make, stag_hunt
from jaxmarl_accel.envs.hunt_rules import CATCH, STAY, HuntState
from jaxmarl_accel.envs.policies import EnvObs, available_actions, random_policy
from jaxmarl_accel.envs.rollout import rollout
from jaxmarl_accel.envs.stag_hunt import transition

RIGHT, DOWN, LEFT, UP = 0, 1, 2, 3
# 3 agents, 2 stags (prey 0, 1) and a hare (prey 2) on a 5 x 5 grid: every golden scenario.
ENV, PARAMS = make("stag_hunt", num_agents=3, num_stags=2, num_hares=1, grid_size=5,
                   miscapture_punishment=-1.5)
KEYS = jax.random.split(jax.random.PRNGKey(7), 16)
STEP = jax.jit(jax.vmap(ENV.step, in_axes=(0, None, None, None)))


def hunt(agents, prey, frozen=(), dead=(), step=0) -> HuntState:
    """A state of the golden env: cells of the 3 agents and of the 3 prey (stag, stag, hare);
    ``frozen`` agents and ``dead`` prey by index."""
    return HuntState(agent_pos=jnp.asarray(agents, jnp.int32),
                     prey_pos=jnp.asarray(prey, jnp.int32),
                     frozen=jnp.isin(jnp.arange(3), jnp.asarray(frozen, jnp.int32)),
                     prey_alive=~jnp.isin(jnp.arange(3), jnp.asarray(dead, jnp.int32)),
                     step=jnp.int32(step), grid_shape=(5, 5), num_stags=2)


def run(state, actions, params=PARAMS):
    """One step under each of the 16 keys: (reward [16], next state before any reset,
    terminated [16], truncated [16], info)."""
    _, _, reward, term, trunc, info = STEP(KEYS, state, jnp.asarray(actions, jnp.int32), params)
    return np.asarray(reward), info, np.asarray(term), np.asarray(trunc)


def final_state(state, actions, params=PARAMS):
    """The state each key's step reached, before any reset (a HuntState with a key axis)."""
    after = _TRANSITION(KEYS, state, jnp.asarray(actions, jnp.int32), params).state
    return jax.tree.map(np.asarray, after)


_TRANSITION = jax.jit(jax.vmap(transition, in_axes=(0, None, None, None)))


def test_two_catchers_capture_and_freeze():
    state = hunt([(2, 1), (2, 3), (0, 0)], [(2, 2), (4, 4), (4, 0)])
    reward, info, term, trunc = run(state, [CATCH, CATCH, STAY])
    assert np.all(reward == 10.0) and np.all(np.asarray(info["captures"]) == 1)
    assert not term.any() and not trunc.any()
    after = final_state(state, [CATCH, CATCH, STAY])
    assert np.all(after.frozen == [True, True, False])
    assert np.all(after.prey_alive == [False, True, True])
    grid = np.asarray(info["final_state"]).reshape(16, 5, 5, 3)
    assert grid[:, :, :, 0].sum(axis=(1, 2)).tolist() == [1] * 16  # the catchers left
    assert np.all(grid[:, 0, 0, 0] == 1) and np.all(grid[:, 2, 2, 1] == 0)
    assert np.all(np.asarray(info["final_obs"])[:, :2] == 0)  # frozen agents see nothing
    avail = np.asarray(info["final_avail_actions"])
    assert np.all(avail[:, :2] == [False, False, False, False, True, False])


def test_one_catcher_is_punished_and_the_stag_flees():
    state = hunt([(2, 1), (0, 4), (0, 0)], [(2, 2), (4, 4), (4, 0)])
    reward, info, _, _ = run(state, [CATCH, STAY, STAY])
    assert np.all(reward == -1.5) and np.all(np.asarray(info["captures"]) == 0)
    after = final_state(state, [CATCH, STAY, STAY])
    assert not after.frozen.any() and after.prey_alive.all()
    moved_to = {tuple(p) for p in after.prey_pos[:, 0]}
    assert moved_to == {(1, 2), (3, 2), (2, 3)}  # uniform over its free neighbours


def test_hare_is_captured_by_one_agent():
    state = hunt([(4, 1), (0, 4), (0, 0)], [(2, 2), (2, 4), (4, 0)])
    reward, info, _, _ = run(state, [CATCH, STAY, STAY])
    assert np.all(reward == 1.0) and np.all(np.asarray(info["captures"]) == 1)
    after = final_state(state, [CATCH, STAY, STAY])
    assert after.frozen[:, 0].all() and not after.prey_alive[:, 2].any()


def test_catch_is_available_only_next_to_an_alive_prey():
    # agent 0 diagonal to stag 0, agent 1 next to a captured stag, agent 2 next to the hare
    state = hunt([(1, 1), (3, 3), (4, 1)], [(2, 2), (3, 4), (4, 0)], dead=[1])
    avail = np.asarray(ENV.avail_actions(state, PARAMS))
    assert avail[:, CATCH].tolist() == [False, False, True]
    assert avail[:, STAY].all()
    assert avail[2, :4].tolist() == [True, False, True, True]  # bottom row: no "down"
    reward, _, _, _ = run(state, [CATCH, CATCH, STAY])  # unavailable catches act as stay
    assert np.all(reward == 0.0)


def test_frozen_agents_stay_and_vanish():
    state = hunt([(2, 1), (2, 0), (0, 0)], [(4, 4), (3, 4), (4, 0)], frozen=[0])
    avail = np.asarray(ENV.avail_actions(state, PARAMS))
    assert avail[0].tolist() == [False, False, False, False, True, False]
    after = final_state(state, [UP, RIGHT, STAY])  # agent 1 walks into the frozen one's cell
    assert np.all(after.agent_pos[:, 0] == [2, 1]) and np.all(after.agent_pos[:, 1] == [2, 1])
    obs = np.asarray(ENV.reset(KEYS[0], PARAMS)[0])
    assert obs.shape == (3, 75)
    _, info, _, _ = run(state, [UP, STAY, STAY])
    assert np.all(np.asarray(info["final_obs"])[:, 0] == 0)
    window = np.asarray(info["final_obs"])[:, 1].reshape(16, 5, 5, 3)
    assert np.all(window[:, 2, 3, 0] == 0) and np.all(window[:, 2, 2, 0] == 1)


def test_blocked_moves_fail_and_chains_depend_on_the_order():
    # agent 0 moves right into agent 1's cell while agent 1 moves right: order decides;
    # agent 2 moves down onto the hare: blocked.
    state = hunt([(0, 0), (0, 1), (3, 0)], [(4, 4), (2, 4), (4, 0)])
    after = final_state(state, [RIGHT, RIGHT, DOWN])
    assert np.all(after.agent_pos[:, 1] == [0, 2]) and np.all(after.agent_pos[:, 2] == [3, 0])
    assert {tuple(p) for p in after.agent_pos[:, 0]} == {(0, 0), (0, 1)}
    # two agents into one free cell: exactly one gets it
    state = hunt([(1, 0), (1, 2), (4, 2)], [(4, 4), (3, 4), (4, 0)])
    after = final_state(state, [RIGHT, LEFT, STAY])
    at_target = np.all(after.agent_pos[:, :2] == [1, 1], axis=-1).sum(axis=1)
    assert np.all(at_target == 1)
    # off the grid (unavailable): stays
    after = final_state(hunt([(0, 0), (4, 4), (2, 2)], [(3, 1), (1, 3), (4, 0)]),
                        [UP, DOWN, STAY])
    assert np.all(after.agent_pos[:, 0] == [0, 0]) and np.all(after.agent_pos[:, 1] == [4, 4])


def test_a_cornered_prey_stays_and_one_exit_is_taken():
    state = hunt([(0, 1), (1, 0), (3, 3)], [(0, 0), (4, 4), (2, 2)], dead=[2])
    after = final_state(state, [STAY, STAY, STAY])
    assert np.all(after.prey_pos[:, 0] == [0, 0])
    state = hunt([(0, 1), (3, 3), (0, 4)], [(0, 0), (4, 4), (1, 1)], dead=[2])
    after = final_state(state, [STAY, STAY, STAY])
    assert np.all(after.prey_pos[:, 0] == [1, 0])  # its only free neighbour


def test_an_agent_next_to_two_stags_helps_capture_only_one():
    # agent 0 touches both stags; agent 1 touches stag 0, agent 2 touches stag 1
    state = hunt([(2, 2), (1, 1), (3, 3)], [(2, 1), (2, 3), (0, 4)], dead=[2])
    reward, info, _, _ = run(state, [CATCH, CATCH, CATCH])
    assert np.all(np.asarray(info["captures"]) == 1) and np.all(reward == 10.0 - 1.5)
    after = final_state(state, [CATCH, CATCH, CATCH])
    assert np.all(after.frozen[:, 0]) and np.all(after.frozen.sum(axis=1) == 2)
    assert np.all(after.prey_alive[:, :2].sum(axis=1) == 1)
    assert len({tuple(f) for f in after.frozen}) == 2  # both stags were first in some order
    # alone next to two stags: punished once for each
    state = hunt([(2, 2), (0, 0), (4, 0)], [(2, 1), (2, 3), (0, 4)], dead=[2])
    reward, _, _, _ = run(state, [CATCH, STAY, STAY])
    assert np.all(reward == -3.0)


def test_termination_and_truncation():
    # the last prey captured: terminated and reset
    state = hunt([(2, 1), (2, 3), (0, 0)], [(2, 2), (4, 4), (4, 0)], dead=[1, 2])
    reward, info, term, trunc = run(state, [CATCH, CATCH, STAY])
    assert term.all() and not trunc.any() and np.all(reward == 10.0)
    # every agent frozen (one already): terminated
    state = hunt([(2, 1), (2, 3), (0, 0)], [(2, 2), (4, 4), (4, 0)], frozen=[2])
    _, _, term, trunc = run(state, [CATCH, CATCH, STAY])
    assert term.all() and not trunc.any()
    # the time limit: truncated, unless the same step terminates
    state = hunt([(0, 0), (0, 4), (4, 4)], [(2, 2), (3, 3), (4, 0)], step=199)
    _, _, term, trunc = run(state, [STAY, STAY, STAY])
    assert trunc.all() and not term.any()
    state = hunt([(2, 1), (2, 3), (0, 0)], [(2, 2), (4, 4), (4, 0)], dead=[1, 2], step=199)
    _, _, term, trunc = run(state, [CATCH, CATCH, STAY])
    assert term.all() and not trunc.any()


def test_auto_reset_reports_the_final_views():
    state = hunt([(2, 1), (2, 3), (0, 0)], [(2, 2), (4, 4), (4, 0)], dead=[1, 2])
    obs, new_state, _, term, _, info = jax.jit(ENV.step)(
        KEYS[0], state, jnp.asarray([CATCH, CATCH, STAY]), PARAMS)
    assert bool(term) and int(new_state.step) == 0 and bool(new_state.prey_alive.all())
    np.testing.assert_array_equal(obs, _views_from_state(new_state))
    np.testing.assert_array_equal(info["state"], ENV.state_of(new_state, PARAMS))
    np.testing.assert_array_equal(info["avail_actions"], ENV.avail_actions(new_state, PARAMS))
    assert float(np.asarray(info["final_state"]).reshape(5, 5, 3)[..., 1:].sum()) == 0.0
    assert not np.array_equal(info["final_obs"], obs)


def _views_from_state(state):
    """Numpy reference of the observation of one state: windows of its global state grid."""
    return _windows(np.asarray(ENV.state_of(state, PARAMS)), np.asarray(state.agent_pos),
                    np.asarray(state.frozen))


def _windows(state_vec, agent_pos, frozen):
    padded = np.pad(state_vec.reshape(5, 5, 3), ((2, 2), (2, 2), (0, 0)))
    obs = np.stack([padded[r:r + 5, c:c + 5].reshape(-1) for r, c in agent_pos])
    return obs * ~frozen[:, None]


def test_observation_windows_and_invariants_of_random_rollouts():
    record = jax.jit(rollout, static_argnums=(0, 2, 4))(
        ENV, PARAMS, random_policy(ENV), jax.random.PRNGKey(3), 300)
    states = jax.tree.map(np.asarray, record.states)
    grids = np.asarray(jax.vmap(ENV.state_of, (0, None))(record.states, PARAMS))
    avail = np.asarray(jax.vmap(ENV.avail_actions, (0, None))(record.states, PARAMS))
    for t in range(300):
        agents, prey = states.agent_pos[t], states.prey_pos[t]
        frozen, alive = states.frozen[t], states.prey_alive[t]
        np.testing.assert_array_equal(record.obs[t], _windows(grids[t], agents, frozen))
        pos = np.concatenate([agents[~frozen], prey[alive]])
        assert np.all((pos >= 0) & (pos < 5))  # on the grid
        assert len({tuple(p) for p in pos}) == len(pos)  # one entity per cell
        assert avail[t, np.arange(3), record.actions[t]].all()  # random picks available ones
    steps = np.abs(np.diff(states.prey_pos, axis=0)).sum(axis=-1)
    same_episode = np.diff(states.step) == 1
    assert np.all(steps[same_episode] <= 1)  # prey move one cell at most
    assert (record.terminated | record.truncated).any() and states.frozen.any()


def test_shapes_and_specs_at_8_16_32():
    for n in (8, 16, 32):
        env, params = make("stag_hunt", num_agents=n, num_stags=n)
        spec = env.spec
        assert (spec.obs_dim, spec.num_actions, spec.act_dim, spec.state_dim) == (75, 6, 6, 300)
        assert spec.action_sizes == (6,) * n and spec.teams == ("agent",) * n
        assert spec.shared_reward and spec.binary_observations
        assert spec.episode_stats == ("captures",) and spec.episode_length == 200

    def two_steps(key):
        obs0, state = env.reset(key, params)
        act = random_policy(env)((), (), key, EnvObs(obs0, state, params),
                                 available_actions(env, state, params))[0]
        out = env.step(key, state, act, params)
        return obs0, env.step(key, out[1], env.scripted_action(key, out[1], params), params)

    obs0, (obs, state, rew, term, trunc, info) = jax.jit(jax.vmap(two_steps))(
        jax.random.split(jax.random.PRNGKey(0), 2))
    assert obs0.shape == obs.shape == info["final_obs"].shape == (2, 32, 75)
    assert rew.shape == (2, 32) and rew.dtype == jnp.float32 and term.shape == (2,)
    assert info["avail_actions"].shape == (2, 32, 6) and info["avail_actions"].dtype == bool
    assert info["state"].shape == info["final_state"].shape == (2, 300)
    assert info["captures"].shape == (2,) and info["captures"].dtype == jnp.int32
    assert set(np.unique(np.asarray(obs))) <= {0.0, 1.0}
    assert np.all(np.asarray(obs0).reshape(2, 32, 5, 5, 3)[:, :, 2, 2, 0] == 1)  # self


def test_no_retracing_and_params_are_traced():
    step = jax.jit(chex.assert_max_traces(ENV.step, n=1))
    _, state = ENV.reset(KEYS[0], PARAMS)
    truncations = []
    params = PARAMS
    for t in range(12):
        if t == 4:
            params = params.replace(episode_length=jnp.int32(3), stag_reward=jnp.float32(5.0))
        _, state, _, _, trunc, _ = step(KEYS[t], state, jnp.full((3,), STAY, jnp.int32), params)
        truncations.append(bool(trunc))
    assert [t for t, x in enumerate(truncations) if x] == [4, 7, 10]


def test_bad_input():
    with pytest.raises(ValueError, match="num_agents \\+ num_stags \\+ num_hares = 101 exceeds"):
        make("stag_hunt", num_agents=51, num_stags=50)
    with pytest.raises(ValueError, match="miscapture_punishment must be a finite number"):
        make("stag_hunt", miscapture_punishment=float("nan"))
    with pytest.raises(ValueError, match="grid_size"):
        make("stag_hunt", grid_size=(0, 3))
    with pytest.raises(ValueError, match="num_stags"):
        make("stag_hunt", num_stags=-1)
    with pytest.raises(ValueError, match=r"int with shape \(3,\)"):
        ENV.step(KEYS[0], hunt([(0, 0), (0, 4), (4, 4)], [(2, 2), (3, 3), (4, 0)]),
                 jnp.zeros((4,), jnp.int32), PARAMS)
    checked, params = make("stag_hunt", num_agents=3, num_stags=2, num_hares=1, grid_size=5,
                           check_actions=True)
    state = hunt([(0, 0), (0, 4), (4, 4)], [(2, 2), (3, 3), (4, 0)])
    message = "agent 1 took action 5, which is not available"
    with pytest.raises(Exception, match=message):  # eagerly
        checked.step(KEYS[0], state, jnp.asarray([STAY, CATCH, STAY]), params)
    step = jax.jit(checkify.checkify(checked.step))
    err, _ = step(KEYS[0], state, jnp.asarray([STAY, CATCH, STAY]), params)
    assert message in str(err.get()) and "\n" not in str(err.get()).split(" (")[0]
    err, _ = step(KEYS[0], state, jnp.asarray([STAY, STAY, STAY]), params)
    assert err.get() is None


def test_reset_and_turn_orders_are_uniform():
    from jaxmarl_accel.envs.hunt_rules import place, random_order

    keys = jax.random.split(jax.random.PRNGKey(11), 6000)
    states = jax.jit(jax.vmap(lambda k: place(k, (2, 2), 2, 1, 0)))(keys)
    cells = np.concatenate([states.agent_pos, states.prey_pos], axis=1) @ np.array([2, 1])
    assert np.all(np.sort(cells, axis=1)[:, 1:] != np.sort(cells, axis=1)[:, :-1])  # distinct
    placements, counts = np.unique(cells, axis=0, return_counts=True)
    assert len(placements) == 24 and counts.min() > 180 and counts.max() < 320  # 250 each
    turn, order = jax.jit(jax.vmap(lambda k: random_order(jax.random.uniform(k, (3,)))))(keys)
    np.testing.assert_array_equal(np.take_along_axis(np.asarray(turn), np.asarray(order), 1),
                                  np.tile(np.arange(3), (6000, 1)))  # inverse permutations
    orders, counts = np.unique(np.asarray(order), axis=0, return_counts=True)
    assert len(orders) == 6 and counts.min() > 880 and counts.max() < 1120  # 1000 each


def test_module_functions_bound_to_a_shape_are_what_the_env_runs():
    shape = stag_hunt.HuntShape(grid_shape=(5, 5), num_agents=3, num_stags=2, num_hares=1,
                                check_actions=False)
    key = jax.random.PRNGKey(2)
    obs, state = jax.jit(stag_hunt.reset, static_argnums=0)(shape, key, PARAMS)
    expected = ENV.reset(key, PARAMS)
    chex.assert_trees_all_equal((obs, state), expected)
    actions = jax.jit(stag_hunt.scripted_action)(key, state, PARAMS)
    stepped = jax.jit(stag_hunt.step, static_argnums=0)(shape, key, state, actions, PARAMS)
    chex.assert_trees_all_equal(stepped, ENV.step(key, state, actions, PARAMS))
    assert stepped[0].shape == (3, ENV.spec.obs_dim) and stepped[2].shape == (3,)
    np.testing.assert_array_equal(jax.jit(stag_hunt.available_actions)(state, PARAMS),
                                  ENV.avail_actions(state, PARAMS))
    assert jax.jit(stag_hunt.state_of)(state, PARAMS).shape == (ENV.spec.state_dim,)
    draws = jax.jit(stag_hunt.random_action, static_argnums=0)(shape, key)
    assert draws.shape == (3,) and draws.dtype == jnp.int32
