"""The generated training harness against the ORIGINAL single-example model."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import brainpy.math as bm
import jax
import jax.numpy as jnp
import jinja2
import numpy as np
import optax
import pytest
from example_specs import EXAMPLES, ROOT, SPECS

from batchify import runtime as bfy
from batchify.equivalence import restore, snapshot
from batchify.loader import load_generated, load_models

# How each example with weights is trained: harness flags, and the same semantics written
# out independently for the original model below.
HARNESS = {
    "spiking_classifier": dict(flags=["--shared", "i", "--harness-steps", "12", "--input-mode", "constant",
                                      "--readout", "sum"], readout="sum", input="constant", steps=12, time_arg=True),
    "rate_rnn": dict(flags=["--readout", "last", "--loss", "mse"], readout="last", input="sequence", loss="mse"),
    "two_layer_net": dict(flags=["--readout", "mean"], readout="mean", input="sequence"),
    "noisy_lif": dict(flags=["--readout", "sum"], readout="sum", input="sequence"),
}
BATCH, STEPS = 4, 10


def generate(stem: str, flags: list[str], tmp_path: Path) -> Path:
    out = tmp_path / f"{stem}_harness.py"
    subprocess.run([sys.executable, "-m", "batchify", str(EXAMPLES / f"{stem}.py"), "-o", str(out), "--harness",
                    *flags], check=True, cwd=ROOT)
    return out


def original_loss(model, method, x, y, cfg, spec):
    """The harness's loss, written directly against the single-example model (stateful calls),
    from the model's reset state as the seed's ``loss_fun`` starts (``model.reset_state()``)."""
    model.reset_state()
    outs = []
    steps = cfg.get("steps", STEPS) if cfg["input"] == "constant" else x.shape[0]
    for t in range(steps):
        x_t = x if cfg["input"] == "constant" else x[t]
        out = getattr(model, method)(t, x_t) if cfg.get("time_arg") else getattr(model, method)(x_t)
        outs.append(jax.tree.leaves(out, is_leaf=lambda a: isinstance(a, bm.Array))[0])
    outs = jnp.stack([jnp.asarray(o) for o in outs])
    pred = {"sum": outs.sum(0), "mean": outs.mean(0), "last": outs[-1]}[cfg["readout"]]
    if cfg.get("loss") == "mse":
        return jnp.mean((pred - y) ** 2)
    return optax.softmax_cross_entropy_with_integer_labels(pred, y)


@pytest.mark.parametrize("stem", sorted(HARNESS))
def test_harness_gradients_equal_the_original_models(stem: str, tmp_path: Path) -> None:
    spec = next(s for s in SPECS if s.stem == stem)
    cfg = HARNESS[stem]
    module = load_generated(generate(stem, cfg["flags"], tmp_path), f"harness_{stem}")
    original = getattr(load_models(spec.source, f"harness_orig_{stem}"), spec.cls)
    bm.random.seed(0)
    model = original(*spec.init)
    initial = snapshot(model)
    batched = getattr(module, f"{spec.cls}Batched").from_model(model, BATCH)
    harness = getattr(module, f"{spec.cls}Harness")(batched, steps=cfg.get("steps", STEPS))
    rng = np.random.default_rng(0)
    shape = (BATCH, spec.n_in) if cfg["input"] == "constant" else (BATCH, STEPS, spec.n_in)
    xs = jnp.asarray((rng.random(shape) * spec.scale).astype(np.float32))
    probe_key = [jax.random.PRNGKey(0)] if batched_random(batched) else []
    n_out = harness.predict(batched.params(), xs[0], *probe_key).shape[-1]
    ys = (jnp.asarray(rng.random((BATCH, n_out)).astype(np.float32)) if cfg.get("loss") == "mse"
          else jnp.asarray(rng.integers(0, n_out, BATCH).astype(np.int32)))
    params = batched.params()
    key = jax.random.PRNGKey(7)
    extra = [key] if batched_random(batched) else []
    loss, mean_grads = harness.value_and_grad(params, xs, ys, *extra)
    each = harness.per_example_grads(params, xs, ys, *extra)

    weights = model.train_vars(method="relative")
    paths = sorted(weights)
    want_each, want_losses = [], []
    for e in range(BATCH):
        restore(model, initial)
        if extra:  # the seeding rule: example e draws from fold_in(key, e)
            bm.random.DEFAULT.value = jax.random.fold_in(key, e)
        f = lambda e=e: original_loss(model, spec.method, xs[e], ys[e], cfg, spec)  # noqa: E731
        grads, value = bm.grad(f, grad_vars=[weights[p] for p in paths], return_value=True)()
        want_each.append({p: np.asarray(g) for p, g in zip(paths, grads)})
        want_losses.append(float(value))
    restore(model, initial)
    got_each = dict(bfy.param_items(each))
    got_mean = dict(bfy.param_items(mean_grads))
    np.testing.assert_allclose(float(loss), np.mean(want_losses), rtol=1e-5, atol=1e-5)
    for p in paths:
        want = np.stack([w[p] for w in want_each])
        assert np.abs(want).max() > 0, f"{p}: zero gradient, the comparison would prove nothing"
        np.testing.assert_allclose(np.asarray(got_each[p]), want, rtol=1e-5, atol=1e-5, err_msg=p)
        np.testing.assert_allclose(np.asarray(got_mean[p]), want.mean(0), rtol=1e-5, atol=1e-5, err_msg=p)


def batched_random(batched) -> bool:
    return hasattr(batched, "rng_key")


def test_digits_training_reaches_95_percent_and_resumes_from_its_checkpoint(tmp_path) -> None:
    """The bundled seed-style training script, as the README runs it, with --checkpoint (issue 16.3):
    >= 95 % test accuracy; run again on the same folder it resumes after the last epoch and ends the same."""
    command = [sys.executable, "examples/training/train_digits.py", "--no-progress", "--checkpoint",
               str(tmp_path / "ckpt"), "--history", str(tmp_path / "history.csv")]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stdout + result.stderr
    accuracy = float(result.stdout.split("test accuracy ")[1].split(",")[0])
    assert accuracy >= 0.95, result.stdout
    assert len((tmp_path / "history.csv").read_text().splitlines()) == 31  # a header and 30 epochs
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.split(" epochs in")[0] == result.stdout.split(" epochs in")[0], (result.stdout, again.stdout)


SHARDED = r"""
import json, sys
sys.path.insert(0, "examples")
import brainpy.math as bm, jax, numpy as np
from spiking_classifier import SpikingClassifier
from spiking_classifier_batched import SpikingClassifierBatched, SpikingClassifierHarness
assert len(jax.devices()) == 4, jax.devices()
rng = np.random.default_rng(0)
xs, ys = rng.random((8, 64)).astype(np.float32), rng.integers(0, 10, 8).astype(np.int32)
results = []
for devices in (jax.devices(), jax.devices()[:1]):
    bm.random.seed(0)
    model = SpikingClassifier(64, 32, 10)
    harness = SpikingClassifierHarness(SpikingClassifierBatched.from_model(model, 8), learning_rate=1e-2,
                                       devices=devices)
    params = jax.device_put(harness.model.params(), harness.replicated)
    opt_state = harness.optimizer.init(params)
    for _ in range(3):
        x, y = harness.shard((xs, ys))
        params, opt_state, loss = harness.train_step(params, opt_state, x, y)
    results.append({k: np.asarray(v).tolist() for k, v in zip(params._fields, params)})
    shards = len(x.sharding.device_set)
    results[-1]["shards"] = shards
