"""The run CLI: flags, outputs, output folders, resume (exact, and past a corrupt checkpoint),
one-line errors, and stopping on non-finite values."""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import jax
import numpy as np
import pytest
from PIL import Image

from jaxmarl_accel.algos import ValueConfig
from jaxmarl_accel.cli import run
from jaxmarl_accel.runs import host_loop, outputs, progress, run_store
from tests.runs.test_checkpoint import read_arrays

pytestmark = pytest.mark.xdist_group("run")  # one worker computes the module's fixtures

TIMING = ("compile_s", "train_s_this_process", "train_s_all_processes")
"""The summary entries that measure time (all others are numbers of the run)."""
TINY = ["--env", "simple_spread", "--agents", "3", "--seeds", "2", "--algo", "matd3",
        "--hidden-sizes", "16", "16", "--buffer-capacity", "1000", "--batch-size", "32",
        "--num-envs", "5", "--update-every", "50", "--learning-starts", "100",
        "--eval-every", "200", "--total-env-steps", "600", "--eval-episodes", "4",
        "--baseline-episodes", "16", "--quiet"]


def restore_params(out_dir: str, step: int, everything: bool = False):
    restored = read_arrays(os.path.join(out_dir, "checkpoints"), step)
    if everything:
        return restored
    return {name: value for name, value in restored.items() if name.startswith(".algo")}


@pytest.fixture
def finished_run(tiny_run):
    """The session's finished ``TINY`` run with ``--render`` (``tests/conftest.py``)."""
    return tiny_run[0]


def exit_code(argv: list[str]) -> int:
    """``run.main``'s exit status, whether it returns it or exits through argparse."""
    try:
        return run.main(argv)
    except SystemExit as exit_info:
        return exit_info.code


