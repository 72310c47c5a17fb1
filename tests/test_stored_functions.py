"""A function stored on ``self`` in ``__init__`` that reads the model's fields (``self._map_input =
lambda x: self.w_in * x + self.b_in``, one lambda or another by a constructor argument, as the liquid
time-constant network of BrainPy's examples does): main refused it (BFY212). Called in a pure step it now
runs with one example's values bound; ``from_model`` rebinds the lambda it copies to the batch."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import brainpy.math as bm
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from batchify import transform
from batchify.loader import load_generated

SOURCE = textwrap.dedent('''
    import brainpy as bp
    import brainpy.math as bm


    class Mapped(bp.DynamicalSystem):
        def __init__(self, n, mapping="affine"):
            super().__init__()
            self.w = bm.TrainVar(bm.random.normal(0.0, 0.5, (n, n)))
            self.h = bm.Variable(bm.zeros(n))
            if mapping == "affine":
                self.w_in = bm.TrainVar(bm.ones(n) * 1.5)
                self.b_in = bm.TrainVar(bm.ones(n) * 0.1)
                self._map_input = lambda x: self.w_in * x + self.b_in + 0.1 * self.h
            else:
                self._map_input = lambda x: x

        def update(self, x):
            inputs = self._map_input(x)
            self.h.value = bm.tanh(inputs + self.h @ self.w)
            return self.h.value
''')


@pytest.fixture
def modules(tmp_path: Path):
    (tmp_path / "mapped.py").write_text(SOURCE)
    (tmp_path / "mapped_batched.py").write_text(transform(SOURCE.encode(), "mapped.py", command="batchify").text)
    return tmp_path, load_generated(tmp_path / "mapped.py", "mapped_src"), load_generated(
        tmp_path / "mapped_batched.py", "mapped_gen")


def test_the_call_runs_with_the_examples_values(modules) -> None:
    text = (modules[0] / "mapped_batched.py").read_text()
    assert ("        with bfy.example_values(self, params, state):\n"
            "            inputs = self._map_input(x)\n") in text
    assert 'bound=("_map_input",)' in text


@pytest.mark.parametrize("init", ["4", "4, 'identity'"])
def test_verify_passes_with_gradients_through_the_stored_function(modules, init: str) -> None:
    folder = modules[0]
    checked = subprocess.run([sys.executable, "-m", "batchify", "verify", "mapped.py", "mapped_batched.py",
                              "--init", init, "--input-shape", "x=4", "--steps", "6", "--batch", "3", "--strict",
                              "--no-speed", "--format", "json"], capture_output=True, text=True, cwd=folder)
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    report = json.loads(checked.stdout)["classes"][0]
    assert report["verdict"] == "PASS"
    weights = 3 if init == "4" else 1
    assert report["strength"]["weights"] == weights and report["strength"]["weights_with_gradient"] == weights


def test_from_model_rebinds_the_copied_lambda_to_the_batch(modules) -> None:
    """The copied lambda read the original model: the weights' values, not the traced ones (no gradient
    for w_in and b_in), and the original's single-example h."""
    _, src, gen = modules
    model = src.Mapped(4)
    batched = gen.MappedBatched.from_model(model, 3)
    assert batched._map_input is not model._map_input
    xs = np.random.default_rng(0).normal(size=(5, 3, 4)).astype(np.float32)
    want = []
    for e in range(3):
        model.h.value = bm.zeros(4)
        want.append([np.asarray(model.update(xs[t, e])) for t in range(5)])
    got = [np.asarray(batched.update(xs[t])) for t in range(5)]
    np.testing.assert_allclose(np.stack(got, 1), np.stack(want), rtol=1e-5, atol=1e-6)

    def loss(params, x):
        state = batched.state()
        for t in range(2):
            state, out = jax.vmap(batched.update_pure, in_axes=(None, 0, 0))(params, state, x[t])
        return jnp.sum(out ** 2)

    grads = jax.grad(loss)(batched.params(), jnp.asarray(xs))
    assert float(jnp.abs(grads.w_in).sum()) > 0 and float(jnp.abs(grads.b_in).sum()) > 0
    assert np.asarray(model.h.value).shape == (4,)  # the original's Variables untouched by the batch's calls