print(json.dumps(results))
"""


def test_sharded_train_step_equals_single_device() -> None:
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAX_PLATFORMS": "cpu"}
    result = subprocess.run([sys.executable, "-c", SHARDED], cwd=ROOT, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    sharded, single = json.loads(result.stdout)
    assert sharded.pop("shards") == 4 and single.pop("shards") == 1
    for name in sharded:
        np.testing.assert_allclose(np.asarray(sharded[name]), np.asarray(single[name]), rtol=1e-5, atol=1e-6)
        assert not np.allclose(np.asarray(sharded[name]), 0)


def test_harness_golden_and_strict_templates(tmp_path: Path) -> None:
    """The committed example carries the harness (a golden: --check); templates fail on missing variables."""
    header = (EXAMPLES / "spiking_classifier_batched.py").read_text().splitlines()[1]
    assert "--harness" in header
    check = subprocess.run([sys.executable, "-m", "batchify", *header.split()[3:], "--check"], cwd=ROOT,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    from batchify.emit import environment

    template = environment().get_template("harness.py.jinja")
    with pytest.raises(jinja2.UndefinedError):
        template.render(h={"name": "Foo"})


def test_saved_params_load_into_the_original_model(tmp_path: Path) -> None:
    spec = SPECS[0]
    module = load_generated(spec.generated, "harness_io")
    original = getattr(load_models(spec.source, "harness_io_orig"), spec.cls)
    bm.random.seed(1)
    model = original(*spec.init)
    batched = module.SpikingClassifierBatched.from_model(model, 4)
    harness = module.SpikingClassifierHarness(batched)
    params = jax.tree.map(lambda a: a * 2.0, batched.params())
    path = tmp_path / "params.npz"
    harness.save_params(path, params)
    loaded = harness.load_params(path)
    bm.random.seed(2)
    fresh = original(*spec.init)
    harness.assign_params(fresh, loaded)
    np.testing.assert_array_equal(np.asarray(fresh.w_out.value), np.asarray(params.w_out))
    other = module.SpikingClassifierBatched(*spec.init, batch_size=2)
    harness.assign_params(other, loaded)
    np.testing.assert_array_equal(np.asarray(other.w_in.value), np.asarray(params.w_in))


def test_function_input_readout_and_loss_from_the_source(tmp_path: Path) -> None:
    """--input-mode/--readout/--loss function:NAME copy the source's functions and use them."""
    src = ROOT / "tests" / "models" / "windowed_readout.py"
    out = tmp_path / "windowed_batched.py"
    subprocess.run([sys.executable, "-m", "batchify", str(src), "-o", str(out), "--harness", "--harness-steps", "12",
                    "--input-mode", "function:stimulus", "--readout", "function:late_mean", "--loss", "function:hinge"],
                   check=True, cwd=ROOT)
    text = out.read_text()
    for name in ("def stimulus(t, x):", "def late_mean(outputs):", "def hinge(pred, y):", "WINDOW = (2, 9)"):
        assert name in text
    module = load_generated(out, "windowed_gen")
    source = load_generated(src, "windowed_orig")  # a plain import: this source has no side effects
    bm.random.seed(0)
    model = source.Leaky(3, 2)
    initial = snapshot(model)
    harness = module.LeakyHarness(module.LeakyBatched.from_model(model, 3), steps=12)
    rng = np.random.default_rng(0)
    xs = jnp.asarray(rng.random((3, 3)).astype(np.float32))
    ys = jnp.asarray(np.sign(rng.random((3, 2)) - 0.5).astype(np.float32))
    _, grads = harness.value_and_grad(harness.model.params(), xs, ys)
    want = []
    for e in range(3):
        restore(model, initial)

        def loss(e=e):
            outs = jnp.stack([jnp.asarray(model.update(source.stimulus(t, xs[e]))) for t in range(12)])
            return source.hinge(source.late_mean(outs), ys[e])

        want.append(np.asarray(bm.grad(loss, grad_vars=[model.w])()[0]))
    np.testing.assert_allclose(np.asarray(grads.w), np.mean(want, axis=0), rtol=1e-5, atol=1e-6)
    assert np.abs(np.asarray(grads.w)).max() > 0