def one_line(err: str) -> str:
    """The single line on stderr (fails on more, or on a traceback)."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_help_documents_every_flag(capsys):
    assert exit_code(["--help"]) == 0
    text = capsys.readouterr().out
    for flag in ("--algo", "--sampler", "--layout", "--index-sharing", "--prey", "--learners",
                 "--actor-lr", "--policy-delay", "--alpha", "--total-env-steps", "--resume",
                 "--overwrite", "--render", "--seeds", "--hidden-sizes"):
        assert flag in text
    assert "``" not in text and ":data:" not in text and ":class:" not in text
    assert "--straight-through {true,false}" in text  # every flag with choices lists them
    assert "--total-env-steps and --eval-every are multiples of the env steps per round" in text


def test_help_opens_with_the_options_set_first_and_ends_with_multi_host():
    text = run.build_parser().format_help()
    assert text.splitlines()[0].startswith("usage: jaxmarl-accel run [--env ENV] [--algo ALGO]")
    first = text.index("main options")
    order = [text.index(f"\n  {flag} ", first) for flag in
             ("--env", "--algo", "--total-env-steps", "--seeds", "--eval-every", "--out",
              "--resume")]
    assert order == sorted(order) and order[-1] < text.index("\nrun:")
    assert text.index("multi-host (jax.distributed)") > text.index("on-policy learners")
    assert text.count("\n  --env ") == 1  # each flag once


@pytest.mark.parametrize("argv, message", [
    (["--algo", "dqn"], "invalid choice"),
    (["--batch-size", "0"], "--batch-size must be >= 1"),
    (["--seeds", "0"], "--seeds must be >= 1"),
    (["--agents", "0"], "--agents must be >= 1, got 0"),
    (["--gamma", "2"], "--gamma must lie in [0, 1]"),
    (["--env-kwargs", "oops"], "expected name=value"),
    (["--env-kwargs", "num_agent=4"], "simple_spread takes no num_agent; its keywords are"),
    (["--total-env-steps", "60050"], "--total-env-steps (60050) must be a multiple of the env "
                                     "steps per round (100 = max(--num-envs, --update-every))"),
    (["--buffer-capacity", "1.5"], "expected an integer such as 1000000 or 1e6"),
    (["--env", "simple_push", "--agents", "3"], "set num_good and num_adversaries"),
    (["--env", "simple_adversary", "--agents", "3"], "set num_good and num_adversaries"),
    (["--env", "simple_speaker_listener", "--agents", "3"], "always has 2 agents"),
    (["--env", "simple_reference", "--agents", "3"], "always has 2 agents"),
    (["--env", "tag_gridworld", "--agents", "4"], "--agents 4: tag_gridworld keeps its 4 taggers"),
    (["--env", "tag_continuous", "--agents", "3", "--env-kwargs", "num_taggers=3"],
     "needs at least one of num_runners"),
    (["--resume", "somewhere", "--overwrite"], "exclude each other"),
    (["--env", "simple_tag", "--algo", "owqmix"],
     "--env: algo 'owqmix' mixes Q_tot and Q* over the global state; simple_tag has none"),
    (["--env", "simple_spread", "--algo", "qmix", "--env-kwargs", "continuous_actions=True"],
     "algo 'qmix' needs discrete actions"),
    (["--env", "stag_hunt", "--algo", "accmer", "--sampler", "uniform"],
     "--sampler 'uniform': algo 'accmer' draws AccMER's reused and fresh sets with the 'reuse' "
     "sampler, or 'reuse_block'; use --sampler reuse"),
    (["--env", "stag_hunt", "--algo", "accmer", "--sampler-kwargs", "loss_weights=table"],
     "loss_weights='table': algo 'accmer' weights its loss by MAC-PO's weights itself"),
    (["--env", "stag_hunt", "--algo", "macpo", "--macpo-normalization", "softmax"],
     "invalid choice"),
    (["--env", "stag_hunt", "--algo", "macpo", "--macpo-floor", "2"],
     "--macpo-floor must lie in [0, 1]"),
])
def test_bad_flags_give_one_line_errors(argv, message, capsys):
    assert exit_code(argv) == 2
    line = one_line(capsys.readouterr().err)
    assert message in line
    assert line.endswith("; see --help") and "usage:" not in line


def test_flags_accept_the_readme_notation_and_agents_where_they_fit():
    parser = run.build_parser()
    args = parser.parse_args(["--buffer-capacity", "1e6", "--total-env-steps", "1_500_000"])
    config = run.config_from_args(args)
    assert (config.buffer_capacity, config.total_env_steps) == (1_000_000, 1_500_000)
    tag = run.config_from_args(parser.parse_args(["--env", "simple_tag", "--agents", "4"]))
    assert dict(tag.env_kwargs) == {"num_predators": 4}
    fig10 = parser.parse_args(["--env", "tag_continuous", "--agents", "12",
                               "--env-kwargs", "num_taggers=2"])
    assert dict(run.config_from_args(fig10).env_kwargs) == {"num_taggers": 2, "num_runners": 10}
    grid = run.config_from_args(parser.parse_args(["--env", "tag_gridworld", "--agents", "9"]))
    assert dict(grid.env_kwargs) == {"num_runners": 5}  # the default 4 taggers stay
    listener = parser.parse_args(["--env", "simple_speaker_listener", "--agents", "2"])
    assert run.config_from_args(listener).env_kwargs == ()


def test_a_compile_cache_that_is_a_file_is_one_line(tmp_path, capsys):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert run.main([*TINY, "--out", str(tmp_path / "out"), "--compile-cache", str(a_file)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: --compile-cache ")
    assert not (tmp_path / "out").exists()


def test_output_folder_problems_are_one_line(tmp_path, capsys):
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    assert run.main([*TINY, "--out", str(a_file)]) == 2
    assert "is a file, not a folder" in one_line(capsys.readouterr().err)
    assert run.main([*TINY, "--out", str(a_file / "sub")]) == 2
    assert "cannot be created" in one_line(capsys.readouterr().err)
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        assert run.main([*TINY, "--out", str(locked)]) == 2
        assert "is not writable" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("content, message", [
    (None, "holds no run to resume (no config.json)"),
    ("{", "cannot be read"),
    ('{"train": {}}', "lacks seeds, seed, baseline_episodes, render, checkpoint_every"),
])
def test_unresumable_folders_are_one_line(content, message, tmp_path, capsys):
    if content is not None:
        (tmp_path / "config.json").write_text(content)
    assert run.main(["--resume", str(tmp_path)]) == 2
    assert message in one_line(capsys.readouterr().err)


def test_outputs(finished_run):
    for name in ("config.json", "metrics.csv", "summary.json", "learning_curve.png",
                 "episode.gif", "episode.png"):
        assert os.path.getsize(os.path.join(finished_run, name)) > 0, name
    with open(os.path.join(finished_run, "summary.json")) as handle:
        summary = json.load(handle)
    assert len(summary["final_eval_return_per_seed"]) == 2
    assert summary["scripted_return"] > summary["random_return"]
    assert np.isfinite(summary["median_normalized_score"])
    lines = Path(finished_run, "metrics.csv").read_text().strip().splitlines()
    assert len(lines) == 1 + 3 * 2  # header + chunks x seeds


def test_the_curve_is_titled_with_the_algo_env_and_seeds(tiny_run):
    _, titles = tiny_run
    assert titles == ["matd3 on simple_spread (2 seeds)"]


def assert_same_outputs(expected: str, got: str, last: int = 2) -> None:
    """Every output file of two run folders byte for byte (the summary without its timings)
    and the parameters of the final checkpoint (after chunk ``last``)."""
    names = sorted(os.listdir(expected))
    assert sorted(os.listdir(got)) == names
    for name in names:
        if name in ("checkpoints", outputs.CHUNK_SECONDS_NAME):
            continue
        want, have = Path(expected, name).read_bytes(), Path(got, name).read_bytes()
        if name == "summary.json":
            want, have = (json.loads(text) for text in (want, have))
            for timing in TIMING:
                want.pop(timing), have.pop(timing)
        assert want == have, name
    final, resumed = restore_params(expected, last), restore_params(got, last)
    assert final.keys() == resumed.keys() and len(final) > 4
    for name, value in final.items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(resumed[name]), err_msg=name)


def interrupt_after_chunk_1(monkeypatch) -> None:
    """Make a TINY run raise KeyboardInterrupt once chunk 1 (400 env steps) is done."""
    real_update = progress.ProgressBar.update

    def update(bar, steps, *args, **kwargs):
        real_update(bar, steps, *args, **kwargs)
        if steps == 400:
            raise KeyboardInterrupt

    monkeypatch.setattr(progress.ProgressBar, "update", update)


def test_interrupted_and_resumed_run_writes_the_same_files(finished_run, monkeypatch, tmp_path,
                                                           capsys):
    """Ctrl-C right after the checkpoint of chunk 1: one line saying how to resume; the
    resumed run (no flags but --resume) then leaves the files of the uninterrupted run."""
    out = str(tmp_path / "interrupted")
    interrupt_after_chunk_1(monkeypatch)
    assert run.main([*TINY, "--out", out, "--render"]) == 130
    assert one_line(capsys.readouterr().err) == (
        f"interrupted; continue with: jaxmarl-accel run --resume {out}")
    assert sorted(os.listdir(os.path.join(out, "checkpoints"))) == ["0", "1"]
    monkeypatch.undo()
    before = outputs.read_chunk_seconds(out)
    assert sorted(before) == [0, 1] and min(before.values()) > 0
    assert run.main(["--resume", out, "--quiet"]) == 0
    assert_same_outputs(finished_run, out)
    after = outputs.read_chunk_seconds(out)  # chunks 0 and 1 from the first process
    assert sorted(after) == [0, 1, 2] and {k: after[k] for k in (0, 1)} == before
    summary = json.loads(Path(out, "summary.json").read_text())
    assert summary["train_s_all_processes"] == pytest.approx(sum(after.values()), abs=1e-2)
    assert summary["train_s_all_processes"] > after[2]  # the first process's chunks count


@pytest.mark.parametrize("damage", ["truncated data", "empty index", "no orbax data"])
@pytest.mark.fast_cases(1)
def test_resume_skips_a_corrupt_latest_checkpoint(finished_run, damage, tmp_path, capsys):
    out = str(tmp_path / "corrupt")
    shutil.copytree(finished_run, out)
    latest = os.path.join(out, "checkpoints", "2")
    if damage == "truncated data":
        for path in glob.glob(os.path.join(latest, "replay", "*.bin")):
            os.truncate(path, os.path.getsize(path) // 2)
    elif damage == "empty index":
        Path(latest, "checkpoint.json").write_text("")
    else:  # the learners' orbax data gone, its metadata kept
        for path in glob.glob(os.path.join(latest, "state", "**", "*"), recursive=True):
            if os.path.isfile(path) and not os.path.basename(path).startswith("_"):
                os.remove(path)
    assert run.main(["--resume", out, "--quiet"]) == 0
    warning = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warning) == 1 and f"skipping the checkpoint after chunk 2 ({latest})" in warning[0]
    assert_same_outputs(finished_run, out)


def test_resume_fails_in_one_line_when_no_checkpoint_restores(finished_run, tmp_path, capsys):
    out = str(tmp_path / "corrupt")
    shutil.copytree(finished_run, out)
    for step in ("1", "2"):
        Path(out, "checkpoints", step, "checkpoint.json").write_text("")
    assert run.main(["--resume", out, "--quiet"]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert lines == [lines[0]] and f"no checkpoint in {out}/checkpoints can be restored" in lines[0]


def nothing_compiles(monkeypatch) -> None:
    """Make compiling (or training) a chunk fail the test."""
    def compiled(function, *args):
        raise AssertionError("a chunk was compiled")

    monkeypatch.setattr(host_loop, "interruptible", compiled)


def test_a_finished_run_resumed_says_so_and_does_nothing(finished_run, tmp_path, capsys,
                                                        monkeypatch):
    out = str(tmp_path / "finished")
    shutil.copytree(finished_run, out)
    names = ("summary.json", "metrics.csv", "config.json", "learning_curve.png")
    before = {name: Path(out, name).read_bytes() for name in names}
    nothing_compiles(monkeypatch)
    assert run.main([*TINY, "--resume", out]) == 0  # its own command, with --resume
    assert one_line(capsys.readouterr().err) == (
        f"{out} is finished (600 env steps per seed; summary.json holds its results); nothing "
        "to do: to train it further, give --total-env-steps larger than 600 beside --resume")
    assert {name: Path(out, name).read_bytes() for name in names} == before


@pytest.mark.parametrize("flags, message", [
    (["--batch-size", "64"], "--batch-size asks for 64, the run has 32: --resume continues"),
    (["--agents", "4"], "--agents asks for num_agents=4, the run has num_agents=3"),
    (["--seeds", "3"], "--seeds asks for 3, the run has 2"),
    (["--total-env-steps", "400"], "--total-env-steps 400 is below the budget"),
    (["--sweep", "critic_lr=0.1,0.2"], "--sweep: --resume continues"),
])
def test_resume_refuses_a_changed_flag_in_one_line(finished_run, flags, message, capsys,
                                                  monkeypatch):
    nothing_compiles(monkeypatch)
    assert exit_code(["--resume", finished_run, *flags]) == 2
    assert message in one_line(capsys.readouterr().err)


def test_damaged_checkpoints_are_found_before_compiling(finished_run, tmp_path, capsys,
                                                       monkeypatch):
    """Learner files of the same size with other bytes: no orbax restore is tried (its failed
    restore printed tracebacks from its asynchronous reads after the error)."""
    out = str(tmp_path / "damaged")
    shutil.copytree(finished_run, out)
    for path in glob.glob(os.path.join(out, "checkpoints", "*", "state", "**", "*"),
                          recursive=True):
        if os.path.isfile(path) and not os.path.basename(path).startswith("_"):
            data = Path(path).read_bytes()
            Path(path).write_bytes(bytes(255 - b for b in data[:16]) + data[16:])
    nothing_compiles(monkeypatch)
    assert run.main(["--resume", out, "--quiet"]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and f"no checkpoint in {out}/checkpoints can be restored" in errors[0]
    assert "holds other bytes than were written" in errors[0] and "Traceback" not in err


def test_an_internal_failure_names_its_phase_and_keeps_its_traceback(tmp_path, capsys,
                                                                    monkeypatch):
    def broken(function, *args):
        raise ValueError("index can't contain negative values")

    monkeypatch.setattr(host_loop, "interruptible", broken)
    out = str(tmp_path / "broken")
    assert run.main([*TINY, "--out", out]) == 3  # not 2: the input is not at fault
    line = one_line(capsys.readouterr().err)
    assert line == (f"error: internal failure while compiling the training program (ValueError: "
                    f"index can't contain negative values); this is not a problem with the "
                    f"flags: the traceback is in {out}/error.txt; please report it")
    saved = Path(out, "error.txt").read_text()
    assert saved.startswith("phase: compiling the training program") and "Traceback" in saved
    assert outputs.run_entries(out) == []  # the folder holds no run: the next one may use it


@pytest.mark.slow
def test_a_larger_budget_extends_a_run_as_a_run_given_it_would_have_gone_on(
        finished_run, tmp_path, capsys):
    longer = str(tmp_path / "longer")
    assert run.main([*TINY, "--out", longer, "--render", "--total-env-steps", "1000"]) == 0
    out = str(tmp_path / "extended")
    shutil.copytree(finished_run, out)
    capsys.readouterr()
    assert run.main(["--resume", out, "--total-env-steps", "1000"]) == 0
    assert (f"note: extending {out} from 600 to 1,000 env steps per seed (chunks 3 to 4)"
            in capsys.readouterr().err)
    assert_same_outputs(longer, out, last=4)


@pytest.mark.slow
def test_resume_refuses_a_checkpoint_of_another_config(finished_run, tmp_path, capsys):
    out = str(tmp_path / "other")
    shutil.copytree(finished_run, out)
    path = Path(out, "config.json")
    record = json.loads(path.read_text())
    record["train"]["buffer_capacity"] = 2000
    path.write_text(json.dumps(record))
    assert run.main(["--resume", out, "--quiet"]) == 2
    assert "does not match the config.json beside it" in one_line(capsys.readouterr().err)


def test_a_folder_holding_a_run_is_refused_unless_overwritten(finished_run, tmp_path, capsys,
                                                               monkeypatch):
    """The refusal comes before any program is compiled (the trainer, built once by the
    command, is set up only). The second run also ends mid-chunk (500 steps, evaluations
    every 200) and before its first update: it is warned about and marked in the summary."""
    out = str(tmp_path / "reused")
    shutil.copytree(finished_run, out)
    before = {name: Path(out, name).read_bytes() for name in ("config.json", "summary.json")}
    shorter = [*TINY, "--out", out, "--total-env-steps", "500", "--learning-starts", "800"]
    monkeypatch.setattr(host_loop, "make_sharded_trainer",
                        lambda *_, **__: pytest.fail("the program was built before the refusal"))
    assert run.main(shorter) == 2
    monkeypatch.undo()
    line = one_line(capsys.readouterr().err)
    assert f"--out {out} holds a run already" in line and "--overwrite" in line
    assert {name: Path(out, name).read_bytes() for name in before} == before
    assert run.main([*shorter, "--overwrite"]) == 0
    assert "warning: the run ends at 500 env steps per seed, before the first update" in (
        capsys.readouterr().err)
    assert not os.path.exists(os.path.join(out, "episode.gif"))  # the old run's, removed
    assert sorted(os.listdir(os.path.join(out, "checkpoints"))) == ["1", "2"]
    rows = Path(out, "metrics.csv").read_text().strip().splitlines()
    assert [row.split(",")[2] for row in rows[1:]] == ["200", "200", "400", "400", "500", "500"]
    summary = json.loads(Path(out, "summary.json").read_text())
    assert summary["env_steps_per_seed"] == 500 and summary["updates_per_seed"] == [0, 0]
    assert "never trained" in summary["warning"]


def test_gif_plays_at_the_intended_rate(finished_run):
    with Image.open(os.path.join(finished_run, "episode.gif")) as gif:
        assert gif.n_frames == 25
        assert 100 <= gif.info["duration"] <= 150  # 8 frames per second, in milliseconds


def test_a_non_finite_metric_stops_the_run(monkeypatch, tmp_path, capsys):
    """NaN in chunk 1's metrics as the host fetches them (the program is TINY's own, compiled
    already; the slow tier's test below makes a program that returns the NaN)."""
    real = host_loop.run_one_chunk

    def poisoned(compiled, state, chunk):
        state, metrics = real(compiled, state, chunk)
        bad = np.nan if chunk >= 1 else 0.0
        return state, metrics._replace(eval_return=metrics.eval_return + bad)

    monkeypatch.setattr(host_loop, "run_one_chunk", poisoned)
    assert_stopped_after_chunk_0(str(tmp_path / "nan"), capsys)


