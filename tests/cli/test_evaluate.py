"""experiments.evaluate on tiny runs of an actor-critic and a recurrent value learner: the
evaluation's fields, its agreement with the run's own evaluation and baselines, rendering,
one-line errors; and the marl-eval export of experiments.run and experiments.evaluate."""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from jaxmarl_accel.cli import evaluate, run
from jaxmarl_accel.runs import marl_eval, outputs
from tests.cli.test_run import TINY, cache_hits, compile_cache_restored  # noqa: F401

# one worker computes the module's fixtures and the session's tiny_run (tests/conftest.py),
# which tests/cli/test_run.py reads too
pytestmark = pytest.mark.xdist_group("run")

STAG_TINY = ["--env", "stag_hunt", "--agents", "4", "--seeds", "2", "--algo", "qmix",
             "--env-kwargs", "num_stags=2,grid_size=5,episode_length=10", "--hidden", "8",
             "--mixer-embed", "4", "--hypernet-hidden", "8", "--buffer-capacity", "16",
             "--batch-size", "4", "--num-envs", "2", "--eval-every", "100",
             "--total-env-steps", "200", "--eval-episodes", "2", "--baseline-episodes", "16",
             "--quiet"]
RUNS = {"matd3": TINY, "qmix": STAG_TINY}
"""The runs evaluated; ``matd3``'s is the session's ``tiny_run`` (``TINY`` with ``--render``)."""
EPISODES = 32


@pytest.fixture(scope="module")
def trained(tiny_run, tmp_path_factory):
    """One finished tiny run per learner, never written to by the tests."""
    out = str(tmp_path_factory.mktemp("qmix") / "run")
    assert run.main([*RUNS["qmix"], "--out", out]) == 0
    return {"matd3": tiny_run[0], "qmix": out}


@pytest.fixture(scope="module")
def evaluated(trained, tmp_path_factory):
    """Each run copied and evaluated with the defaults but ``--episodes``: the copy, its
    listing and file contents before the evaluation, and the evaluation."""
    done = {}
    for name, source in trained.items():
        folder = str(tmp_path_factory.mktemp(f"{name}-evaluated") / "run")
        shutil.copytree(source, folder)
        before = snapshot(folder)
        assert evaluate.main([folder, "--episodes", str(EPISODES)]) == 0
        done[name] = (folder, before, read_json(folder, outputs.EVALUATION_NAME))
    return done


