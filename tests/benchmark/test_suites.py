"""Suites: the YAML format, its refusals (one line naming the entry), the built-in suites'
structure, flags as run arguments and ``--only``."""

import pytest

from jaxmarl_accel.algos.registry import registered_algos
from jaxmarl_accel.benchmark import builtin, execute, suites

TINY = "examples/benchmark_tiny.yaml"


def write(tmp_path, text):
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    return str(path)


def test_the_tiny_example_is_two_tasks_by_two_learners_by_two_seeds():
    suite = builtin.load_suite(TINY)
    assert suite.seeds == 2
    assert [p.name for p in suites.pairs(suite)] == [
        "spread/iql", "spread/vdn", "stag_hunt/iql", "stag_hunt/vdn"]


@pytest.mark.parametrize("text, message", [
    ("seeds: 1\ntasks: []\nlearners: []\n", "at least one task"),
    ("seeds: 1\ntasks: [{name: a, env: simple_spread}]\nlearners: [{name: x, algo: iql}]\n",
     "tasks[0] (a): missing 'env_steps'"),
    ("seeds: 1\ntasks: [{name: a, env: e, env_steps: 10, colour: red}]\n"
     "learners: [{name: x, algo: iql}]\n", "tasks[0] (a): unknown key 'colour'"),
    ("seeds: 1\ntasks: [{name: a, env: e, env_steps: 10, learners: [y]}]\n"
     "learners: [{name: x, algo: iql}]\n", "task 'a': unknown learner 'y'"),
    ("seeds: 1\ntasks: [{name: a, env: e, env_steps: 10}]\n"
     "learners: [{name: x, algo: iql}, {name: x, algo: vdn}]\n", "learner 'x'"),
    ("seeds: 1\ntasks: [{name: a, env: e, env_steps: 10}]\n"
     "learners: [{name: x, algo: iql, flags: [1]}]\n", "learners[0] (x): flags must be"),
    ("seeds: [\n", "not YAML"),
])
def test_a_malformed_suite_file_is_one_line_naming_the_entry(tmp_path, text, message):
    with pytest.raises(ValueError, match=None) as error:
        builtin.load_suite(write(tmp_path, text))
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_an_unknown_suite_name_lists_the_built_in_ones():
    with pytest.raises(ValueError, match="unknown suite 'nope'; built-in suites: jaxmarl-minimal"):
        builtin.load_suite("nope")
    with pytest.raises(ValueError, match="does not exist"):
        builtin.load_suite("missing.yaml")


def test_flags_become_run_arguments():
    flags = (("hidden-sizes", (32, 32)), ("team_lr", {"a": 0.1, "b": 1}), ("render", None),
             ("agent-ids", False))
    assert suites.flag_args(flags) == ["--hidden-sizes", "32", "32", "--team-lr", "a=0.1,b=1",
                                       "--render", "--agent-ids", "false"]


def test_run_arguments_scale_the_budget_and_the_evaluations():
    suite = builtin.load_suite(TINY)
    pair = suites.pairs(suite)[0]
    argv = suites.run_argv(pair, suite, "OUT", budget_scale=0.5)
    assert argv[argv.index("--total-env-steps") + 1] == "1000"
    assert argv[argv.index("--eval-every") + 1] == "500"
    assert argv[argv.index("--env-kwargs") + 1] == "num_agents=2"
    assert argv[argv.index("--out") + 1] == "OUT"


def test_only_picks_pairs_by_pattern_task_or_learner():
    suite = builtin.load_suite(TINY)
    assert [p.name for p in execute.select(suite, ["spread/*"])] == ["spread/iql", "spread/vdn"]
    assert [p.name for p in execute.select(suite, ["vdn"])] == ["spread/vdn", "stag_hunt/vdn"]
    assert [p.name for p in execute.select(suite, ["stag_hunt/vdn", "spread/iql"])] == [
        "spread/iql", "stag_hunt/vdn"]
    with pytest.raises(ValueError, match="--only 'nope' picks no pair"):
        execute.select(suite, ["nope"])


@pytest.mark.parametrize("name", ["jaxmarl-minimal", "papers"])
def test_the_built_in_suites_name_learners_of_known_families(name):
    """The structure of each built-in suite; learners not registered yet (built elsewhere:
    MAPPO, recurrent PPO) are checked in full only when the suite runs."""
    suite = builtin.BUILT_IN[name]()
    every = suites.pairs(suite)
    assert len({p.name for p in every}) == len(every)
    for learner in suite.learners:
        assert learner.algo in registered_algos() + ("mappo",)
    known = [p for p in every if p.learner.algo in registered_algos()]
    assert known


def test_jaxmarl_minimal_is_jaxmarls_set_with_our_learners():
    suite = builtin.jaxmarl_minimal()
    assert suite.seeds == 10
    assert {t.env_steps for t in suite.tasks} == {10_000_000}
    by_task = {t.name: [p.learner.jaxmarl for p in suites.pairs(suite) if p.task is t]
               for t in suite.tasks}
    assert by_task["spread"] == ["ippo_ff", "mappo_rnn", "qmix_rnn", "vdn_rnn", "vdn_ff"]
    assert by_task["2s3z"] == ["ippo_rnn", "mappo_rnn", "qmix_rnn", "vdn_rnn"]
    assert by_task["hanabi_2p"] == ["ippo_ff", "mappo_ff"]
    assert len(suites.pairs(suite)) == 15 + 16 + 2 + 2


def test_the_smax_suite_has_every_map():
    pytest.importorskip("jaxmarl")
    from jaxmarl.environments.smax.smax_env import MAP_NAME_TO_SCENARIO

    assert [t.name for t in builtin.smax().tasks] == list(MAP_NAME_TO_SCENARIO)