def assert_stopped_after_chunk_0(out, capsys):
    """TINY's run into ``out``, whose eval_return turns NaN from chunk 1: exit 1, the seed
    named, chunk 0's checkpoint kept and no later one."""
    assert run.main([*TINY, "--out", out]) == 1
    err = capsys.readouterr().err
    assert "non-finite eval_return in seed 0" in err
    assert "checkpoint after chunk 0 kept" in err
    assert os.path.isdir(os.path.join(out, "checkpoints", "0"))
    assert not os.path.isdir(os.path.join(out, "checkpoints", "1"))


@pytest.mark.slow
def test_non_finite_metric_stops_the_run(monkeypatch, tmp_path, capsys):
    from jaxmarl_accel.trainer import train

    real = train.make_trainer

    def poisoned(config):
        trainer = real(config)

        def run_chunk(state, index):
            state, metrics = trainer.run_chunk(state, index)
            bad = jax.numpy.where(index >= 1, jax.numpy.nan, 0.0)
            return state, metrics._replace(eval_return=metrics.eval_return + bad)

        return trainer._replace(run_chunk=run_chunk)

    monkeypatch.setattr(train, "make_trainer", poisoned)  # the one trainer the command builds
    assert_stopped_after_chunk_0(str(tmp_path / "nan"), capsys)


