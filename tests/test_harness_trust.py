"""Issue 10: no silent wrong result where users train (harness, reset, flags, dt).

Every test here failed on the main branch before the fix; each runs models written for it in the
style of the seed question (``tests/cases/``).
"""

from __future__ import annotations

import logging
import subprocess
import warnings
import sys
from pathlib import Path

import brainpy as bp
import brainpy.math as bm
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from batchify.loader import load_generated, load_models

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "cases"
SEED = CASES / "seed_snn.py"
HARNESS_FLAGS = ["--shared", "i", "--harness", "--harness-steps", "16", "--input-mode", "constant",
                 "--readout", "sum", "--loss", "nll_rate"]
N_IN, N_HIDDEN, N_OUT, STEPS, BATCH = 16, 24, 4, 16, 5


def batchify(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "batchify", *args], cwd=cwd, capture_output=True, text=True)


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    """The seed-style source, its original classes (as verify loads them) and its batched module."""
    out = tmp_path_factory.mktemp("seed") / "seed_snn_batched.py"
    result = batchify(str(SEED), "-o", str(out), *HARNESS_FLAGS)
    assert result.returncode == 0, result.stderr
    bm.set_dt(0.1)  # BrainPy's default: the source's own setting must come back with the module
    generated = load_generated(out, "seed_snn_batched")
    original = load_models(SEED, "seed_snn_original")
    return original, generated


def data(seed_: int = 0):
    rng = np.random.default_rng(seed_)
    xs = (rng.random((BATCH, N_IN)) * 2.0).astype(np.float32)
    ys = rng.integers(0, N_OUT, BATCH).astype(np.int32)
    return xs, ys


def original_loss(model, x, y):
    """The seed's loss_fun for one example, run on the original model (its own reset first)."""
    model.reset_state()
    outs = [model.step_run(t, jnp.asarray(x)) for t in range(STEPS)]
    rate = jnp.sum(jnp.stack([jnp.asarray(o) for o in outs]), axis=0) + 1e-6
    return -jnp.log(rate[y] / jnp.sum(rate))


def per_example_reference(model, xs, ys):
    """Loss and gradient of each example with ``bm.grad`` on the original, as the seed computes them."""
    weights = [model.w1, model.w2]
    grads, losses = [], []
    for x, y in zip(xs, ys):
        g, value = bm.grad(lambda: original_loss(model, x, y), grad_vars=weights, return_value=True)()
        grads.append([np.asarray(a) for a in g])
        losses.append(float(value))
    return np.asarray(losses), [np.stack([g[k] for g in grads]) for k in range(2)]


def step_a_few(model, x) -> None:
    for t in range(7):
        model.step_run(t, jnp.asarray(x))


def train_with_the_users_loop(model, xs, ys) -> None:
    """The seed's own single-example loop: bm.grad of the loss, a bp.optim.Adam step per example."""
    opt = bp.optim.Adam(lr=1e-2, train_vars=model.train_vars().unique())
    f = bm.grad(lambda x, y: original_loss(model, x, y), grad_vars=model.train_vars().unique())
    for x, y in zip(xs, ys):
        opt.update(f(x, y))
    step_a_few(model, xs[0])  # and leave the state where a run left it


@pytest.mark.parametrize("history", ["stepped", "trained"])
def test_rollouts_start_from_the_reset_state_whatever_the_model_did(seed, history: str) -> None:
    """Item 1: the harness starts from one example's reset state, not from the model's current one."""
    original, generated = seed
    bm.random.seed(3)
    model = original.SeedSNN(N_IN, N_HIDDEN, N_OUT)
    xs, ys = data()
    if history == "stepped":
        step_a_few(model, xs[1])
    else:
        train_with_the_users_loop(model, *data(1))
    assert np.abs(np.asarray(model.v1.value)).max() > 0.05, "the model's state must have moved"
    harness = generated.SeedSNNHarness(generated.SeedSNNBatched.from_model(model, 3))
    params = harness.model.params()
    loss, mean = harness.value_and_grad(params, jnp.asarray(xs), jnp.asarray(ys))
    each = harness.per_example_grads(params, jnp.asarray(xs), jnp.asarray(ys))
    want_losses, want = per_example_reference(model, xs, ys)
    np.testing.assert_allclose(float(loss), want_losses.mean(), rtol=1e-5)
    for name, w in zip(("w1", "w2"), want):
        assert np.abs(w).max() > 1e-4, f"{name}: a zero gradient would prove nothing"
        np.testing.assert_allclose(np.asarray(getattr(each, name)), w, rtol=1e-5, atol=1e-7, err_msg=name)
        np.testing.assert_allclose(np.asarray(getattr(mean, name)), w.mean(0), rtol=1e-5, atol=1e-7,
                                   err_msg=name)


