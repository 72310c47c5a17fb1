"""From a probe of the training harness (2026-12-04): each computed something other than the model means
(or crashed) on main; each test says what main did."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from batchify import transform
from batchify.diagnostics import BatchifyError
from batchify.harness import HarnessOptions
from batchify.loader import load_generated

OWN_RNG = """import brainpy as bp
import brainpy.math as bm
import numpy as np


class OwnRNG(bp.DynamicalSystem):
    def __init__(self, n_in, n_out, seed=0):
        super().__init__()
        self.n_out = n_out
        self.rng = bm.random.RandomState(seed)
        self.w = bm.TrainVar(bm.random.normal(0.0, 0.5, (n_in, n_out)))
        self.v = bm.Variable(bm.zeros(n_out))

    def reset_state(self, batch_size=None):
        self.v.value = bm.zeros(self.n_out)

    def update(self, x):
        self.v.value = 0.9 * self.v + x @ self.w + 0.5 * self.rng.normal(0.0, 1.0, (self.n_out,))
        return self.v.value
"""

DROPOUT = """import brainpy as bp
import brainpy.math as bm
import numpy as np



class DnnSNN(bp.DynamicalSystem):
    def __init__(self, n_in, n_hid, n_out):
        super().__init__()
        self.fc1 = bp.dnn.Linear(n_in, n_hid, W_initializer=bp.init.KaimingNormal(scale=2.0), mode=bm.training_mode)
        self.lif = bp.dyn.Lif(n_hid, V_th=1.0, V_reset=0.0, V_rest=0.0, tau=5.0, spk_fun=bm.surrogate.arctan, mode=bm.training_mode)
        self.drop = bp.dnn.Dropout(0.7, mode=bm.training_mode)
        self.fc2 = bp.dnn.Linear(n_hid, n_out, mode=bm.training_mode)

    def update(self, x):
        return self.fc2(self.drop(self.lif(self.fc1(x))))
