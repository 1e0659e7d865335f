"""experiments.loggers: ``--logger`` streams (TensorBoard event files per seed, one W&B run
per seed) equal to metrics.csv, continued on ``--resume``; bad values and missing packages
as one-line usage errors."""

from __future__ import annotations

import json
import shutil
import struct
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from jaxmarl_accel.cli import run
from jaxmarl_accel.runs import host_loop, loggers, outputs, run_store

pytest.importorskip("tensorboardX")
from tensorboardX.proto import event_pb2  # noqa: E402

pytestmark = pytest.mark.xdist_group("loggers")  # one worker computes the module's fixtures

SMALL = ["--env", "simple_spread", "--agents", "2", "--seeds", "2", "--algo", "maddpg",
         "--hidden-sizes", "8", "--buffer-capacity", "200", "--batch-size", "8",
         "--num-envs", "2", "--update-every", "50", "--learning-starts", "50",
         "--eval-every", "100", "--total-env-steps", "200", "--eval-episodes", "2",
         "--baseline-episodes", "2", "--env-kwargs", "episode_length=10", "--quiet"]


class FakeRun:
    """Records what a W&B run is given."""

    def __init__(self, **kwargs):
        self.kwargs, self.metrics, self.logged, self.finished = kwargs, [], [], False

    def define_metric(self, name, step_metric=None):
        self.metrics.append((name, step_metric))

    def log(self, values):
        self.logged.append(dict(values))

    def finish(self):
        self.finished = True


def fake_wandb() -> types.ModuleType:
    """A ``wandb`` module whose ``init`` returns a :class:`FakeRun` kept in ``module.runs``."""
    module = types.ModuleType("wandb")
    module.runs = []

    def init(**kwargs):
        module.runs.append(FakeRun(**kwargs))
        return module.runs[-1]

    module.init = init
    return module


def read_events(folder: Path) -> list:
    """The events of every event file in ``folder``, oldest file first (TFRecord framing:
    length, its CRC, the event, its CRC)."""
    events = []
    for path in sorted(folder.glob("events.out.tfevents.*")):
        data, offset = path.read_bytes(), 0
        while offset < len(data):
            (length,) = struct.unpack("<Q", data[offset:offset + 8])
            events.append(event_pb2.Event.FromString(data[offset + 12:offset + 12 + length]))
            offset += 12 + length + 4
    return events


def scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """Each tag's ``(step, value)`` points as TensorBoard shows them: a session restart at
    step T hides the points at T and after that were written before it."""
    points: dict[str, list[tuple[int, float]]] = {}
    for event in read_events(folder):
        if event.session_log.status == event_pb2.SessionLog.START:
            points = {tag: [p for p in seen if p[0] < event.step] for tag, seen in points.items()}
        for value in event.summary.value:
            if value.HasField("simple_value"):
                points.setdefault(value.tag, []).append((event.step, value.simple_value))
    return points


def config_text(folder: Path) -> list[str]:
    return [value.tensor.string_val[0].decode() for event in read_events(folder)
            for value in event.summary.value if value.tag == "config/text_summary"]


def exit_code(argv: list[str]) -> int:
    try:
        return run.main(argv)
    except SystemExit as exit_info:
        return exit_info.code


@pytest.fixture(scope="module")
def logged_run(tmp_path_factory):
    """A run with every stream, then a copy resumed from its first checkpoint; returns both
    folders and the fake W&B runs of each."""
    folder = tmp_path_factory.mktemp("loggers")
    out, resumed = str(folder / "first"), str(folder / "resumed")
    with pytest.MonkeyPatch.context() as patch:
        for name in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_PROJECT"):
            patch.delenv(name, raising=False)
        patch.setitem(sys.modules, "wandb", fake_wandb())
        assert run.main([*SMALL, "--out", out, "--logger", "csv,tensorboard,wandb"]) == 0
        first_runs = sys.modules["wandb"].runs
        shutil.copytree(out, resumed)
        shutil.rmtree(Path(resumed, "checkpoints", "1"))
        patch.setitem(sys.modules, "wandb", fake_wandb())
        assert run.main(["--resume", resumed, "--quiet"]) == 0
        resumed_runs = sys.modules["wandb"].runs
    return Path(out), first_runs, Path(resumed), resumed_runs


def test_the_choice_is_stored_and_old_configs_resume_with_csv(logged_run, tmp_path):
    out = logged_run[0]
    record = json.loads((out / "config.json").read_text())
    assert record["loggers"] == ["csv", "tensorboard", "wandb"]
    assert run_store.stored_run(str(out))[1]["loggers"] == ("csv", "tensorboard", "wandb")
    del record["loggers"]
    (tmp_path / "config.json").write_text(json.dumps(record))
    assert run_store.stored_run(str(tmp_path))[1]["loggers"] == ("csv",)


