"""``make("jaxmarl:<id>")``: step for step equal to JaxMARL's own envs under random actions
(SMAX 3m against the heuristic enemy, MPE spread, Hanabi), every learner family on SMAX 3m,
and one-line errors for an unknown id, an unsupported space and a bad keyword."""

from __future__ import annotations

import sys

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.envs import make

pytest.importorskip("jaxmarl")

# (id, our kwargs, steps): short time limits so that the runs cross several resets.
CASES = [
    ("HeuristicEnemySMAX", {"scenario": "3m", "max_steps": 12}, 40),
    ("MPE_simple_spread_v3", {"max_steps": 9}, 25),
    pytest.param("hanabi", {}, 60, marks=pytest.mark.slow),
]


def reference(env_id: str, kwargs: dict):
    """JaxMARL's own env, built as its baselines build it."""
    import jaxmarl
    from jaxmarl.environments.smax import map_name_to_scenario

    kwargs = dict(kwargs)
    if "scenario" in kwargs:
        kwargs["scenario"] = map_name_to_scenario(kwargs["scenario"])
    return jaxmarl.make(env_id, **kwargs)


@pytest.mark.parametrize("env_id,kwargs,steps", CASES,
                         ids=["smax_3m", "mpe_spread", "hanabi"])
@pytest.mark.fast_cases(1)
def test_steps_equal_jaxmarls_own_env_under_random_actions(env_id, kwargs, steps):
    env, params = make(f"jaxmarl:{env_id}", **kwargs)
    ref = reference(env_id, kwargs)
    agents, spec = ref.agents, env.spec

    def random_actions(key, avail):
        if avail is None:
            return env.random_action(key)
        return jax.random.categorical(key, jnp.where(avail, 0.0, -jnp.inf)).astype(jnp.int32)

    @jax.jit
    def both(key):
        reset_key, run_key = jax.random.split(key)
        obs, state = env.reset(reset_key, params)
        ref_obs, ref_state = ref.reset(reset_key)

        def one(carry, step_key):
            obs, state, ref_obs, ref_state = carry
            action_key, env_key = jax.random.split(step_key)
            avail = None if env.avail_actions is None else env.avail_actions(state, params)
            actions = random_actions(action_key, avail)
            obs, state, reward, terminated, truncated, info = env.step(
                env_key, state, actions, params)
            ref_obs, ref_state, ref_reward, ref_dones, _ = ref.step(
                env_key, ref_state, {a: actions[i] for i, a in enumerate(agents)})
            out = {"ours": (obs, reward, terminated | truncated, state.inner),
                   "ref": (ref_obs, ref_reward, ref_dones["__all__"], ref_state),
                   "info": info, "terminated": terminated, "truncated": truncated}
            return (obs, state, ref_obs, ref_state), out

        _, out = jax.lax.scan(one, (obs, state, ref_obs, ref_state),
                              jax.random.split(run_key, steps))
        return (obs, ref_obs), out

    (first, ref_first), out = jax.device_get(both(jax.random.PRNGKey(3)))

    def stacked(obs_dict):  # {agent: [T, ...]} -> [T, N, obs_dim], padded as ours
        rows = [np.reshape(obs_dict[a], (np.shape(obs_dict[a])[0], -1)) for a in agents]
        return np.stack([np.pad(r, ((0, 0), (0, spec.obs_dim - r.shape[1]))) for r in rows], 1)

    first_rows = [np.ravel(ref_first[a]) for a in agents]
    np.testing.assert_array_equal(first[:, :len(first_rows[0])], np.stack(first_rows))
    obs, reward, done, inner = out["ours"]
    ref_obs, ref_reward, ref_done, ref_inner = out["ref"]
    np.testing.assert_array_equal(obs, stacked(ref_obs))
    np.testing.assert_array_equal(reward, np.stack([ref_reward[a] for a in agents], 1))
    np.testing.assert_array_equal(done, ref_done)
    for ours, theirs in zip(jax.tree.leaves(inner), jax.tree.leaves(ref_inner), strict=True):
        np.testing.assert_array_equal(ours, theirs)
    assert done.sum() >= 2, "the run should cross several episode ends"
    assert not np.any(out["terminated"] & out["truncated"])
    info = out["info"]
    final = np.where(done[:, None, None], info["final_obs"], obs)
    np.testing.assert_array_equal(final, info["final_obs"])  # equal wherever no reset
    if "world_state" in ref_obs:  # SMAX: mapped into [0, 1]
        np.testing.assert_allclose(info["state"], smax_state_reference(ref, ref_obs["world_state"]),
                                   rtol=1e-6, atol=1e-7)
        assert info["state"].min() >= 0.0 and info["state"].max() <= 1.0
    if "won" in info:  # JaxMARL's own win test: a team reward >= 1 on the last step
        np.testing.assert_array_equal(info["won"], done & (reward[:, 0] >= 1.0))
    if env.avail_actions is not None:
        assert info["avail_actions"].shape == (steps, spec.num_agents, spec.num_actions)


