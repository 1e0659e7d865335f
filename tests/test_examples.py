"""examples/custom_loop.py: another project's jitted loop built from our pieces runs, fills
the buffer, updates every step once a batch is stored, and changes the learners."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"

SCRIPT = """
import json, sys
import jax, numpy as np
sys.path.insert(0, "examples")
import custom_loop

init, loop = custom_loop.make_loop(num_envs=4, capacity=500, batch_size=32, hidden=16)
carry = init(jax.random.PRNGKey(0))
before = jax.tree.map(np.asarray, carry.algo.actor)
carry, out = loop(carry, 40)
carry, out2 = loop(carry, 40)  # same shapes: no second compile
changed = max(float(np.max(np.abs(a - np.asarray(b)))) for a, b in
              zip(jax.tree.leaves(before), jax.tree.leaves(carry.algo.actor)))
print(json.dumps({
    "updated": np.asarray(out.updated).tolist(), "updated2": bool(np.all(out2.updated)),
    "loss_finite": bool(np.all(np.isfinite(out.critic_loss))),
    "size": int(carry.buffer.size), "algo_step": int(carry.algo.step),
    "changed": changed, "cache_size": loop._cache_size()}))
"""


def test_custom_loop_runs_inside_one_jitted_scan():
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=FAST_COMPILE)
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    # 4 envs per step and batch 32: the buffer can sample from step 8 (index 7) on
    assert report["updated"] == [False] * 7 + [True] * 33
    assert report["updated2"] and report["loss_finite"]
    assert report["size"] == 80 * 4
    assert report["algo_step"] == 33 + 40
    assert report["changed"] > 0
    assert report["cache_size"] == 1


def test_custom_loop_uses_only_the_public_api():
    source = Path(REPO, "examples", "custom_loop.py").read_text()
    tree = ast.parse(source)
    names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert {"make_loop", "main"} <= names
    assert "import jaxmarl_accel as jm" in source and "jaxmarl_accel.trainer.train" not in source