def test_resetting_a_batched_group_resets_its_built_in_children(tmp_path: Path) -> None:
    """Item 2: reset_state(), reset() and bp.reset_state() on a group of built-ins."""
    out = tmp_path / "group_reset_batched.py"
    assert batchify(str(CASES / "group_reset.py"), "-o", str(out)).returncode == 0
    generated = load_generated(out, "group_reset_batched")
    original = load_models(CASES / "group_reset.py", "group_reset_original")
    xs = (np.random.default_rng(0).random((3, 6)) * 40.0).astype(np.float32)
    for how in ("reset_state", "reset", "bp.reset_state"):
        model = original.TwoPop()
        batched = generated.TwoPopBatched.from_model(model, 3)
        initial = batched.state().library
        for t in range(6):
            with bm.environment(dt=0.1):
                bp.share.save(i=t, t=t * 0.1, dt=0.1)
                batched.update(xs)
        assert np.abs(np.asarray(batched.state().library["E.V"]) - np.asarray(initial["E.V"])).max() > 1.0
        {"reset_state": batched.reset_state, "reset": batched.reset,
         "bp.reset_state": lambda: bp.reset_state(batched)}[how]()
        after = batched.state().library
        for path in initial:
            np.testing.assert_array_equal(np.asarray(after[path]), np.asarray(initial[path]), err_msg=f"{how}: {path}")
        # The original resets the same way, to the same values.
        model.E.V.value += 3.0
        model.reset_state()
        np.testing.assert_array_equal(np.asarray(after["E.V"][0]), np.asarray(model.E.V.value))


def test_an_input_function_that_drives_the_module_level_model_is_refused(tmp_path: Path) -> None:
    """Item 3: the seed's own `step_run(i, x)` wrapper uses `model = SeedSNN(...)`: a diagnostic at its line."""
    out = tmp_path / "out.py"
    result = batchify(str(SEED), "-o", str(out), "--shared", "i", "--harness", "--input-mode", "function:step_run")
    assert result.returncode == 1, result.stderr
    line = next(n for n, text in enumerate(SEED.read_text().splitlines(), 1) if "return model.step_run" in text)
    assert f"seed_snn.py:{line}:12: BFY014 'model'" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and not out.exists()


