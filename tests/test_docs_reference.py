"""docs/replay.md and docs/library.md against the code: the sampler table names every
sampler of the package with every option it takes, and each function the library page
lists with its arguments names every parameter of the function's signature, in order."""

from __future__ import annotations

import inspect
import re

import pytest

import jaxmarl_accel as jm
from jaxmarl_accel.buffers import SAMPLERS, estimate_bytes
from jaxmarl_accel.buffers.registry import sampler_options
from tests.test_docs import REPO

REPLAY = (REPO / "docs" / "replay.md").read_text(encoding="utf-8")
LIBRARY = (REPO / "docs" / "library.md").read_text(encoding="utf-8")
FUNCTIONS = {
    "make": jm.make, "evaluate_policy": jm.evaluate_policy, "make_buffer": jm.make_buffer,
    "estimate_bytes": estimate_bytes, "make_algo": jm.make_algo, "make_train": jm.make_train,
    "make_trainer": jm.make_trainer, "transition_step": jm.transition_step,
    "learn_step": jm.learn_step, "learner_policy": jm.learner_policy,
    "plan_layout": jm.plan_layout, "make_sharded_trainer": jm.make_sharded_trainer,
}


def sampler_rows() -> dict[str, str]:
    """The rows of replay.md's sampler table, by the sampler they name."""
    section = REPLAY.split("## Samplers", 1)[1].split("\n## ", 1)[0]
    return {match.group(1): line for line in section.splitlines()
            if (match := re.match(r"\| `([\w.:]+)` \|", line))}


@pytest.mark.parametrize("name", SAMPLERS)
def test_every_sampler_is_in_the_replay_page_with_every_option(name):
    row = sampler_rows().get(name)
    assert row is not None, f"docs/replay.md: no row for the sampler {name}"
    missing = [option for option in sampler_options(name) if f"`{option}" not in row
               and f" {option}=" not in row and f", {option}" not in row]
    assert not missing, f"docs/replay.md: {name}'s row lacks {missing}"


def entry(name: str) -> str:
    """The bullet of ``name`` in the library page's list of arguments."""
    section = LIBRARY.split("## Every public function's arguments", 1)[1].split("\n## ", 1)[0]
    bullets = re.split(r"\n\* ", section)
    found = [b for b in bullets if re.match(rf"`(?:jaxmarl_accel\.buffers\.)?{name}\(", b)
             or f" `{name}(" in b.split(":", 1)[0]]
    assert found, f"docs/library.md lists no arguments of {name}"
    return " ".join(found[0].split())


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_listed_function_has_its_signature(name):
    text = entry(name)
    call = text[text.index(f"{name}(") + len(name) + 1:]
    params = [p for p in inspect.signature(FUNCTIONS[name]).parameters.values()
              if p.kind is not inspect.Parameter.VAR_KEYWORD]
    positions = [call.find(p.name) for p in params]
    assert -1 not in positions, f"{name}: {[p.name for p in params]} not all in: {text}"
    assert positions == sorted(positions), f"{name}: parameters out of order in: {text}"


def test_update_priorities_is_documented_as_taking_td_errors():
    text = entry("buffer.update_priorities")
    assert "update_priorities(state, indices, td_errors)" in text and "not priorities" in text