def snapshot(folder: str) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes."""
    return {str(path.relative_to(folder)): path.read_bytes()
            for path in sorted(Path(folder).rglob("*")) if path.is_file()}


def read_json(folder: str, name: str):
    return json.loads(Path(folder, name).read_text())


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def exit_code(argv: list[str]) -> int:
    try:
        return evaluate.main(argv)
    except SystemExit as exit_info:
        return exit_info.code


def test_help_documents_every_flag(capsys):
    assert exit_code(["--help"]) == 0
    text = capsys.readouterr().out
    for flag in ("RUN_DIR", "--checkpoint STEP", "--episodes", "--render", "--out PATH",
                 "--marl-eval PATH", "--compile-cache DIR"):
        assert flag in text
    assert "``" not in text and "normalized score" in text


@pytest.mark.parametrize("name", list(RUNS))
def test_evaluation_fields_agree_with_the_run(name, trained, evaluated):
    folder, before, result = evaluated[name]
    summary = read_json(trained[name], outputs.SUMMARY_NAME)
    rows = outputs.read_rows(trained[name])
    last = max(int(r["chunk"]) for r in rows)
    assert (result["checkpoint"], result["episodes"], result["seeds"]) == (last, EPISODES, 2)
    assert (result["env"], result["algo"]) == (summary["env"], summary["algo"])
    assert result["env_steps_per_seed"] == [r["env_steps"] for r in rows if r["chunk"] == last]
    episodes = np.asarray(result["episode_return_per_seed"])
    assert episodes.shape == (2, EPISODES) and np.all(np.isfinite(episodes))
    np.testing.assert_allclose(result["final_eval_return_per_seed"], episodes.mean(axis=1),
                               rtol=1e-5, atol=1e-6)
    assert result["mean_return"] == pytest.approx(episodes.mean(), rel=1e-5, abs=1e-6)
    # the baselines are the summary's: the same episodes and key
    for key in ("random_return", "scripted_return", "random_return_per_team",
                "scripted_return_per_team", "random_return_se", "scripted_return_se"):
        assert result[key] == pytest.approx(summary[key], rel=1e-6, abs=1e-9), key
    span = result["scripted_return"] - result["random_return"]
    if abs(span) > 1e-9:
        expected = (episodes.mean(axis=1) - result["random_return"]) / span
        np.testing.assert_allclose(result["normalized_score_per_seed"], expected, rtol=1e-5)
        assert np.isfinite(result["median_normalized_score"])
    # the run's own (noisy, --eval-episodes) evaluation of the same policies agrees
    assert result["run_eval_return_per_seed"] == pytest.approx(
        summary["final_eval_return_per_seed"])
    run_episodes = result["run_eval_episodes"]
    for seed in range(2):
        spread = episodes[seed].std() * np.sqrt(1 / run_episodes + 1 / EPISODES)
        gap = abs(episodes[seed].mean() - result["run_eval_return_per_seed"][seed])
        assert gap <= 5 * spread + 1e-4, (seed, gap, spread)
    # nothing of the run changed but the marl-eval export, the evaluation was added
    after = snapshot(folder)
    assert set(after) == set(before) | {outputs.EVALUATION_NAME}
    assert {k: v for k, v in after.items() if k not in (outputs.EVALUATION_NAME,
                                                        outputs.MARL_EVAL_NAME)} == {
        k: v for k, v in before.items() if k != outputs.MARL_EVAL_NAME}


def test_stag_hunt_captures_are_reported_with_their_baselines(trained, evaluated):
    _, _, result = evaluated["qmix"]
    summary = read_json(trained["qmix"], outputs.SUMMARY_NAME)
    captures = result["captures_per_episode_per_seed"]
    assert len(captures) == 2 and all(c >= 0 for c in captures)
    for who in ("random", "scripted"):
        assert result[f"{who}_captures_per_episode"] == pytest.approx(
            summary[f"{who}_captures_per_episode"])
    assert summary["scripted_captures_per_episode"] > 0  # the scripted team does capture


@pytest.mark.parametrize("name", list(RUNS))
def test_the_run_writes_a_marl_eval_export_of_its_metrics(name, trained):
    data = read_json(trained[name], outputs.MARL_EVAL_NAME)
    marl_eval.validate(data)
    rows = outputs.read_rows(trained[name])
    env = {"matd3": "mpe", "qmix": "stag_hunt"}[name]
    task = {"matd3": "simple_spread_3ag",
            "qmix": "stag_hunt_4ag_episode_length=10_grid_size=5_num_stags=2"}[name]
    runs = data[env][task][name]
    assert sorted(runs) == ["seed_0", "seed_1"]
    for seed in range(2):
        own = [r for r in rows if r["seed"] == seed]
        steps = runs[f"seed_{seed}"]
        assert [steps[f"step_{r['chunk']}"]["step_count"] for r in own] == [
            r["env_steps"] for r in own]
        assert [steps[f"step_{r['chunk']}"]["return"] for r in own] == [
            [r["eval_return"]] for r in own]
        assert steps["absolute_metrics"]["return"] == [own[-1]["eval_return"]]
        if name == "qmix":
            assert steps["absolute_metrics"]["captures"] == [own[-1]["eval_captures"]]


@pytest.mark.parametrize("name", list(RUNS))
def test_the_evaluation_replaces_the_absolute_metrics_with_its_episodes(name, trained,
                                                                        evaluated):
    folder, _, result = evaluated[name]
    data = read_json(folder, outputs.MARL_EVAL_NAME)
    marl_eval.validate(data)
    own = read_json(trained[name], outputs.MARL_EVAL_NAME)
    (env, tasks), = data.items()
    (task, algos), = tasks.items()
    for seed in range(2):
        runs, original = algos[name][f"seed_{seed}"], own[env][task][name][f"seed_{seed}"]
        absolute = runs.pop("absolute_metrics")
        original.pop("absolute_metrics")
        assert runs == original  # the learning curve is the run's
        np.testing.assert_allclose(absolute["return"], result["episode_return_per_seed"][seed],
                                   rtol=1e-6)
        assert all(len(values) == EPISODES for values in absolute.values())


def test_marl_eval_library_reads_the_exports(trained, evaluated):
    utils = pytest.importorskip("marl_eval.utils.data_processing_utils")
    for name, env in (("matd3", "mpe"), ("qmix", "stag_hunt")):
        for folder in (trained[name], evaluated[name][0]):
            raw = read_json(folder, outputs.MARL_EVAL_NAME)
            processed = utils.data_process_pipeline(raw, metrics_to_normalize=["return"])
            assert processed["extra"]["number_of_runs"] == 2
            scores, curves = utils.create_matrices_for_rliable(processed, env, ["return"])
            assert scores["mean_norm_return"][name].shape == (2, 1)


def test_a_chosen_checkpoint_renders_beside_out_and_evaluation_is_repeatable(
        trained, evaluated, tmp_path, capsys):
    source = trained["matd3"]
    before = snapshot(source)
    out = str(tmp_path / "elsewhere" / "final.json")
    assert evaluate.main([source, "--checkpoint", "2", "--episodes", str(EPISODES), "--out", out,
                          "--marl-eval", "none", "--render"]) == 0
    assert "checkpoint 2: mean return" in capsys.readouterr().err.splitlines()[-1]
    assert snapshot(source) == before  # --out elsewhere, no export: the run is untouched
    assert sorted(os.listdir(tmp_path / "elsewhere")) == ["final.gif", "final.json", "final.png"]
    with Image.open(tmp_path / "elsewhere" / "final.gif") as gif:
        assert gif.n_frames == 25
    again, first = json.loads(Path(out).read_text()), evaluated["matd3"][2]
    assert again["episode_return_per_seed"] == first["episode_return_per_seed"]
    earlier = str(tmp_path / "earlier.json")  # as many episodes: the same programs
    assert evaluate.main([source, "--checkpoint", "1", "--episodes", str(EPISODES),
                          "--out", earlier, "--marl-eval", "none"]) == 0
    result = json.loads(Path(earlier).read_text())
    assert (result["checkpoint"], result["env_steps_per_seed"]) == (1, [400, 400])


def test_a_second_evaluation_loads_its_programs_from_the_compile_cache(
        trained, tmp_path, compile_cache_restored):  # noqa: F811 (the fixture)
    cache = str(tmp_path / "xla_cache")
    argv = [trained["qmix"], "--episodes", "4", "--marl-eval", "none", "--compile-cache", cache]
    assert evaluate.main([*argv, "--out", str(tmp_path / "first.json")]) == 0
    assert os.listdir(cache)  # the evaluation's programs were stored
    with cache_hits() as hits:
        assert evaluate.main([*argv, "--out", str(tmp_path / "second.json")]) == 0
    assert hits  # and loaded, not compiled again
    first, second = (json.loads(Path(tmp_path, name).read_text())
                     for name in ("first.json", "second.json"))
    assert first["episode_return_per_seed"] == second["episode_return_per_seed"]


@pytest.fixture()
def broken_runs(trained, tmp_path):
    """Folders that cannot be evaluated, by name."""
    source = trained["matd3"]
    no_checkpoints = tmp_path / "no_checkpoints"
    no_checkpoints.mkdir()
    shutil.copy(os.path.join(source, outputs.CONFIG_NAME), no_checkpoints)
    empty_checkpoints = tmp_path / "empty_checkpoints"
    shutil.copytree(no_checkpoints, empty_checkpoints)
    (empty_checkpoints / outputs.CHECKPOINTS_NAME).mkdir()
    corrupt = tmp_path / "corrupt"
    shutil.copytree(source, corrupt)
    Path(corrupt, "checkpoints", "2", "checkpoint.json").write_text("")
    (tmp_path / "not_a_run").mkdir()
    return {"source": source, "no_checkpoints": str(no_checkpoints),
            "empty_checkpoints": str(empty_checkpoints), "corrupt": str(corrupt),
            "not_a_run": str(tmp_path / "not_a_run"), "missing": str(tmp_path / "missing")}


@pytest.mark.parametrize("folder, flags, message", [
    ("not_a_run", [], "RUN_DIR {not_a_run} is not a run folder (no config.json)"),
    ("missing", [], "RUN_DIR {missing} does not exist"),
    ("no_checkpoints", [], "{no_checkpoints} holds no checkpoints (no checkpoints/)"),
    ("empty_checkpoints", [], "{empty_checkpoints}/checkpoints holds no checkpoints"),
    ("source", ["--checkpoint", "7"], "--checkpoint 7: {source}/checkpoints holds checkpoint(s) "
                                      "1, 2"),
    ("corrupt", [], "the checkpoint after chunk 2 ({corrupt}/checkpoints/2) cannot be restored"),
    ("source", ["--episodes", "0"], "--episodes must be >= 1, got 0"),
    ("source", ["--checkpoint", "-1"], "--checkpoint must be >= 0, got -1"),
    ("source", ["--checkpoint", "last"], "expected an integer"),
    ("source", ["--compile-cache", "{source}/config.json"],
     "--compile-cache {source}/config.json: not a folder this process can create"),
])
def test_what_cannot_be_evaluated_is_one_line(folder, flags, message, broken_runs, capsys):
    path = broken_runs[folder]
    flags = [flag.format(**broken_runs) for flag in flags]
    assert exit_code([path, *flags, "--out", os.path.join(str(Path(path).parent), "e.json")]) == 2
    line = one_line(capsys.readouterr().err)
    assert message.format(**broken_runs) in line
    assert not os.path.exists(os.path.join(path, outputs.EVALUATION_NAME))


def valid_export() -> dict:
    run_data = {"step_0": {"step_count": 100, "return": [1.0], "captures": [0.0]},
                "step_1": {"step_count": 200, "return": [2.0], "captures": [1.0]},
                "absolute_metrics": {"return": [2.0, 3.0], "captures": [1.0, 2.0]}}
    return {"stag_hunt": {"task": {"qmix": {"seed_0": run_data,
                                            "seed_1": copy.deepcopy(run_data)}}}}


def broken(change) -> dict:
    data = valid_export()
    change(data["stag_hunt"]["task"]["qmix"])
    return data


@pytest.mark.parametrize("data, message", [
    ({}, "the top level: expected a non-empty dictionary"),
    ({"mpe": {"task": {"qmix": []}}}, "mpe/task/qmix: expected a non-empty dictionary"),
    ({"mpe": {"task": {"a,b": valid_export()["stag_hunt"]["task"]["qmix"]}}},
     "mpe/task/a,b: marl-eval refuses a comma"),
    (broken(lambda runs: runs["seed_1"].pop("absolute_metrics")), "seed_1: no absolute_metrics"),
    (broken(lambda runs: runs["seed_1"].pop("step_1")), "seed_1: steps ['step_0'] differ"),
    (broken(lambda runs: runs["seed_0"]["step_1"].update(step_count=100)),
     "seed_0/step_1: step_count must be an integer above the previous step's, got 100"),
    (broken(lambda runs: runs["seed_0"]["step_1"].update(step_count=200.0)),
     "step_count must be an integer"),
    (broken(lambda runs: runs["seed_0"]["absolute_metrics"].pop("captures")),
     "seed_0/absolute_metrics: metrics ['return'] differ from ['captures', 'return']"),
    (broken(lambda runs: runs["seed_1"]["step_0"].update(captures=[])),
     "seed_1/step_0/captures: expected a non-empty list of finite numbers"),
    (broken(lambda runs: runs["seed_1"]["step_0"].update(captures=[float("nan")])),
     "expected a non-empty list of finite numbers"),
    (broken(lambda runs: runs.update(SEED_0=runs["seed_0"])), "collide once lower-cased"),
])
def test_the_schema_check_names_what_departs_from_marl_eval_format(data, message):
    marl_eval.validate(valid_export())
    with pytest.raises(ValueError, match=None) as info:
        marl_eval.validate(data)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_marl_eval_rows_of_a_run_recorded_before_a_counter_existed():
    from jaxmarl_accel.runs.marl_eval import row_metrics

    row = {"eval_return": "1.5", "eval_tags": "3"}  # no eval_steps_before_first_tag column
    metrics = row_metrics(row, ("tags", "steps_before_first_tag"))
    assert metrics["tags"] == [3.0] and "steps_before_first_tag" not in metrics