def test_tensorboard_holds_each_seeds_metrics_csv_and_the_config(logged_run):
    out = logged_run[0]
    rows = outputs.read_rows(str(out))
    record = json.loads((out / "config.json").read_text())
    assert sorted(p.name for p in (out / "tensorboard").iterdir()) == ["seed_0", "seed_1"]
    for seed in (0, 1):
        folder = out / "tensorboard" / f"seed_{seed}"
        mine = [row for row in rows if row["seed"] == seed]
        got = scalars(folder)
        assert set(got) == set(mine[0]) - {"seed", "chunk", "env_steps"}
        for tag, points in got.items():
            want = [(row["env_steps"], np.float32(row[tag])) for row in mine]
            assert points == want, tag
        (text,) = config_text(folder)
        assert json.loads(text) == {**record, "seed_index": seed}


def test_wandb_gets_one_run_per_seed_grouped_by_the_folder(logged_run):
    out, runs = logged_run[0], logged_run[1]
    rows = outputs.read_rows(str(out))
    record = json.loads((out / "config.json").read_text())
    assert len(runs) == 2 and len({r.kwargs["id"] for r in runs}) == 2
    for seed, fake in enumerate(runs):
        assert fake.kwargs["group"] == "first" and fake.kwargs["name"] == f"first-seed{seed}"
        assert json.loads(json.dumps(fake.kwargs["config"])) == {**record, "seed_index": seed}
        assert fake.kwargs["mode"] == "offline" and fake.kwargs["reinit"] == "create_new"
        assert fake.kwargs["project"] == loggers.WANDB_PROJECT
        assert ("*", "env_steps") in fake.metrics and fake.finished
        assert fake.logged == [{k: v for k, v in row.items() if k != "seed"}
                               for row in rows if row["seed"] == seed]


def test_resume_continues_the_streams_without_repeating_steps(logged_run):
    out, first_runs, resumed, resumed_runs = logged_run
    assert (resumed / "metrics.csv").read_text() == (out / "metrics.csv").read_text()
    for seed in (0, 1):
        assert scalars(resumed / "tensorboard" / f"seed_{seed}") == scalars(
            out / "tensorboard" / f"seed_{seed}")
        assert len(config_text(resumed / "tensorboard" / f"seed_{seed}")) == 1
    assert [r.kwargs["id"] for r in resumed_runs] == [r.kwargs["id"] for r in first_runs]
    assert all(r.kwargs["resume"] == "allow" and r.finished for r in resumed_runs)
    assert [r.logged for r in resumed_runs] == [[], []]  # both chunks were logged already


def test_a_resumed_tensorboard_stream_hides_the_steps_after_the_restored_rows(tmp_path):
    row = {"seed": 0, "chunk": 0, "env_steps": 100, "eval_return": 1.0}
    stream = loggers.open_tensorboard({}, str(tmp_path), 1, None)
    stream.write([row])
    stream.write([{**row, "chunk": 1, "env_steps": 200, "eval_return": 5.0}])
    stream.close()
    stream = loggers.open_tensorboard({}, str(tmp_path), 1, [row])
    stream.write([{**row, "chunk": 1, "env_steps": 200, "eval_return": 2.0}])
    stream.close()
    assert scalars(tmp_path / "tensorboard" / "seed_0") == {"eval_return": [(100, 1.0),
                                                                            (200, 2.0)]}


def test_wandb_mode_is_offline_unless_configured(monkeypatch):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    assert loggers.wandb_mode() == "offline"
    monkeypatch.setenv("WANDB_API_KEY", "key")
    assert loggers.wandb_mode() is None
    monkeypatch.delenv("WANDB_API_KEY")
    monkeypatch.setenv("WANDB_MODE", "disabled")
    assert loggers.wandb_mode() is None


def test_parse_loggers_keeps_the_order_without_repeats():
    assert loggers.parse_loggers("tensorboard, csv,tensorboard") == ("tensorboard", "csv")


@pytest.mark.parametrize("value", ["foo", "csv,foo", "", "csv,"])
def test_bad_logger_values_are_one_line_usage_errors(value, capsys):
    assert exit_code(["--logger", value]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "argument --logger: expected a comma-separated list of csv, " \
                               "tensorboard, wandb" in lines[0]
    assert lines[0].endswith("; see --help")


@pytest.mark.parametrize("name, package", [("wandb", "wandb"), ("tensorboard", "tensorboardX")])
def test_a_missing_package_is_a_usage_error_before_anything_runs(name, package, monkeypatch,
                                                                  tmp_path, capsys):
    monkeypatch.setitem(sys.modules, package, None)  # import raises ImportError
    monkeypatch.setattr(host_loop, "run_training", lambda *a: pytest.fail("the run started"))
    out = tmp_path / "never"
    assert exit_code([*SMALL, "--out", str(out), "--logger", f"csv,{name}"]) == 2
    assert capsys.readouterr().err == (
        f"jaxmarl-accel run: error: --logger {name} needs the {package} package, which "
        f"is not installed; pip install {package}; see --help\n")
    assert not out.exists()