def test_harness_trains_and_saves_the_weights_of_built_in_children(tmp_path: Path) -> None:
    """A model holding bp.dnn.Dense and bp.dyn.LifRef: the harness trains the built-ins' weights
    (``params.library``), saves them by their own paths, and writes them into the original."""
    out = tmp_path / "dense_lif_harness.py"
    src = ROOT / "tests" / "models" / "builtin_children.py"
    subprocess.run([sys.executable, "-m", "batchify", str(src), "-o", str(out), "--class", "DenseLif", "--harness",
                    "--harness-steps", "3", "--input-mode", "constant", "--readout", "mean", "--loss", "mse"],
                   check=True, capture_output=True)
    module = load_generated(out, "dense_lif_harness")
    bm.random.seed(0)
    original = load_models(src, "dense_lif_orig", only=["DenseLif"]).DenseLif(3, 5)
    batched = module.DenseLifBatched.from_model(original, 4, seed=0)
    harness = module.DenseLifHarness(batched, learning_rate=1e-2)
    rng = np.random.default_rng(7)
    xs, ys = rng.random((8, 3)).astype(np.float32), rng.random((8, 5)).astype(np.float32) - 60.0
    before = np.asarray(original.fc.W.value)
    params, history = harness.fit(xs, ys, epochs=2, batch_size=4, progress=False)
    assert sorted(params.library) == ["fc.W", "fc.b"]
    assert not np.allclose(np.asarray(original.fc.W.value), before)  # trained in place: the very TrainVar
    harness.save_params(tmp_path / "w.npz", params)
    loaded = harness.load_params(tmp_path / "w.npz")
    np.testing.assert_array_equal(np.asarray(loaded.library["fc.W"]), np.asarray(params.library["fc.W"]))
    original.fc.W.value = before
    harness.assign_params(original, loaded)
    np.testing.assert_array_equal(np.asarray(original.fc.W.value), np.asarray(params.library["fc.W"]))


def test_progress_comes_from_tqdm_and_is_silent_off_a_terminal() -> None:
    """Issue 16, must-show 4: no hand-written progress bar in the templates or the generated code;
    tqdm shows rate, ETA and the running loss on a terminal, and nothing when output is a pipe
    (the hand-written bar printed every batch into CI logs)."""
    fit = inspect.getsource(bfy.Harness.fit)
    assert "print(" not in fit and "tqdm.tqdm(" in fit
    assert "print(" not in (ROOT / "templates" / "harness.py.jinja").read_text()
    code = (
        "import sys; sys.path.insert(0, 'examples')\n"
        "import numpy as np\n"
        "from spiking_classifier import SpikingClassifier\n"
        "from spiking_classifier_batched import SpikingClassifierBatched, SpikingClassifierHarness\n"
        "h = SpikingClassifierHarness(SpikingClassifierBatched.from_model(SpikingClassifier(64, 8, 10), 8))\n"
        "xs = np.random.default_rng(0).random((16, 64)).astype('float32'); ys = (np.arange(16) % 10).astype('int32')\n"
        "params, history = h.fit(xs, ys, epochs=2, batch_size=8, progress=True, eval_data=(xs, ys))\n"
        "assert len(history['loss']) == 2 and len(history['eval_accuracy']) == 2\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "epoch" not in result.stdout + result.stderr and "#" not in result.stdout, result.stdout + result.stderr
