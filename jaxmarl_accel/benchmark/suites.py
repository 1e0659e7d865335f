"""What a benchmark is: tasks (an env, its keywords, its env steps) x learners (an algo and
its flags) x seeds, as frozen records, and the YAML file a user writes (read by
:func:`~.builtin.load_suite`, beside the built-in suites):

    name: tiny                        # optional (default: the file's name)
    seeds: 2                          # seeds of every pair, vmapped in one program
    seed: 0                           # optional base PRNG seed
    tasks:
      - name: spread                  # the task's name in folders and tables
        env: simple_spread            # any --env of `jaxmarl-accel run`
        kwargs: {num_agents: 3}       # its --env-kwargs
        env_steps: 4000               # --total-env-steps of each seed (before --budget-scale)
        evaluations: 4                # optional: evaluations over the run (default 10)
        flags: {eval-episodes: 8}     # optional: run flags of every pair of the task
        learners: [maddpg]            # optional: the learners it pairs with (default: all)
        learner_flags: {maddpg: {batch-size: 64}}  # optional: flags of one pair
        jaxmarl: mpe:MPE_simple_spread_v3          # optional: JaxMARL's (suite, env) for
                                                   # --reference jaxmarl=PATH
    learners:
      - name: maddpg                  # the learner's name in folders and tables
        algo: maddpg                  # any --algo of `jaxmarl-accel run`
        flags: {hidden-sizes: [32, 32], buffer-capacity: 2000}
        jaxmarl: ippo_ff              # optional: JaxMARL's baseline of the same learner

A flag is written without its dashes; a list is several values, a mapping is
``key=value,...`` (``--team-lr``, ``--sampler-kwargs``), ``null`` is a flag without a value
(``render: null``). Every pair is checked by the ``run`` command's own parser and trainer
(:mod:`~.execute`) before anything trains.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

Flags = tuple[tuple[str, Any], ...]
"""Run flags as ``(name, value)`` pairs, name without dashes (:func:`flag_args`)."""


@dataclasses.dataclass(frozen=True)
class Task:
    """One environment setting of a suite.

    Attributes:
      name: the task's name (folder names, tables).
      env: the ``--env`` of its runs.
      env_steps: env steps of each seed at budget scale 1.
      kwargs: its ``--env-kwargs``.
      evaluations: greedy evaluations over a run (``--eval-every`` = env steps / this).
      flags: run flags of every pair of the task (e.g. ``agents``, ``eval-episodes``).
      learners: names of the suite's learners it pairs with (``None``: all).
      learner_flags: ``(learner, flags)``: flags of one pair, after the learner's own.
      jaxmarl: JaxMARL's baselines' ``suite:env`` of the same task (``mpe:MPE_simple_spread_v3``,
        ``smax:2s3z``), or ``None`` where JaxMARL has no baseline for it.
    """

    name: str
    env: str
    env_steps: int
    kwargs: Flags = ()
    evaluations: int = 10
    flags: Flags = ()
    learners: tuple[str, ...] | None = None
    learner_flags: tuple[tuple[str, Flags], ...] = ()
    jaxmarl: str | None = None


@dataclasses.dataclass(frozen=True)
class Learner:
    """One learner of a suite: a registered algo with its flags.

    Attributes:
      name: the learner's name (folder names, tables).
      algo: its ``--algo``.
      flags: its run flags (e.g. ``agent: rnn``).
      jaxmarl: the name of JaxMARL's baseline of the same learner (``ippo_ff``,
        ``qmix_rnn``), or ``None``.
    """

    name: str
    algo: str
    flags: Flags = ()
    jaxmarl: str | None = None


@dataclasses.dataclass(frozen=True)
class Pair:
    """One run of a suite: a task trained by a learner, all seeds at once."""

    task: Task
    learner: Learner

    @property
    def name(self) -> str:
        """``task/learner``: the pair's name and its folder under the suite's ``runs/``."""
        return f"{self.task.name}/{self.learner.name}"


@dataclasses.dataclass(frozen=True)
class Suite:
    """Tasks x learners x seeds (:func:`pairs`)."""

    name: str
    tasks: tuple[Task, ...]
    learners: tuple[Learner, ...]
    seeds: int
    seed: int = 0


def pairs(suite: Suite) -> list[Pair]:
    """The suite's pairs, task by task in the suite's order, each task's learners in the
    suite's order."""
    out = []
    for task in suite.tasks:
        for learner in suite.learners:
            if task.learners is None or learner.name in task.learners:
                out.append(Pair(task, learner))
    return out


def scaled_steps(task: Task, budget_scale: float) -> int:
    """The task's env steps per seed at ``budget_scale`` (at least one evaluation's worth)."""
    return max(task.evaluations, round(task.env_steps * budget_scale))


