"""Running a suite: the checks before training (one line naming the pair), the suite's
record in its folder, and resume: finished pairs are never run again, an unfinished one
continues, an interrupted suite stops at the pair it was in (no training here: a stand-in
runner writes the files a run writes)."""

import json
import os

import pytest

from jaxmarl_accel.benchmark import execute, suites

TASK = suites.Task("spread", "simple_spread", 1000, kwargs=(("num_agents", 2),),
                   evaluations=2)
SUITE = suites.Suite("mini", (TASK,), (suites.Learner("iql", "iql"),
                                       suites.Learner("vdn", "vdn")), seeds=1)


def test_a_pair_is_checked_by_the_run_commands_parser_and_trainer():
    execute.check_pair(suites.pairs(SUITE)[0], SUITE, 1.0)
    bad = suites.Suite("bad", (TASK, suites.Task("x", "no_env", 10)), (
        suites.Learner("nope", "no_algo"), suites.Learner("flag", "iql", (("no-flag", 1),)),
        suites.Learner("ppo", "ppo", (("sampler", "per"),))), seeds=1)
    messages = []
    for pair in suites.pairs(bad):
        with pytest.raises(ValueError) as error:
            execute.check_pair(pair, bad, 1.0)
        messages.append(str(error.value))
    assert messages[0].startswith("pair spread/nope: argument --algo: invalid choice: 'no_algo'")
    assert messages[1] == "pair spread/flag: unrecognized arguments: --no-flag 1"
    assert messages[2].startswith("pair spread/ppo: --sampler ('per') must keep its default")
    assert messages[3].startswith("pair x/nope: argument --algo")
    assert all("\n" not in m for m in messages)


def fake_runner(calls, stop_at=None, finish=True):
    """A runner that records its calls and writes what a run leaves: config.json, then
    summary.json when it finishes; ``stop_at``: the call that is interrupted."""
    def run(pair, suite, out_dir, scale):
        calls.append((pair.name, execute.pair_state(out_dir, pair)))
        folder = execute.pair_dir(out_dir, pair)
        os.makedirs(folder, exist_ok=True)
        open(os.path.join(folder, "config.json"), "w").close()
        if len(calls) == stop_at:
            raise KeyboardInterrupt
        open(os.path.join(folder, "summary.json"), "w").close()
        return 0
    return run


def test_an_interrupted_suite_resumes_without_repeating_a_finished_pair(tmp_path):
    out, lines = str(tmp_path), []
    chosen = suites.pairs(SUITE)
    execute.record_suite(out, SUITE, chosen, 1.0)
    calls = []
    status = execute.run_suite(SUITE, chosen, out, 1.0, lines.append, fake_runner(calls, 2))
    assert status == execute.INTERRUPTED
    assert calls == [("spread/iql", execute.NEW), ("spread/vdn", execute.NEW)]
    assert [execute.pair_state(out, p) for p in chosen] == [execute.FINISHED,
                                                            execute.UNFINISHED]
    calls.clear()
    assert execute.run_suite(SUITE, chosen, out, 1.0, lines.append, fake_runner(calls)) == 0
    assert calls == [("spread/vdn", execute.UNFINISHED)]  # resumed, iql not repeated
    assert lines[0].startswith("benchmark: 0/2 pairs done, 2 left")
    assert lines[-2].startswith("benchmark: 1/2 pairs done, 1 left")
    assert lines[-1] == "benchmark: 2/2 pairs done"
    calls.clear()
    assert execute.run_suite(SUITE, chosen, out, 1.0, lines.append, fake_runner(calls)) == 0
    assert calls == []


def test_a_folder_refuses_another_suite_or_other_arguments(tmp_path):
    out = str(tmp_path)
    execute.record_suite(out, SUITE, suites.pairs(SUITE)[:1], 1.0)
    execute.record_suite(out, SUITE, suites.pairs(SUITE), 1.0)  # more pairs: fine
    with open(tmp_path / execute.SUITE_RECORD) as handle:
        assert list(json.load(handle)["pairs"]) == ["spread/iql", "spread/vdn"]
    with pytest.raises(ValueError, match="at budget scale 1.0; choose another --out"):
        execute.record_suite(out, SUITE, suites.pairs(SUITE), 0.5)
    other = suites.Suite("mini", SUITE.tasks, SUITE.learners, seeds=3)
    with pytest.raises(ValueError, match="holds pair spread/iql with other run arguments"):
        execute.record_suite(out, other, suites.pairs(other), 1.0)


def test_the_progress_line_estimates_the_time_left():
    pairs = suites.pairs(SUITE)
    progress = execute.Progress(pairs, 0, 1.0, lambda line: None)
    progress.seconds, progress.work = 30.0, 1000.0
    assert progress.line(pairs[0]).endswith("(about 60s left); running spread/iql")