def smax_state_reference(ref, world_state) -> np.ndarray:
    """SMAX's global state as ours should map it, in numpy from JaxMARL's ``world_state``
    ``[T, U * W + 2U]``: positions over the map's size, each cooldown over its unit type's
    clipped to [0, 1] (SMAX's own observation of it), integer types over the largest."""
    core = getattr(ref, "_env", ref)
    raw = np.asarray(world_state, np.float64)
    units, width = core.num_agents, len(core.own_features)
    own = raw[:, :units * width].reshape(len(raw), units, width).copy()
    teams, types = raw[:, units * width:units * (width + 1)], raw[:, units * (width + 1):]
    own[..., 1] /= core.map_width
    own[..., 2] /= core.map_height
    type_cooldown = np.asarray(core.unit_type_weapon_cooldowns, np.float64)[types.astype(int)]
    own[..., 3] = np.clip(own[..., 3] / type_cooldown, 0.0, 1.0)
    return np.concatenate([own.reshape(len(raw), -1), teams,
                           types / (len(core.unit_type_names) - 1)], axis=1)


def test_smax_spec():
    env, _ = make("jaxmarl:HeuristicEnemySMAX", scenario="3m")
    spec = env.spec
    assert (spec.num_agents, spec.obs_dim, spec.num_actions, spec.state_dim) == (3, 75, 8, 72)
    assert spec.shared_reward and spec.scripted and spec.teams == ("ally",) * 3
    assert spec.episode_stats == ("won",) and spec.episode_length == 101


def test_smax_global_state_is_scaled_to_order_one():
    """Positions (map units in JaxMARL's world_state) are scaled into [0, 1] and cooldowns
    (which SMAX lets run below zero) to units of the longest one, at reset and along a
    scripted battle; health and unit-type bits, teams and types are JaxMARL's."""
    env, params = make("jaxmarl:HeuristicEnemySMAX", scenario="3m")
    ref = reference("HeuristicEnemySMAX", {"scenario": "3m"})
    width = len(ref._env.own_features)
    units = ref._env.num_agents

    @jax.jit
    def run(key):
        obs, state = env.reset(key, params)

        def one(state, step_key):
            act_key, env_key = jax.random.split(step_key)
            actions = env.scripted_action(act_key, state, params)
            _, state, _, _, _, info = env.step(env_key, state, actions, params)
            return state, (info["state"], ref.get_world_state(state.inner))

        first = env.state_of(state, params)
        _, (states, raw) = jax.lax.scan(one, state, jax.random.split(key, 60))
        return first, states, raw

    first, states, raw = jax.device_get(run(jax.random.PRNGKey(1)))
    features = np.concatenate([first[None], states])[:, :units * width]
    features = features.reshape(len(features), units, width)
    assert features[..., 1:3].min() >= 0.0 and features[..., 1:3].max() <= 1.0
    assert np.abs(features[..., 3]).max() <= 2.0  # cooldowns, in units of the longest
    assert features[..., [0, *range(4, width)]].max() <= 1.0
    positions = raw[:, :units * width].reshape(-1, units, width)[..., 1:3]
    assert positions.max() > 2.0  # JaxMARL's own positions are in map units
    np.testing.assert_array_equal(states[:, units * width:], raw[:, units * width:])


@pytest.mark.slow
def test_smax_scripted_policy_beats_random():
    env, params = make("jaxmarl:HeuristicEnemySMAX", scenario="3m", max_steps=40)
    from jaxmarl_accel.envs.evaluate import evaluate_policy
    from jaxmarl_accel.envs.policies import random_policy, scripted_policy

    key = jax.random.PRNGKey(0)
    scripted = evaluate_policy(env, params, scripted_policy(env), key, 8)
    rand = evaluate_policy(env, params, random_policy(env), key, 8)
    won = np.asarray(scripted.stats["won"])
    assert set(np.unique(won)) <= {0.0, 1.0}
    # The scripted policy beats the random one at its own game.
    assert float(np.mean(scripted.episode_returns)) > float(np.mean(rand.episode_returns))