def test_oversized_buffer_is_refused_before_compiling(capsys):
    code = run.main([*TINY, "--buffer-capacity", "2000000000", "--out", "/tmp/never"])
    assert code == 2
    assert "GiB" in capsys.readouterr().err


VALUE_TINY = ["--env", "simple_spread", "--agents", "3", "--seeds", "2", "--algo", "qmix",
              "--env-kwargs", "episode_length=10", "--hidden", "8", "--mixer-embed", "4",
              "--hypernet-hidden", "8", "--buffer-capacity", "16", "--batch-size", "4",
              "--num-envs", "2", "--eval-every", "100", "--total-env-steps", "200",
              "--eval-episodes", "2", "--baseline-episodes", "4", "--quiet"]


@pytest.fixture
def compile_cache_restored():
    """The suite's compilation cache folder, put back after a test that points it elsewhere."""
    from jax.experimental.compilation_cache import compilation_cache

    folder = jax.config.jax_compilation_cache_dir
    yield
    jax.config.update("jax_compilation_cache_dir", folder)
    compilation_cache.reset_cache()


@contextmanager
def cache_hits():
    """A list that collects JAX's persistent-cache hit events while the block runs."""
    hits = []

    def count_hits(event: str, **_) -> None:
        if event.endswith("/cache_hits"):
            hits.append(event)

    jax.monitoring.register_event_listener(count_hits)
    try:
        yield hits
    finally:
        jax.monitoring.unregister_event_listener(count_hits)