"""


def harnessed(tmp_path: Path, name: str, source: str, **options):
    (tmp_path / f"{name}.py").write_text(source)
    text = transform(source.encode(), f"{name}.py", command="batchify", harness=HarnessOptions(**options)).text
    (tmp_path / f"{name}_batched.py").write_text(text)
    return load_generated(tmp_path / f"{name}.py", f"{name}_src"), load_generated(
        tmp_path / f"{name}_batched.py", f"{name}_gen")


def keys(seed: int, n: int):
    return jax.vmap(lambda i: jax.random.fold_in(jax.random.PRNGKey(seed), i))(jnp.arange(n))


def test_a_models_own_random_stream_differs_by_example_and_key(tmp_path: Path) -> None:
    """main: with the same input, every example's prediction was -0.6779 under key 1 and again under key 2
    (the harness kept the library's RandomState at example 0's key)."""
    src, gen = harnessed(tmp_path, "own_rng", OWN_RNG, input="constant", steps=5)
    batched = gen.OwnRNGBatched.from_model(src.OwnRNG(3, 4, seed=5), batch_size=4)
    harness = gen.OwnRNGHarness(batched)
    xs = np.zeros((4, 3), np.float32)
    first = np.asarray(jax.vmap(harness.predict, in_axes=(None, 0, 0))(batched.params(), xs, keys(1, 4)))[:, 0]
    second = np.asarray(jax.vmap(harness.predict, in_axes=(None, 0, 0))(batched.params(), xs, keys(2, 4)))[:, 0]
    assert len(set(np.round(first, 5))) == 4 and len(set(np.round(second, 5))) == 4
    assert not np.allclose(first, second)
    again = np.asarray(jax.vmap(harness.predict, in_axes=(None, 0, 0))(batched.params(), xs, keys(1, 4)))[:, 0]
    np.testing.assert_array_equal(first, again)  # the same keys draw the same noise


def test_dropout_is_on_in_training_and_off_in_evaluate(tmp_path: Path) -> None:
    """main: bp.share['fit'] was never set, so training ran with dropout off (the loss under key 42 equal
    to key 43's, 4.016849); with fit=True set globally, evaluate ran with dropout on."""
    import brainpy.math as bm

    src, gen = harnessed(tmp_path, "dropout", DROPOUT, input="constant", steps=10, readout="sum")
    bm.random.seed(1)
    batched = gen.DnnSNNBatched.from_model(src.DnnSNN(5, 32, 4), batch_size=6)
    harness = gen.DnnSNNHarness(batched)
    rng = np.random.default_rng(0)
    xs = (rng.random(size=(6, 1, 5)) * 20).astype(np.float32)
    ys = rng.integers(0, 4, size=(6,)).astype(np.int32)
    params = batched.params()
    loss_42 = float(harness.value_and_grad(params, xs, ys, jax.random.PRNGKey(42))[0])
    loss_43 = float(harness.value_and_grad(params, xs, ys, jax.random.PRNGKey(43))[0])
    assert loss_42 != loss_43  # dropout draws from each key while training
    first = harness.evaluate(params, xs, ys, key=jax.random.PRNGKey(1))
    second = harness.evaluate(params, xs, ys, key=jax.random.PRNGKey(2))
    assert first == second  # no dropout: the key changes nothing


@pytest.mark.parametrize("steps", [0, -3])
def test_a_harness_of_no_steps_is_refused(steps: int) -> None:
    """main: --harness-steps -3 wrote steps=-3; the loss was NaN and evaluate's accuracy an argmax of NaN."""
    with pytest.raises(BatchifyError) as caught:
        transform(OWN_RNG.encode(), "m.py", command="batchify", harness=HarnessOptions(input="constant", steps=steps))
    assert any("--harness-steps must be at least 1" in d.message for d in caught.value.diagnostics)


def test_a_harness_for_a_reset_requiring_an_argument_is_refused() -> None:
    """main: generated; the harness then failed inside JAX (v0 given as None)."""
    source = OWN_RNG.replace("def reset_state(self, batch_size=None):", "def reset_state(self, v0, batch_size=None):")
    with pytest.raises(BatchifyError) as caught:
        transform(source.encode(), "m.py", command="batchify", harness=HarnessOptions(input="constant", steps=3))
    assert any("reset_state() requires v0" in d.message for d in caught.value.diagnostics)


def test_a_loss_returning_a_name_bound_to_a_tuple_has_auxiliary_outputs(tmp_path: Path) -> None:
    """main: `res = (loss, err); return res` was taken for a loss alone: loss_fun_grad raised 'reshape requires
    ndarray or scalar arguments, got <class 'tuple'>'."""
    source = OWN_RNG.replace("self.rng.normal(0.0, 1.0, (self.n_out,))", "0.0") + (
        "\n\nmodel = OwnRNG(3, 2)\n\n\ndef loss_fun(x, y):\n    model.reset_state()\n    out = model.update(x)\n"
        "    res = (bm.mean((out - y) ** 2), bm.abs(out - y).mean())\n    return res\n")
    text = transform(source.encode(), "m.py", command="batchify", functions=["loss_fun"]).text
    assert 'loss_fun_grad = bfy.batched_grad("loss_fun_pure", has_aux=True)' in text


def test_a_loss_whose_step_function_returns_one_value_still_has_auxiliary_outputs(tmp_path: Path) -> None:
    """Probe N: `def step(u): return model.update(u)` inside the loss, which returns `(loss, aux)`: main
    took the step's return for the loss's and wrote loss_fun_grad without has_aux."""
    source = OWN_RNG.replace("self.rng.normal(0.0, 1.0, (self.n_out,))", "0.0") + (
        "\n\nmodel = OwnRNG(3, 2)\n\n\ndef loss_fun(xs, y):\n    model.reset_state()\n\n"
        "    def step(u):\n        return model.update(u)\n\n"
        "    outs = bm.for_loop(step, xs)\n    return bm.mean((outs[-1] - y) ** 2), outs.sum()\n")
    text = transform(source.encode(), "m.py", command="batchify", functions=["loss_fun"]).text
    assert 'loss_fun_grad = bfy.batched_grad("loss_fun_pure", has_aux=True)' in text


def test_a_loss_looping_over_the_model_itself_steps_its_update() -> None:
    """Probe N: `bm.for_loop(model, xs)`, the model object as the loop's body. main copied the function
    as a plain method (`bm.for_loop(self, xs)` on the batch) with no loss_fun_grad, exit 0."""
    source = OWN_RNG.replace("self.rng.normal(0.0, 1.0, (self.n_out,))", "0.0") + (
        "\n\nmodel = OwnRNG(3, 2)\n\n\ndef loss_fun(xs, y):\n    model.reset_state()\n"
        "    outs = bm.for_loop(model, xs)\n    return bm.mean((outs[-1] - y) ** 2)\n")
    text = transform(source.encode(), "m.py", command="batchify", functions=["loss_fun"]).text
    assert ("state, outs = bfy.for_loop(lambda state, *args: self.update_pure(params, state, *args), state, xs)"
            in text)
    assert 'loss_fun_grad = bfy.batched_grad("loss_fun_pure")' in text