def test_spread_scripted_policy_is_ours_on_jaxmarl_state():
    """MPE spread's scripted policy acts on JaxMARL's state exactly as our simple_spread's
    does on the same positions and velocities, and it defines a normalized score."""
    env, params = make("jaxmarl:MPE_simple_spread_v3")
    ours, our_params = make("simple_spread")
    assert env.spec.scripted
    our_act = jax.jit(ours.scripted_action)
    their_act = jax.jit(env.scripted_action)
    _, our_state = ours.reset(jax.random.PRNGKey(0), our_params)
    for seed in range(5):
        _, state = env.reset(jax.random.PRNGKey(seed), params)
        vel = jax.random.normal(jax.random.PRNGKey(100 + seed), (3, 2)) * 0.3
        state = state.replace(inner=state.inner.replace(
            p_vel=state.inner.p_vel.at[:3].set(vel)))
        mirrored = our_state.replace(pos=state.inner.p_pos, vel=state.inner.p_vel)
        key = jax.random.PRNGKey(seed)
        np.testing.assert_array_equal(their_act(key, state, params),
                                      our_act(key, mirrored, our_params))


def test_other_mpe_envs_have_no_scripted_policy():
    env, _ = make("jaxmarl:MPE_simple_reference_v3")
    assert not env.spec.scripted


def test_time_limit_is_truncated_and_params_shorten_it():
    env, params = make("jaxmarl:MPE_simple_spread_v3")
    assert env.spec.episode_length == 26
    assert env.avail_actions is None and env.state_of is None
    params = params.replace(episode_length=jnp.int32(5))
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    step = jax.jit(env.step)
    ends = []
    for i in range(10):
        obs, state, _, terminated, truncated, _ = step(
            jax.random.PRNGKey(i), state, jnp.zeros((3,), jnp.int32), params)
        ends.append((bool(terminated), bool(truncated)))
    assert [i for i, (_, tr) in enumerate(ends) if tr] == [4, 9]
    assert not any(te for te, _ in ends)


def test_continuous_box_actions_map_onto_the_box():
    env, params = make("jaxmarl:MPE_simple_spread_v3", action_type="Continuous")
    assert env.spec.continuous and env.spec.act_dim == 5
    actions = env.random_action(jax.random.PRNGKey(0))
    assert actions.shape == (3, 5) and float(actions.min()) >= 0 and float(actions.max()) <= 1
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    obs, *_ = jax.jit(env.step)(jax.random.PRNGKey(1), state, actions, params)
    assert obs.shape == (3, 18)


def test_errors_are_one_line_and_name_the_argument():
    with pytest.raises(ValueError, match="unknown JaxMARL env 'SMAC'") as error:
        make("jaxmarl:SMAC")
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="storm.*observation space dict is not supported") as error:
        make("jaxmarl:storm")
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="takes no map_name") as error:
        make("jaxmarl:HeuristicEnemySMAX", map_name="3m")
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="scenario '4m' is not a SMAX map"):
        make("jaxmarl:SMAX", scenario="4m")
    with pytest.raises(ValueError, match="episode_length"):
        make("jaxmarl:MPE_simple_spread_v3", episode_length=27)


def test_jaxmarl_is_imported_only_on_first_use():
    import subprocess

    code = ("import jaxmarl_accel, jaxmarl_accel.envs, sys; "
            "assert 'jaxmarl' not in sys.modules, 'imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


SMAX_TINY = (("max_steps", 6), ("scenario", "3m"))


@pytest.mark.parametrize("algo", ["qmix", pytest.param("matd3", marks=pytest.mark.slow)])
@pytest.mark.slow
def test_every_learner_family_trains_a_chunk_on_smax_3m(algo):
    """The value family (QMIX; VDN and IQL differ only in the mixer, which the stag hunt's
    tests cover) and the actor-critic family (MATD3)."""
    from jaxmarl_accel.algos import ActorCriticConfig
    from jaxmarl_accel.algos.value import ValueConfig
    from jaxmarl_accel.trainer.train import make_trainer

    settings = {"env": "jaxmarl:HeuristicEnemySMAX",
                "env_kwargs": SMAX_TINY, "algo": algo, "num_envs": 2, "eval_episodes": 2}
    if algo == "matd3":
        settings.update(learner=ActorCriticConfig(hidden_sizes=(8, 8)), buffer_capacity=64,
                        batch_size=8, update_every=2, learning_starts=8, total_env_steps=20,
                        eval_every=20)
    else:  # 7 steps per episode, 2 episodes a round: 2 rounds
        settings.update(learner=ValueConfig(hidden=8, mixer_embed=4, hypernet_hidden=8),
                        buffer_capacity=8, batch_size=2, total_env_steps=28, eval_every=28)
    trainer = make_trainer(TrainConfig(**settings))
    _, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0))
    assert np.asarray(metrics.updates).sum() > 0
    assert np.all(np.isfinite(np.asarray(metrics.eval_return)))
    won = np.asarray(metrics.eval_stats["won"])
    assert np.all((won >= 0) & (won <= 1))