@pytest.mark.slow
def test_a_recurrent_value_learner_trains_from_the_cli_and_resumes_exactly(
        tmp_path, compile_cache_restored):
    out, cache = str(tmp_path / "qmix"), str(tmp_path / "xla_cache")
    assert run.main([*VALUE_TINY, "--out", out, "--compile-cache", cache]) == 0
    assert glob.glob(os.path.join(cache, "jit_run_chunk*"))  # the chunk program was stored
    config = json.loads(Path(out, "config.json").read_text())["train"]
    assert config["algo"] == "qmix" and config["learner"]["hidden"] == 8
    rows = Path(out, "metrics.csv").read_text().splitlines()
    assert len(rows) == 1 + 2 * 2  # header, 2 chunks x 2 seeds
    assert "td_error" in rows[0] and "epsilon" in rows[0]
    env_steps = [int(row.split(",")[2]) for row in rows[1:]]
    assert all(steps >= 100 for steps in env_steps)  # a chunk ends once its steps are reached
    summary = json.loads(Path(out, "summary.json").read_text())
    assert len(summary["final_eval_return_per_seed"]) == 2
    # resuming the finished run from its first checkpoint reproduces its metrics
    again = str(tmp_path / "again")
    shutil.copytree(out, again)
    shutil.rmtree(Path(again, "checkpoints", "1"))
    with cache_hits() as hits:
        assert run.main(["--resume", again, "--quiet", "--compile-cache", cache]) == 0
    assert Path(again, "metrics.csv").read_text() == Path(out, "metrics.csv").read_text()
    assert hits  # the resumed run loaded its programs instead of compiling them again


