"""A benchmark folder's finished pairs, ours and the references', turned into its report.

Every finished pair under ``OUT/runs/`` (a run folder with ``summary.json``) and every
reference record under ``OUT/reference/`` (:mod:`~.jaxmarl_reference`) counts, whichever
command (and ``--only``) ran it; tasks keep the order of ``OUT/suite.json``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence

from jaxmarl_accel.benchmark import execute
from jaxmarl_accel.benchmark.report import TABLE, markdown, write_report
from jaxmarl_accel.benchmark.scores import Record, our_record, suite_scores
from jaxmarl_accel.benchmark.stats import REPS, suite_statistics
from jaxmarl_accel.benchmark.suites import Learner, Pair, Task


def stored_pairs(out_dir: str) -> list[str]:
    """The pair names ``OUT/suite.json`` lists, in the suite's order (``ValueError`` when
    ``out_dir`` is not a benchmark folder)."""
    path = os.path.join(out_dir, execute.SUITE_RECORD)
    if not os.path.isfile(path):
        raise ValueError(f"{out_dir} is not a benchmark folder (no {execute.SUITE_RECORD})")
    with open(path) as handle:
        return list(json.load(handle)["pairs"])


def folder_records(out_dir: str) -> list[Record]:
    """Every finished pair's :class:`~.scores.Record`, ours first, in the suite's order."""
    from jaxmarl_accel.benchmark.jaxmarl_reference import reference_records

    records = []
    for name in stored_pairs(out_dir):
        task, learner = name.split("/")
        pair = Pair(Task(task, "", 1), Learner(learner, ""))
        if execute.pair_state(out_dir, pair) == execute.FINISHED:
            records.append(our_record(out_dir, pair))
    order = [r.task for r in records]
    extra = reference_records(out_dir)
    return records + sorted(extra, key=lambda r: order.index(r.task) if r.task in order else 0)


def report(out_dir: str, suite: str, chosen: Sequence[Pair], reps: int = REPS,
           say: Callable[[str], None] = lambda line: None) -> str:
    """Write the report of ``out_dir`` (:func:`~.report.write_report`); returns the markdown
    table."""
    records = folder_records(out_dir)
    if not records:
        raise ValueError(f"{out_dir} holds no finished pair")
    scores = suite_scores(records)
    statistics = suite_statistics(scores, reps=reps)
    paths = write_report(out_dir, suite, records, scores, statistics)
    say(f"benchmark: {len(records)} finished pair(s) reported in " + ", ".join(
        os.path.basename(p) for p in paths) + f" ({out_dir})")
    with open(os.path.join(out_dir, TABLE)) as handle:
        return handle.read()


def folder_table(out_dir: str, reps: int = REPS) -> str:
    """The markdown table of a benchmark folder's finished pairs (nothing is written)."""
    records = folder_records(out_dir)
    if not records:
        raise ValueError(f"{out_dir} holds no finished pair")
    return markdown(suite_statistics(suite_scores(records), reps=reps), records)