def test_summary_without_a_scripted_policy_has_no_normalized_score():
    from jaxmarl_accel.runs import outputs

    summary = outputs.summarize([1.0, 2.0, 3.0], 0.5, None, baseline_se=(0.1, 0.1, 10))
    assert not any("normalized_score" in key and key != "normalized_score_note"
                   for key in summary)
    assert "scripted" in summary["normalized_score_note"] and summary["median_return"] == 2.0


def test_command_line_takes_jaxmarl_envs_and_their_keywords():
    from jaxmarl_accel.cli.scenario_flags import scenario_kwargs
    from jaxmarl_accel.envs import ENV_NAMES

    assert "jaxmarl:HeuristicEnemySMAX" in ENV_NAMES and "smax" not in ENV_NAMES
    given = (("max_steps", 50), ("scenario", "3m"))
    assert scenario_kwargs("jaxmarl:HeuristicEnemySMAX", given, None) == given
    with pytest.raises(ValueError, match="takes no bogus"):
        scenario_kwargs("jaxmarl:HeuristicEnemySMAX", (("bogus", 1),), None)


@pytest.mark.slow
def test_qmix_collects_the_same_smax_episodes_with_the_early_stopping_loop():
    """Battles end long before SMAX's limit: the collection stops in the block in which the
    last one ended, and QMIX's exploring agents collect bit for bit the episodes of the full
    scan of T steps, vmapped over 3 seeds."""
    from jaxmarl_accel.algos import make_algo
    from jaxmarl_accel.algos.value import ValueConfig
    from jaxmarl_accel.trainer.steps import COLLECT_BLOCK_STEPS, collect_episodes

    env, params = make("jaxmarl:HeuristicEnemySMAX", scenario="3m")
    algo = make_algo("qmix", env.spec, ValueConfig(hidden=8, mixer_embed=4, hypernet_hidden=8))

    def collect(key, block):
        state = algo.init(key)
        return collect_episodes(env, params, algo, state, key, 4, True, block_steps=block)

    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    scan, blocks = (jax.device_get(jax.jit(jax.vmap(lambda k, b=b: collect(k, b)))(keys))
                    for b in (None, COLLECT_BLOCK_STEPS))
    chex.assert_trees_all_equal(scan, blocks)
    longest = np.asarray(scan.lengths).max()
    assert longest <= env.spec.episode_length - 2 * COLLECT_BLOCK_STEPS  # it did stop early


def test_keywords_of_an_env_that_needs_arguments_are_left_to_jaxmarl():
    """LearnedPolicyEnemySMAX cannot be built with its defaults, so its keywords cannot be
    read: they are passed on unchecked, and JaxMARL's refusal is the one-line error."""
    from jaxmarl_accel.cli.scenario_flags import scenario_kwargs
    from jaxmarl_accel.envs import scenario_keywords

    assert scenario_keywords("jaxmarl:LearnedPolicyEnemySMAX") is None
    given = (("max_steps", 50),)
    assert scenario_kwargs("jaxmarl:LearnedPolicyEnemySMAX", given, None) == given
    with pytest.raises(ValueError, match="missing 2 required positional") as error:
        make("jaxmarl:LearnedPolicyEnemySMAX", **dict(given))
    assert "\n" not in str(error.value)


def test_jaxnav_continuous_actions_have_no_action_masks():
    """JaxNav defines available-action masks for its discrete mode alone (their width is not
    its continuous action's): a run padded them to a negative width while compiling."""
    env, _ = make("jaxmarl:jaxnav")
    spec = env.spec
    assert spec.continuous and spec.num_actions == 0 and env.avail_actions is None


@pytest.mark.slow
def test_jaxnav_steps_its_continuous_actions():
    env, params = make("jaxmarl:jaxnav")
    spec = env.spec
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    actions = jnp.full(spec.action_shape, 0.5)
    obs, state, reward, *_, info = jax.jit(env.step)(jax.random.PRNGKey(1), state, actions,
                                                     params)
    assert obs.shape == (spec.num_agents, spec.obs_dim) and "avail_actions" not in info
    assert bool(jnp.all(jnp.isfinite(reward)))


def test_jaxmarl_ids_are_no_module_references():
    """``jaxmarl:<id>`` has the form of ``package.module:attr`` but names no module of the
    user's: the scenario record lookups (marl-eval's names, --agents) leave it alone."""
    from jaxmarl_accel.envs import agent_count_kwarg, counts_total

    assert agent_count_kwarg("jaxmarl:jaxnav") == "num_agents"
    assert not counts_total("jaxmarl:jaxnav")