def test_value_learner_defaults_and_family_flags():
    parser = run.build_parser()
    qmix = run.config_from_args(parser.parse_args(["--algo", "qmix"]))
    assert (qmix.batch_size, qmix.buffer_capacity, qmix.num_envs) == (128, 5000, 8)
    assert isinstance(qmix.learner, ValueConfig) and qmix.learner.gamma == 0.99
    tuned = run.config_from_args(parser.parse_args(["--algo", "vdn", "--gamma", "0.9",
                                                    "--batch-size", "32"]))
    assert tuned.learner.gamma == 0.9 and tuned.batch_size == 32
    maddpg = run.config_from_args(parser.parse_args([]))
    assert (maddpg.batch_size, maddpg.learner.gamma) == (1024, 0.95)


@pytest.mark.parametrize("argv, message", [
    (["--algo", "qmix", "--actor-lr", "0.1"], "--actor-lr applies to the actor-critic family"),
    (["--algo", "maddpg", "--td-lambda", "0.1"], "--td-lambda applies to the value-based family"),
    (["--algo", "qmix", "--env-kwargs", "continuous_actions=true"], "discrete actions"),
])
def test_value_learner_flag_errors_are_one_line(argv, message, capsys):
    assert exit_code([*argv, "--out", "/tmp/never-written"]) == 2
    assert message in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("kwargs, message", [
    ("reuse_ratio=1.5", "reuse_ratio must be a number in [0.0, 1.0], got 1.5"),
    ("decay=0", "decay must be a number in (0.0, 1.0], got 0"),
])
def test_accmer_sampler_settings_out_of_range_are_one_line(kwargs, message, tmp_path, capsys):
    out = tmp_path / "run"
    assert exit_code(["--env", "stag_hunt", "--algo", "accmer", "--sampler-kwargs", kwargs,
                      "--out", str(out), "--quiet"]) == 2
    assert message in one_line(capsys.readouterr().err)
    assert not out.exists()


