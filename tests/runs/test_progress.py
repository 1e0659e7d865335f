"""experiments.progress: the time left comes from chunks that learned, not the warm-up."""

from __future__ import annotations

import pytest

from jaxmarl_accel.runs import progress


def test_time_left_ignores_the_learning_free_warm_up(monkeypatch, capsys):
    clock = iter([0.0, 1.0, 11.0, 21.0])  # a warm-up chunk of 1 s, then chunks of 10 s
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    bar = progress.ProgressBar(total_steps=600, start_steps=0, quiet=False)
    bar.update(100, seeds=1, eval_return=0.0, learning=False)
    assert capsys.readouterr().err.rstrip().endswith("left ?")
    bar.update(200, seeds=1, eval_return=0.0, learning=True)
    assert capsys.readouterr().err.rstrip().endswith("left 0m40s")  # 4 chunks of 10 s
    bar.update(300, seeds=1, eval_return=0.0, learning=True)
    assert capsys.readouterr().err.rstrip().endswith("left 0m30s")
    bar.close()
    bar.close()
    assert capsys.readouterr().err == "\n"


@pytest.mark.parametrize("seconds, text", [(3.4, "0m03s"), (59.6, "1m00s"), (3725, "1h02m"),
                                           (float("inf"), "?")])
def test_duration(seconds, text):
    assert progress.duration(seconds) == text
