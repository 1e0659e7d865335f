"""The training program computes exactly what it computed when the fingerprint was recorded.

Per configuration (15 of the algorithm x sampler x layout x learners product that hold
every pair of the factors' values, or all 60 with ``JAXMARL_FINGERPRINT=all``, and a few
more): the
hashes of every ``TrainState`` leaf and of the chunk metrics after two chunks from a fixed
key; and the ``metrics.csv`` of a short CLI run. Bit-exact on the JAX version, backend and
CPU (model and instruction-set flags, :func:`tests.fingerprint.cpu_signature`) the
fingerprint was recorded with; elsewhere (compilers may round differently) the per-leaf
sums of ``|x|`` must agree to 1e-3 relative instead.
"""

from __future__ import annotations

import itertools
import json

import jax
import numpy as np
import pytest

from tests import fingerprint as fp

with open(fp.PATH) as _handle:
    RECORD = json.load(_handle)
SAME_JAX = (RECORD["jax"] == jax.__version__ and RECORD["platform"] == jax.default_backend()
            and RECORD.get("cpu") == fp.cpu_signature())


def test_every_configuration_is_recorded():
    assert sorted(RECORD["configs"]) == sorted(fp.configs())


def test_the_checked_configurations_hold_every_pair_of_factor_values():
    rows = fp.pairwise()
    assert len(set(rows)) == 15
    assert {fp.product_name(*row) for row in rows} <= set(fp.checked_names())
    factors = (fp.ALGOS, fp.SAMPLERS, fp.LAYOUTS, fp.LEARNERS)
    for i, j in itertools.combinations(range(4), 2):
        assert {(row[i], row[j]) for row in rows} == set(itertools.product(factors[i],
                                                                            factors[j]))


@pytest.mark.slow
@pytest.mark.parametrize("name", fp.checked_names())
def test_train_state_after_two_chunks(name):
    expected = RECORD["configs"][name]
    got = fp.fingerprint(fp.configs()[name])
    if SAME_JAX:
        assert got["state"] == expected["state"]
        assert got["metrics"] == expected["metrics"]
    else:
        np.testing.assert_allclose(got["state_sums"], expected["state_sums"], rtol=1e-3)


@pytest.mark.slow
def test_cli_metrics_csv():
    got = fp.cli_metrics()
    if SAME_JAX:
        assert got == RECORD["cli_metrics_csv"]
    else:
        assert got.splitlines()[0] == RECORD["cli_metrics_csv"].splitlines()[0]
        assert len(got.splitlines()) == len(RECORD["cli_metrics_csv"].splitlines())