@pytest.mark.slow
def test_accmer_trains_from_the_cli_with_macpo_weights_and_the_reuse_table(tmp_path):
    out = str(tmp_path / "accmer")
    argv = [*VALUE_TINY, "--algo", "accmer", "--qstar-hidden", "8", "--qstar-layers", "1",
            "--sampler-kwargs", "decay=0.8"]
    assert run.main([*argv, "--out", out]) == 0
    stored = json.loads(Path(out, "config.json").read_text())["train"]
    assert stored["algo"] == "accmer" and stored["sampler"] == "reuse"
    rows = outputs.read_rows(out)
    assert "macpo_weight_mean" in rows[0] and "macpo_qstar_loss" in rows[0]
    assert all(row["macpo_f_pi_mean"] >= 1.0 for row in rows if row["updates"] > 0)
    # the last checkpoint's weight table (per seed) holds the batches' MAC-PO weights
    saved = restore_params(out, 1, everything=True)
    tables = np.asarray(saved[".buffer.sampler.weights"])
    for table, filled, window in zip(tables, np.asarray(saved[".buffer.size"]),
                                     np.asarray(saved[".buffer.sampler.window"]), strict=True):
        assert np.all(np.isfinite(table[:filled])) and np.all(table[:filled] >= 0)
        assert np.all(np.isneginf(table[filled:]))
        assert 1 <= int(window) <= int(filled) // 4  # floor(d / b) at a re-rank