def test_labels_shaped_b_and_b1_mean_the_same(seed) -> None:
    """Item 4: integer labels [B] and [B, 1]: the same loss, gradients and accuracy; others refused."""
    original, generated = seed
    bm.random.seed(4)
    harness = generated.SeedSNNHarness(generated.SeedSNNBatched(N_IN, N_HIDDEN, N_OUT, batch_size=2))
    params = harness.model.params()
    xs, ys = data(2)
    flat = jnp.asarray(ys)
    column = flat[:, None]
    for a, b in zip(jax.tree.leaves(harness.per_example_grads(params, xs, flat)),
                    jax.tree.leaves(harness.per_example_grads(params, xs, column))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    loss_flat, acc_flat = harness.evaluate(params, xs, np.asarray(flat))
    loss_col, acc_col = harness.evaluate(params, xs, np.asarray(column))
    assert (loss_flat, acc_flat) == (loss_col, acc_col)
    pred = np.asarray(jax.vmap(harness.predict, in_axes=(None, 0))(params, jnp.asarray(xs))).argmax(-1)
    assert acc_flat == pytest.approx(float(np.mean(pred == ys)))
    with pytest.raises(ValueError, match=r"shaped \[B\] or \[B, 1\]"):
        harness.value_and_grad(params, xs, jnp.stack([flat, flat], axis=1))
    with pytest.raises(ValueError, match=r"integer class indices"):
        harness.value_and_grad(params, xs, flat.astype(jnp.float32))


def test_shared_names_nothing_is_a_diagnostic_and_a_forgotten_shared_says_so(tmp_path: Path) -> None:
    """Item 5: `--shared j` (a typo) at transform time; a forgotten `--shared i` at run time."""
    out = tmp_path / "out.py"
    typo = batchify(str(SEED), "-o", str(out), "--shared", "xx")
    assert typo.returncode == 1 and "BFY015 --shared xx" in typo.stderr, typo.stderr
    close = batchify(str(SEED), "-o", str(out), "--shared", "v11=mean")
    assert close.returncode == 1 and "did you mean --shared v1=mean?" in close.stderr, close.stderr
    assert not out.exists()
    assert batchify(str(SEED), "-o", str(out)).returncode == 0  # without --shared i
    generated = load_generated(out, "seed_snn_no_shared")
    batched = generated.SeedSNNBatched(N_IN, N_HIDDEN, N_OUT, batch_size=3)
    x = jnp.ones((3, N_IN))
    with pytest.raises(ValueError, match=r"'i' is per example .* --shared i"):
        bm.for_loop(lambda i: batched.step_run(i, x), bm.arange(4))
    with pytest.raises(ValueError, match=r"'x' is per example and needs a leading batch axis of size 3"):
        batched.step_run(jnp.zeros(3, dtype=jnp.int32), jnp.ones((2, N_IN)))


def test_verify_runs_built_ins_reading_the_clock_without_dt(tmp_path: Path) -> None:
    """Item 6: no --dt on a model of bp.dyn built-ins that read bp.share: the source's dt, not BFY900."""
    out = tmp_path / "group_reset_batched.py"
    assert batchify(str(CASES / "group_reset.py"), "-o", str(out)).returncode == 0
    result = batchify("verify", str(CASES / "group_reset.py"), str(out), "--input-shape", "x=6:float32:100.0",
                      "--steps", "20", "--no-speed", "--strict")  # driven until the populations spike
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BFY900" not in result.stderr and "PASS" in result.stdout, result.stdout


def test_the_sources_dt_travels_with_the_generated_module(seed) -> None:
    """Item 7: `bm.set_dt(0.5)` in the source: the generated module and its harness run at dt 0.5,
    and verification's original (the loader) too."""
    original, generated = seed
    assert bm.get_dt() == 0.5
    bm.set_dt(0.1)
    assert load_models(SEED, "seed_snn_original_again") and bm.get_dt() == 0.5
    bm.set_dt(0.1)
    reloaded = load_generated(Path(generated.__file__), "seed_snn_batched_again")
    assert bm.get_dt() == 0.5
    harness = reloaded.SeedSNNHarness(reloaded.SeedSNNBatched(N_IN, N_HIDDEN, N_OUT, batch_size=2))
    assert harness.dt == 0.5


def test_evaluate_compiles_once_per_harness(seed, caplog) -> None:
    """Item 8: evaluate keeps its compiled function; a ragged last chunk is padded, not recompiled."""
    original, generated = seed
    bm.random.seed(5)
    harness = generated.SeedSNNHarness(generated.SeedSNNBatched(N_IN, N_HIDDEN, N_OUT, batch_size=2))
    params = harness.model.params()
    rng = np.random.default_rng(0)
    xs, ys = rng.random((11, N_IN)).astype(np.float32), rng.integers(0, N_OUT, 11).astype(np.int32)
    harness.evaluate(params, xs, ys, batch_size=4)
    with caplog.at_level(logging.WARNING), jax.log_compiles(True):
        again = harness.evaluate(params, xs, ys, batch_size=4)
        harness.evaluate(params, xs[:7], ys[:7], batch_size=4)
    compiled = [r for r in caplog.records if "Compiling" in r.getMessage()]
    assert compiled == [], [r.getMessage() for r in compiled]
    # Padding changes nothing: the chunked result is the one-shot mean.
    loss = jax.vmap(harness.loss_fn, in_axes=(None, 0, 0))(params, jnp.asarray(xs), jnp.asarray(ys))
    assert again[0] == pytest.approx(float(jnp.mean(loss)), rel=1e-6)


def test_a_harness_over_a_batch_shared_variable(tmp_path: Path) -> None:
    """Item 9: `--shared w_out=mean`: the harness's one-example state keeps the shared leaf whole."""
    out = tmp_path / "force_batched.py"
    src = ROOT / "tests" / "models" / "learned_online.py"
    result = batchify(str(src), "-o", str(out), "--shared", "w_out=mean", "--harness", "--input-mode", "sequence",
                      "--readout", "last", "--loss", "mse")
    assert result.returncode == 0, result.stderr
    generated = load_generated(out, "force_batched")
    original = load_models(src, "force_original")
    bm.random.seed(0)
    model = original.Force(3, 8, 2)
    model.w_out.value = bm.random.normal(0.0, 0.5, (8, 2))
    batched = generated.ForceBatched.from_model(model, 4)
    harness = generated.ForceHarness(batched)
    x = jnp.asarray(np.random.default_rng(0).random((6, 3)).astype(np.float32))
    got = harness.predict(batched.params(), x)
    model.h.value = bm.zeros(8)  # Force defines no reset_state: it starts where it was built
    want = [np.asarray(model.update(x[t])) for t in range(6)][-1]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


def test_evaluate_compiles_at_most_twice_over_a_whole_fit(seed, caplog) -> None:
    """Issue 15, must-show 3: evaluating after every epoch of a fit compiles the evaluation at most
    twice per harness (it compiled four times per call before)."""
    original, generated = seed
    bm.random.seed(5)
    harness = generated.SeedSNNHarness(generated.SeedSNNBatched(N_IN, N_HIDDEN, N_OUT, batch_size=2))
    rng = np.random.default_rng(0)
    xs, ys = rng.random((24, N_IN)).astype(np.float32), rng.integers(0, N_OUT, 24).astype(np.int32)
    eval_x, eval_y = xs[:11], ys[:11]  # a ragged last chunk too
    with caplog.at_level(logging.WARNING), jax.log_compiles(True):
        harness.fit(xs, ys, epochs=3, batch_size=4, progress=False, eval_data=(eval_x, eval_y))
    compiled = [r.getMessage() for r in caplog.records if "Compiling" in r.getMessage()]
    evaluation = [m for m in compiled if "_evaluate_example" in m]
    assert 1 <= len(evaluation) <= 2, compiled


OPTIONAL_BIAS = '''import brainpy as bp
import brainpy.math as bm


class RNN(bp.DynamicalSystem):
    def __init__(self, n_in, n, use_bias=True):
        super().__init__()
        self.use_bias = use_bias
        self.W_in = bm.TrainVar(bm.random.normal(0., 1., (n_in, n)))
        if use_bias:
            self.b = bm.TrainVar(bm.zeros(n))
        self.W_rec = bm.TrainVar(bm.random.normal(0., 0.3, (n, n)))
        self.h = bm.Variable(bm.zeros(n))

    def update(self, x):
        h = x @ self.W_in + self.h @ self.W_rec
        if self.use_bias:
            h = h + self.b
        self.h.value = bm.tanh(h)
        return self.h.value
'''


def test_a_weight_the_constructor_leaves_out_trains_saves_and_verifies(tmp_path: Path) -> None:
    """`if use_bias: self.b = bm.TrainVar(...)` built with use_bias=False: the Params field b is None.
    main: verify crashed (BFY900 KeyError 'W_rec': its weight paths counted b, the gradient's leaves
    did not, so every later weight took its neighbour's gradient), and the harness's save_params /
    assign_params tripped over the None."""
    src = tmp_path / "rnn.py"
    src.write_text(OPTIONAL_BIAS)
    out = tmp_path / "rnn_batched.py"
    result = batchify(str(src), "-o", str(out), "--harness", "--input-mode", "sequence", "--readout", "last",
                      "--loss", "mse", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    checked = batchify("verify", str(src), str(out), "--init", "3,4,False", "--input-shape", "x=3", "--steps", "6",
                       "--no-speed", "--strict", cwd=tmp_path)
    assert checked.returncode == 0 and "PASS" in checked.stdout, checked.stdout + checked.stderr
    generated = load_generated(out, "rnn_batched")
    original = load_models(src, "rnn_original")
    bm.random.seed(0)
    model = original.RNN(3, 4, False)
    batched = generated.RNNBatched.from_model(model, 2)
    harness = generated.RNNHarness(batched, __import__("optax").sgd(0.1))
    params = batched.params()
    assert params.b is None
    rng = np.random.default_rng(0)
    xs = jnp.asarray(rng.random((2, 5, 3)).astype(np.float32))
    ys = jnp.asarray(rng.random((2, 4)).astype(np.float32))
    params, _, loss = harness.train_step(params, harness.optimizer.init(params), xs, ys)[:3]
    assert np.isfinite(float(loss)) and params.b is None
    harness.save_params(tmp_path / "w.npz", params)
    loaded = harness.load_params(tmp_path / "w.npz")
    assert loaded.b is None and np.array_equal(np.asarray(loaded.W_rec), np.asarray(params.W_rec))
    harness.assign_params(model, loaded)
    assert np.array_equal(np.asarray(model.W_rec.value), np.asarray(params.W_rec))


DICT_OUT = '''import brainpy as bp
import brainpy.math as bm


class RNN(bp.DynamicalSystem):
    def __init__(self, n_in, n_h, n_out):
        super().__init__()
        self.W_in = bm.TrainVar(bm.random.normal(0., 0.5, (n_in, n_h)))
        self.W_out = bm.TrainVar(bm.random.normal(0., 0.5, (n_h, n_out)))
        self.h = bm.Variable(bm.zeros(n_h))

    def reset_state(self, batch_size=None):
        self.h.value = bm.zeros_like(self.h)

    def update(self, x):
        self.h.value = bm.tanh(x @ self.W_in + 0.5 * self.h)
        return {"out": self.h @ self.W_out, "hidden": self.h.value}
'''


def test_a_step_returning_a_dict_of_outputs_is_not_read_by_key_order(tmp_path: Path) -> None:
    """`return {"out": ..., "hidden": ...}`: the readout took the first leaf, and JAX orders dict keys,
    so main trained the 6 hidden units against 2 classes (predict shape (6,), no error). Which entry
    is the output is now asked for (--readout function:NAME); a tuple's first stays the output."""
    src = tmp_path / "d.py"
    src.write_text(DICT_OUT)
    out = tmp_path / "d_batched.py"
    flags = ["--harness", "--input-mode", "constant", "--harness-steps", "4", "--readout", "mean", "--loss",
             "cross_entropy"]
    assert batchify(str(src), "-o", str(out), *flags, cwd=tmp_path).returncode == 0
    generated = load_generated(out, "d_batched")
    original = load_models(src, "d_original")
    bm.random.seed(0)
    harness = generated.RNNHarness(generated.RNNBatched.from_model(original.RNN(3, 6, 2), 2))
    with pytest.raises(ValueError, match=r"dict with keys \['hidden', 'out'\].*--readout function:NAME"):
        harness.predict(harness.model.params(), jnp.ones(3))
    (tmp_path / "t.py").write_text(DICT_OUT.replace('return {"out": self.h @ self.W_out, "hidden": self.h.value}',
                                                    "return self.h @ self.W_out, self.h.value"))
    assert batchify(str(tmp_path / "t.py"), "-o", str(tmp_path / "t_batched.py"), *flags, cwd=tmp_path).returncode == 0
    tupled = load_generated(tmp_path / "t_batched.py", "t_batched")
    t_original = load_models(tmp_path / "t.py", "t_original")
    harness = tupled.RNNHarness(tupled.RNNBatched.from_model(t_original.RNN(3, 6, 2), 2))
    assert harness.predict(harness.model.params(), jnp.ones(3)).shape == (2,)


TRAINING_MODE = '''import brainpy as bp
import brainpy.math as bm

bm.set_environment(bm.training_mode)


class Net(bp.DynSysGroup):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.fc = bp.dnn.Linear(n_in, n_out)
        self.r = bp.dyn.Lif(n_out, spk_fun=bm.surrogate.Sigmoid())

    def update(self, x):
        return self.r(self.fc(x))
'''


@pytest.mark.parametrize("loss", ["nll_rate", "cross_entropy"])
def test_class_scores_of_a_training_mode_model_keep_their_axis_of_one(tmp_path: Path, loss: str) -> None:
    """A model built in bm.training_mode outputs (1, n) per example. main: nll_rate indexed the axis of
    one with the label (each example's loss a vector of n, averaged: 3.62 against 1.59), and
    cross_entropy raised 'axis 1 is out of bounds'. The classification losses take the (1, n) scores
    as the n scores they are, against the original run by hand."""
    src = tmp_path / "t.py"
    src.write_text(TRAINING_MODE)
    out = tmp_path / "t_batched.py"
    assert batchify(str(src), "-o", str(out), "--harness", "--input-mode", "constant", "--harness-steps", "6",
                    "--readout", "sum", "--loss", loss, cwd=tmp_path).returncode == 0
    dt, mode = bm.get_dt(), bm.get_mode()
    try:  # the module sets BrainPy's global mode when it loads: put it back for the tests after this one
        generated = load_generated(out, f"t_batched_{loss}")
        original = load_models(src, f"t_original_{loss}")
        bm.set_dt(0.1)  # BrainPy's default (another test's module may have set its own): the inputs below spike
        check_training_mode_scores(generated, original, loss)
    finally:
        bm.set_dt(dt)
        bm.set_mode(mode)


def check_training_mode_scores(generated, original, loss: str) -> None:
    bm.random.seed(1)
    model = original.Net(4, 3)
    rng = np.random.default_rng(0)
    model.fc.W.value = bm.asarray(rng.uniform(0.0, 30.0, (4, 3)).astype(np.float32))  # strong enough to spike
    harness = generated.NetHarness(generated.NetBatched.from_model(model, 2))
    xs = jnp.asarray(rng.random((2, 4)).astype(np.float32) * 50.0)
    ys = jnp.asarray([0, 2], jnp.int32)
    want = []
    for x, y in zip(xs, ys):
        bp.reset_state(model, 1)  # BrainPy's own batch of one, as a training-mode model is built
        scores = sum(jnp.asarray(model.update(x[None])) for _ in range(6))[0]
        want.append(float(-jnp.log((scores + 1e-6)[y] / jnp.sum(scores + 1e-6))) if loss == "nll_rate"
                    else float(-jax.nn.log_softmax(scores)[y]))
    assert len({round(w, 4) for w in want}) == 2, want  # the examples differ: a check that can fail
    got = harness.evaluate(harness.model.params(), xs, ys)[0]
    np.testing.assert_allclose(got, np.mean(want), rtol=1e-5)


def test_fit_on_fewer_examples_than_a_batch_says_so(tmp_path: Path) -> None:
    """main ran no step at all (len(xs) // batch_size == 0) and returned a NaN history."""
    src = tmp_path / "d.py"
    src.write_text(DICT_OUT.replace('return {"out": self.h @ self.W_out, "hidden": self.h.value}',
                                    "return self.h @ self.W_out"))
    out = tmp_path / "d_batched.py"
    assert batchify(str(src), "-o", str(out), "--harness", "--input-mode", "constant", "--harness-steps", "3",
                    "--readout", "last", "--loss", "mse", cwd=tmp_path).returncode == 0
    generated = load_generated(out, "fit_small")
    original = load_models(src, "fit_small_original")
    harness = generated.RNNHarness(generated.RNNBatched.from_model(original.RNN(3, 4, 2), 2))
    xs, ys = np.ones((10, 3), np.float32), np.ones((10, 2), np.float32)
    with pytest.raises(ValueError, match="batch_size 64 is larger than the 10 training examples"):
        harness.fit(xs, ys, epochs=1, progress=False)
    # Whole batches: unshuffled, the same last examples would never be trained on, silently (main).
    with pytest.warns(UserWarning, match=r"the last 2 of the 10 examples are never trained on"):
        harness.fit(xs, ys, epochs=1, batch_size=4, shuffle=False, progress=False)
    with warnings.catch_warnings(record=True) as caught:  # shuffled, or batches that divide the data: nothing
        warnings.simplefilter("always")
        harness.fit(xs, ys, epochs=1, batch_size=4, progress=False)
        harness.fit(xs, ys, epochs=1, batch_size=5, shuffle=False, progress=False)
    assert not [w for w in caught if "never trained on" in str(w.message)], [str(w.message) for w in caught]


def test_a_harness_over_a_step_that_returns_nothing_is_refused(tmp_path: Path) -> None:
    """main generated it (exit 0) and the first step raised a bare IndexError."""
    src = tmp_path / "n.py"
    src.write_text('''import brainpy as bp
import brainpy.math as bm


class Rate(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.W = bm.TrainVar(bm.ones((n, n)) * 0.1)
        self.r = bm.Variable(bm.zeros(n))

    def update(self, x):
        self.r.value = bm.tanh(x + self.r @ self.W)
''')
    result = batchify(str(src), "-o", str(tmp_path / "out.py"), "--harness", "--loss", "mse", cwd=tmp_path)
    assert result.returncode == 1 and "n.py:11:5: BFY013 " in result.stderr and "returns nothing" in result.stderr, \
        result.stderr


NOISY = '''import brainpy as bp
import brainpy.math as bm


class Noisy(bp.DynamicalSystem):
    def __init__(self, n_in, n_h, n_out, sigma=0.3):
        super().__init__()
        self.sigma = sigma
        self.W = bm.TrainVar(bm.random.normal(0., 0.5, (n_in, n_h)))
        self.Wo = bm.TrainVar(bm.random.normal(0., 0.5, (n_h, n_out)))
        self.h = bm.Variable(bm.zeros(n_h))

    def reset_state(self, batch_size=None):
        self.h.value = bm.random.uniform(-0.1, 0.1, self.h.shape)

    def update(self, x):
        noise = self.sigma * bm.random.normal(size=self.h.shape)
        self.h.value = 0.7 * self.h + bm.tanh(x @ self.W) + noise
        return self.h @ self.Wo
'''


def test_evaluate_gives_example_i_the_key_every_batch_function_gives_it(tmp_path: Path) -> None:
    """A random model's example i draws from fold_in(key, i) in every batch function; main's evaluate,
    in chunks of batch_size, gave it fold_in(fold_in(key, start), i - start): 1.829 where
    value_and_grad and the original gave 1.507 for the same key."""
    src = tmp_path / "n.py"
    src.write_text(NOISY)
    out = tmp_path / "n_batched.py"
    assert batchify(str(src), "-o", str(out), "--harness", "--harness-steps", "6", "--input-mode", "constant",
                    cwd=tmp_path).returncode == 0
    generated = load_generated(out, "noisy_batched")
    original = load_models(src, "noisy_original")
    bm.random.seed(3)
    batched = generated.NoisyBatched.from_model(original.Noisy(3, 5, 3), 6)
    harness = generated.NoisyHarness(batched)
    rng = np.random.default_rng(0)
    xs = jnp.asarray(rng.normal(size=(6, 3)), jnp.float32)
    ys = jnp.asarray(rng.integers(0, 3, size=6), jnp.int32)
    key = jax.random.PRNGKey(42)
    want = float(harness.value_and_grad(batched.params(), xs, ys, key)[0])
    for size in (6, 4, 2):  # one chunk, a padded last chunk, three chunks
        np.testing.assert_allclose(harness.evaluate(batched.params(), xs, ys, batch_size=size, key=key)[0], want,
                                   rtol=1e-5)


@pytest.mark.parametrize("batch_size", [0, -4, 2.5])
def test_a_batch_size_that_is_no_number_of_examples_is_refused(seed, batch_size) -> None:
    """Probe H: fit(batch_size=0) raised a bare ZeroDivisionError, evaluate's a range() error."""
    original, generated = seed
    harness = generated.SeedSNNHarness(generated.SeedSNNBatched(N_IN, N_HIDDEN, N_OUT, batch_size=2))
    xs, ys = data(4)
    with pytest.raises(ValueError, match=r"batch_size must be a positive whole number of examples"):
        harness.fit(xs, ys, epochs=1, batch_size=batch_size, progress=False)
    with pytest.raises(ValueError, match=r"batch_size must be a positive whole number of examples"):
        harness.evaluate(harness.model.params(), xs, ys, batch_size=batch_size)


CALL_STEP = '''import brainpy as bp
import brainpy.math as bm


class Leaky(bp.DynamicalSystem):
    def __init__(self, n_in, n):
        super().__init__()
        self.W = bm.TrainVar(bm.random.normal(0., 0.3, (n_in, n)))
        self.h = bm.Variable(bm.zeros(n))

    def __call__(self, x):
        self.h.value = 0.9 * self.h + x @ self.W
        return self.h.value
'''


def test_a_harness_over_a_call_override_steps_it(tmp_path: Path) -> None:
    """Probe L (BrainPy's differentiation notebook: models whose step is __call__). main refused the
    harness ('BFY013 harness for Leaky: choose the stepping method with --harness-method (one of
    none)', with --harness-method __call__ too): private names were left out, __call__ with them; its
    template would then have called __call___pure. Now its loss is the original's, example by example."""
    src = tmp_path / "leaky.py"
    src.write_text(CALL_STEP)
    out = tmp_path / "leaky_batched.py"
    result = batchify(str(src), "-o", str(out), "--harness", "--input-mode", "sequence", "--readout", "last",
                      "--loss", "mse", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    generated = load_generated(out, "leaky_batched")
    original = load_models(src, "leaky_original")
    bm.random.seed(0)
    model = original.Leaky(3, 4)
    batched = generated.LeakyBatched.from_model(model, 2)
    harness = generated.LeakyHarness(batched)
    rng = np.random.default_rng(0)
    xs = rng.random((2, 5, 3)).astype(np.float32)
    ys = rng.random((2, 4)).astype(np.float32)
    want = []
    for x, y in zip(xs, ys):
        model.h.value = bm.zeros(4)  # (as built: the class has no reset_state of its own)
        for x_t in x:
            h = model(bm.asarray(x_t))
        want.append(float(np.mean((np.asarray(h) - y) ** 2)))
    got = [float(harness.loss_fn(batched.params(), jnp.asarray(x), jnp.asarray(y))) for x, y in zip(xs, ys)]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # verify takes __call__ as the stepping method when it is the only one (main: BFY301 '--method NAME
    # (one of __call__)'; with it given, BFY900 '... no attribute __call___pure' in the gradient check)
    checked = batchify("verify", str(src), str(out), "--init", "3,4", "--input-shape", "x=3", "--steps", "6",
                       "--no-speed", "--strict", cwd=tmp_path)
    assert checked.returncode == 0 and "PASS" in checked.stdout, checked.stdout + checked.stderr


def test_a_harness_over_a_model_with_no_weights_says_so(tmp_path: Path) -> None:
    """Probe M (canns' NonRecUnits with --harness): main generated the harness and 'fit' it with no word
    that nothing was trained."""
    src = tmp_path / "still.py"
    src.write_text(CALL_STEP.replace("bm.TrainVar(bm.random.normal(0., 0.3, (n_in, n)))",
                                     "bm.random.normal(0., 0.3, (n_in, n))"))
    out = tmp_path / "still_batched.py"
    result = batchify(str(src), "-o", str(out), "--harness", "--input-mode", "sequence", "--readout", "last",
                      "--loss", "mse", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    generated = load_generated(out, "still_batched")
    with pytest.warns(UserWarning, match="LeakyBatched has no weights \\(TrainVars\\): training it changes nothing"):
        generated.LeakyHarness(generated.LeakyBatched(3, 4, batch_size=2))