def flag_args(flags: Flags) -> list[str]:
    """Command-line arguments of ``flags``: ``--name value`` (a list: several values; a
    mapping: ``k=v,...``; ``None``: ``--name`` alone; booleans as ``true``/``false``)."""
    out: list[str] = []
    for name, value in flags:
        out.append("--" + name.replace("_", "-"))
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            out.extend(_text(v) for v in value)
        elif isinstance(value, Mapping):
            out.append(",".join(f"{k}={_text(v)}" for k, v in value.items()))
        else:
            out.append(_text(value))
    return out


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def run_argv(pair: Pair, suite: Suite, out_dir: str, budget_scale: float = 1.0) -> list[str]:
    """The ``jaxmarl-accel run`` arguments of ``pair`` writing into ``out_dir``."""
    task = pair.task
    steps = scaled_steps(task, budget_scale)
    argv = ["--algo", pair.learner.algo, "--env", task.env, "--seeds", str(suite.seeds),
            "--seed", str(suite.seed), "--total-env-steps", str(steps),
            "--eval-every", str(max(1, steps // task.evaluations)), "--out", out_dir, "--quiet"]
    if task.kwargs:
        argv += ["--env-kwargs", ",".join(f"{k}={_text(v)}" for k, v in task.kwargs)]
    own = dict(task.learner_flags).get(pair.learner.name, ())
    return argv + flag_args(task.flags) + flag_args(pair.learner.flags) + flag_args(own)


TASK_KEYS = {f.name for f in dataclasses.fields(Task)}
LEARNER_KEYS = {f.name for f in dataclasses.fields(Learner)}
SUITE_KEYS = {"name", "seeds", "seed", "tasks", "learners"}


def _flags(value: Any, where: str) -> Flags:
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: flags must be a mapping of flag -> value, got {value!r}")
    return tuple((str(k), tuple(v) if isinstance(v, list) else v) for k, v in value.items())


def _entry(record: Any, keys: set[str], required: tuple[str, ...], where: str) -> dict:
    if not isinstance(record, Mapping):
        raise ValueError(f"{where}: expected a mapping, got {record!r}")
    unknown = sorted(set(record) - keys)
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r}; keys: {', '.join(sorted(keys))}")
    missing = [key for key in required if key not in record]
    if missing:
        raise ValueError(f"{where}: missing {missing[0]!r}")
    return dict(record)


def task_from(record: Any, index: int) -> Task:
    """A :class:`Task` of one YAML entry (``ValueError`` naming the entry if malformed)."""
    where = f"tasks[{index}]" + (f" ({record.get('name')})" if isinstance(record, Mapping)
                                 else "")
    fields = _entry(record, TASK_KEYS, ("name", "env", "env_steps"), where)
    try:
        steps, evaluations = int(float(fields["env_steps"])), int(fields.get("evaluations", 10))
    except (TypeError, ValueError):
        raise ValueError(f"{where}: env_steps and evaluations must be numbers") from None
    if steps < 1 or evaluations < 1:
        raise ValueError(f"{where}: env_steps and evaluations must be >= 1")
    learners = fields.get("learners")
    return Task(name=str(fields["name"]), env=str(fields["env"]), env_steps=steps,
                kwargs=_flags(fields.get("kwargs"), where), evaluations=evaluations,
                flags=_flags(fields.get("flags"), where),
                learners=None if learners is None else tuple(str(n) for n in learners),
                learner_flags=tuple((str(k), _flags(v, f"{where} learner_flags {k}"))
                                    for k, v in (fields.get("learner_flags") or {}).items()),
                jaxmarl=fields.get("jaxmarl"))


def learner_from(record: Any, index: int) -> Learner:
    """A :class:`Learner` of one YAML entry (``ValueError`` naming the entry if malformed)."""
    where = f"learners[{index}]" + (f" ({record.get('name')})" if isinstance(record, Mapping)
                                    else "")
    fields = _entry(record, LEARNER_KEYS, ("name", "algo"), where)
    return Learner(name=str(fields["name"]), algo=str(fields["algo"]),
                   flags=_flags(fields.get("flags"), where), jaxmarl=fields.get("jaxmarl"))


def suite_from(record: Any, default_name: str) -> Suite:
    """A :class:`Suite` of a parsed YAML document; ``ValueError`` naming the first entry
    that is malformed, a duplicate name, or a task's learner the suite does not have."""
    fields = _entry(record, SUITE_KEYS, ("seeds", "tasks", "learners"), "suite")
    tasks = tuple(task_from(t, i) for i, t in enumerate(fields["tasks"] or ()))
    learners = tuple(learner_from(entry, i) for i, entry in enumerate(fields["learners"] or ()))
    if not tasks or not learners:
        raise ValueError("suite: needs at least one task and one learner")
    for kind, names in (("task", [t.name for t in tasks]), ("learner", [x.name for x in learners])):
        for name in names:
            if names.count(name) > 1 or not name or "/" in name or name.startswith("."):
                raise ValueError(f"{kind} {name!r}: names must be unique, non-empty, without '/'")
    known = {x.name for x in learners}
    for task in tasks:
        for name in (task.learners or ()) + tuple(n for n, _ in task.learner_flags):
            if name not in known:
                raise ValueError(f"task {task.name!r}: unknown learner {name!r}; learners: "
                                 f"{', '.join(sorted(known))}")
    seeds = int(fields["seeds"])
    if seeds < 1:
        raise ValueError(f"suite: seeds must be >= 1, got {seeds}")
    return Suite(name=str(fields.get("name") or default_name), tasks=tasks, learners=learners,
                 seeds=seeds, seed=int(fields.get("seed", 0)))


SuiteFactory = Callable[[], Suite]