@pytest.mark.slow
def test_accmer_trains_from_the_cli_with_the_authors_reuse(tmp_path):
    """--sampler reuse_block: per seed, the table's counter has advanced one block of b
    slots per write (every third update, the first included) and the written blocks hold
    the batches' mean MAC-PO weights, the rest the decayed initial 0.01."""
    out = str(tmp_path / "accmer_block")
    argv = [*VALUE_TINY, "--algo", "accmer", "--qstar-hidden", "8", "--qstar-layers", "1",
            "--sampler", "reuse_block", "--sampler-kwargs", "decay=0.8,write_every=3"]
    assert run.main([*argv, "--out", out]) == 0
    rows = outputs.read_rows(out)
    assert all(np.isfinite(row["loss"]) for row in rows)
    saved = restore_params(out, 1, everything=True)
    updates = np.asarray(saved[".buffer.sampler.updates"])
    assert updates.tolist() == [sum(r["updates"] for r in rows if r["seed"] == seed)
                                for seed in range(2)]
    writes = -(-updates // 3)
    np.testing.assert_array_equal(saved[".buffer.sampler.block_start"], writes * 4 % 16)
    for table, count in zip(np.asarray(saved[".buffer.sampler.weights"]), writes, strict=True):
        untouched = np.isclose(table, 0.01 * 0.8 ** count)
        assert untouched.sum() == 16 - 4 * min(count, 4) and np.all(table > 0)


@pytest.mark.slow
def test_a_run_checkpointed_without_its_replay_refills_it_after_resuming(finished_run, tmp_path,
                                                                         capsys):
    """--checkpoint-replay false: the checkpoints hold no replay array; resuming after
    chunk 1 says so, refills the replay (100 env steps, --learning-starts) and so updates
    less in chunk 2 than the uninterrupted run, which never stopped."""
    out = str(tmp_path / "no_replay")
    assert run.main([*TINY, "--out", out, "--checkpoint-replay", "false"]) == 0
    saved = restore_params(out, 2, everything=True)
    assert saved and not [name for name in saved if name.startswith(run_store.REPLAY)]
    shutil.rmtree(os.path.join(out, "checkpoints", "2"))  # as if killed in the last chunk
    capsys.readouterr()
    assert run.main(["--resume", out, "--quiet"]) == 0
    warning = one_line(capsys.readouterr().err)
    assert "holds no replay (--checkpoint-replay false): the resumed run refills it" in warning

    def updates(folder):
        return [r["updates"] for r in outputs.read_rows(folder) if r["chunk"] == 2]

    assert all(0 < got < want for got, want in zip(updates(out), updates(finished_run),
                                                   strict=True))


@pytest.mark.slow
def test_with_scripted_prey_the_predators_are_scored(tmp_path):
    """``--prey scripted``: returns, baselines and scores average over the predators (the
    learners) only; with their own-contact reward the prey's penalties would cancel them."""
    out = str(tmp_path / "tag")
    argv = [*TINY, "--env", "simple_tag", "--prey", "scripted", "--env-kwargs",
            "num_prey=2,predator_reward=own", "--baseline-episodes", "32", "--out", out]
    assert run.main(argv) == 0
    rows = outputs.read_rows(out)
    for row in rows:
        np.testing.assert_allclose(row["eval_return"],
                                   np.mean([row[f"eval_return_agent{a}"] for a in range(3)]),
                                   rtol=1e-6)
    summary = json.loads(Path(out, "summary.json").read_text())
    final = [np.mean([r[f"eval_return_agent{a}"] for a in range(3)]) for r in rows
             if r["chunk"] == max(row["chunk"] for row in rows)]
    np.testing.assert_allclose(summary["median_return"], np.median(final), rtol=1e-6)
    for name in ("random", "scripted"):
        np.testing.assert_allclose(summary[f"{name}_return"],
                                   summary[f"{name}_return_per_team"]["predator"], rtol=1e-6)
    assert summary["scripted_return"] > summary["random_return"] > 0  # predators touch prey


def test_a_preset_sets_paper_004s_settings_and_flags_beside_it_win(capsys):
    from tests.algos.value.test_presets import preset_config

    def config_of(argv):
        parser = run.build_parser()
        return run.config_from_args(run.apply_preset(parser, parser.parse_args(argv), argv))

    argv = ["--algo", "accmer", "--preset", "paper004-p1.5"]
    expected = preset_config("paper004-p1.5", "accmer")
    # --eval-every left out follows the budget once the run is built (runs.fit)
    assert dataclasses.replace(config_of(argv), eval_every=expected.eval_every) == expected
    assert config_of([*argv, "--batch-size", "64"]).batch_size == 64
    assert exit_code(["--algo", "maddpg", "--preset", "paper004-p0"]) == 2
    assert "--algo must be one of qmix, vdn" in one_line(capsys.readouterr().err)
