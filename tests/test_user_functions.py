"""Issue 14: the user's own single-example training code, batched (``--function``).

The script is written as in the seed question (tests/cases/seed_script.py): a module-level model and
optimizer, a module-level ``step_run`` with ``bm.where`` on a stimulus window, and ``loss_fun`` with
``reset_state`` + ``bm.for_loop`` over ``functools.partial(step_run, ...)`` + ``bp.losses.nll_loss``
on labels shaped ``[1]``, returning ``(loss, acc)``. The generated batched loss and its gradients
must equal the original's ``bm.grad`` run example by example.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import textwrap
from pathlib import Path

import brainpy.math as bm
import numpy as np
import pytest

from batchify import transform
from batchify.cli import main
from batchify.diagnostics import BatchifyError
from batchify.harness import HarnessOptions
from batchify.loader import load_generated

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "cases" / "seed_script.py"
BATCH = 6


def run_as_script(path: Path, name: str):
    """The user's script imported as a module (its training code is under ``__main__``)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    out = tmp_path_factory.mktemp("seed") / "seed_script_batched.py"
    text = transform(SCRIPT.read_bytes(), "tests/cases/seed_script.py",
                     command="batchify tests/cases/seed_script.py --function loss_fun", functions=["loss_fun"]).text
    out.write_text(text)
    original = run_as_script(SCRIPT, "batchify_seed_script_original")
    return original, load_generated(out, "batchify_seed_script_batched"), text


def data(seed=0):
    rng = np.random.default_rng(seed)
    xs = (rng.random((BATCH, 12)) * 1.5).astype(np.float32)
    ys = rng.integers(0, 4, (BATCH, 1)).astype(np.int32)  # one label [1] per example, as in the seed
    return xs, ys


def test_the_generated_module_holds_the_users_functions_as_pure_methods(modules) -> None:
    _, _, text = modules
    assert "    def loss_fun_pure(self, params, state, x_single, y_single):\n" in text
    assert "    def step_run_fn_pure(self, params, state, i, x_single):\n" in text  # the module's step_run
    assert 'loss_fun_grad = bfy.batched_grad("loss_fun_pure", has_aux=True)' in text
    assert "model = RateSNN" not in text and "bp.optim.Adam" not in text  # the script's own objects stay out
    assert "def accuracy_of(" not in text  # not named, drives no model: not needed


def test_batched_loss_and_gradients_equal_the_per_example_bm_grad(modules) -> None:
    original, generated, _ = modules
    model = original.model
    train_vars = model.train_vars().unique()
    xs, ys = data()
    grad_f = bm.grad(original.loss_fun, grad_vars=train_vars, has_aux=True, return_value=True)
    want = [grad_f(xs[e], ys[e]) for e in range(BATCH)]  # (grads, loss, acc) per example
    want_losses = np.array([float(w[1]) for w in want])
    want_accs = np.array([float(w[2]) for w in want])
    assert len(set(np.round(want_losses, 6))) > 1, "examples must differ, or the check proves nothing"

    batched = generated.RateSNNBatched.from_model(model, BATCH)
    grads, losses, accs = batched.loss_fun_grad(xs, ys, train_vars=train_vars)
    assert set(grads) == set(train_vars)
    np.testing.assert_allclose(np.asarray(losses), want_losses, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(accs), want_accs)
    for key in train_vars:
        mean = np.mean([np.asarray(w[0][key]) for w in want], axis=0)
        assert np.abs(mean).max() > 0, f"{key}: a zero gradient would prove nothing"
        np.testing.assert_allclose(np.asarray(grads[key]), mean, rtol=1e-5, atol=1e-6 * np.abs(mean).max())

    each, losses_each, _ = batched.loss_fun_grad(xs, ys, train_vars=train_vars, per_example=True)
    for key in train_vars:
        stacked = np.stack([np.asarray(w[0][key]) for w in want])
        np.testing.assert_allclose(np.asarray(each[key]), stacked, rtol=1e-5, atol=1e-6 * np.abs(stacked).max())
    losses_fwd, accs_fwd = batched.loss_fun(xs, ys)  # the batched forward pass, no gradient
    np.testing.assert_allclose(np.asarray(losses_fwd), want_losses, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(accs_fwd), want_accs)


def test_the_users_own_adam_steps_lower_the_loss(modules) -> None:
    original, generated, _ = modules
    model, opt = original.model, original.opt
    train_vars = model.train_vars().unique()
    saved = {k: v.value for k, v in train_vars.items()}
    try:
        batched = generated.RateSNNBatched.from_model(model, BATCH)
        xs, ys = data(1)

        @bm.jit
        def train(x_batch, y_batch):
            grads, losses, accs = batched.loss_fun_grad(x_batch, y_batch, train_vars=train_vars)
            opt.update(grads)
            return losses.mean()

        history = [float(train(xs, ys)) for _ in range(15)]
        assert history[-1] < history[0] * 0.9, history
        # The user's optimizer trained the original model's weights (the very TrainVars).
        assert not np.allclose(np.asarray(model.w1.value), np.asarray(saved[next(iter(saved))]))
    finally:
        for k, v in train_vars.items():
            v.value = saved[k]


def test_a_function_with_a_side_effect_per_example_is_refused_at_its_line(tmp_path) -> None:
    text = SCRIPT.read_text().replace('    model.reset_state()\n',
                                      '    model.reset_state()\n    print("example", x_single)\n', 1)
    line = text.splitlines().index('    print("example", x_single)') + 1
    with pytest.raises(BatchifyError) as caught:
        transform(text.encode(), "seed.py", command="batchify seed.py", functions=["loss_fun"])
    found = [d for d in caught.value.diagnostics if d.code == "BFY214"]
    assert found and found[0].line == line, caught.value.diagnostics
    opened = SCRIPT.read_text().replace('    model.reset_state()\n',
                                        '    model.reset_state()\n    open("log.txt", "a").write("x")\n', 1)
    with pytest.raises(BatchifyError) as caught:
        transform(opened.encode(), "seed.py", command="batchify seed.py", functions=["loss_fun"])
    assert any(d.code == "BFY214" and "open" in d.message for d in caught.value.diagnostics)


def test_a_function_that_drives_no_model_is_copied_unchanged(tmp_path) -> None:
    text = transform(SCRIPT.read_bytes(), "seed.py", command="batchify seed.py",
                     functions=["loss_fun", "accuracy_of"]).text
    source = SCRIPT.read_text()
    copied = source[source.index("def accuracy_of("):source.index('\n\nif __name__')]
    assert copied in text


MODULE_INSTANCE = """
import brainpy as bp
import brainpy.math as bm


class Net(bp.DynamicalSystem):
    def __init__(self, n_in, n):
        super().__init__()
        self.w = bm.TrainVar(bm.random.normal(0.0, 1.0, (n_in, n)))
        self.h = bm.Variable(bm.zeros(n))

    def update(self, x):
        self.h.value = bm.tanh(x @ self.w + 0.5 * self.h)
        return self.h


model = Net(3, 5)


def loss(x, y):
    out = model.update(x)
    return bm.mean((out - y) ** 2), out
"""


def test_the_model_class_keeps_its_imports_when_a_function_drives_a_module_level_instance(tmp_path) -> None:
    """The class grown with the driver's methods is a new node: what the class itself reads
    (``bp`` in its base, read nowhere else) is still copied. Before: BFY900, 'bp' never bound."""
    text = transform(MODULE_INSTANCE.encode(), "net.py", command="batchify net.py", functions=["loss"]).text
    assert "import brainpy as bp\n" in text
    compile(text, "net_batched.py", "exec")


def test_an_unknown_function_is_a_diagnostic(tmp_path) -> None:
    with pytest.raises(BatchifyError) as caught:
        transform(SCRIPT.read_bytes(), "seed.py", command="batchify seed.py", functions=["loss"])
    assert caught.value.diagnostics[0].code == "BFY017"


def test_the_cli_takes_function_flags_and_records_them(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "seed.py").write_text(SCRIPT.read_text())
    assert main(["seed.py", "-o", "seed_batched.py", "--function", "loss_fun"]) == 0
    header = (tmp_path / "seed_batched.py").read_text().splitlines()[1]
    assert header == "# Regenerate: batchify seed.py -o seed_batched.py --function loss_fun"
    assert main(["seed.py", "-o", "seed_batched.py", "--function", "loss_fun", "--check"]) == 0


def test_the_seed_script_trains_on_digits_through_the_generated_code() -> None:
    """Issue 14, must-show 2: examples/training/seed_digits.py, the seed's own training code with the
    two lines that build and call grad_f changed, reaches >= 90 % test accuracy."""
    import re
    import subprocess

    root = HERE.parent
    result = subprocess.run([sys.executable, "examples/training/seed_digits.py"], cwd=root, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    accuracy = float(re.search(r"test accuracy ([0-9.]+)", result.stdout).group(1))
    assert accuracy >= 0.9, result.stdout
    # The committed generated module is what the hook would write.
    check = subprocess.run([sys.executable, "-m", "batchify", "examples/training/seed_digits.py", "-o",
                            "examples/training/seed_digits_batched.py", "--function", "loss_fun", "--check"],
                           cwd=root, capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


LAMBDA = ("functools.partial(step_run, x_single=x_single)", "lambda i: step_run(i, x_single)")
PASSED = [("def step_run(i, x_single):", "def step_run(net, i, x_single):"),
          ("    return model.step_run(i, x)", "    return net.step_run(i, x)"),
          ("def loss_fun(x_single, y_single):\n    model.reset_state()",
           "def loss_fun(net, x_single, y_single):\n    net.reset_state()"),
          ("functools.partial(step_run, x_single=x_single)", "functools.partial(step_run, net, x_single=x_single)")]


@pytest.mark.parametrize("variant", ["lambda", "instance-passed-in"])
def test_other_ways_of_writing_the_seed_script(variant, tmp_path) -> None:
    """A lambda over step_run instead of functools.partial; the model passed in as an argument."""
    text = SCRIPT.read_text()
    for old, new in ([LAMBDA] if variant == "lambda" else PASSED):
        assert old in text, old
        text = text.replace(old, new)
    script = tmp_path / f"seed_{variant.replace('-', '_')}.py"
    script.write_text(text)
    out = tmp_path / f"{script.stem}_batched.py"
    out.write_text(transform(text.encode(), script.name, command="batchify", functions=["loss_fun"]).text)
    original = run_as_script(script, f"batchify_{script.stem}")
    generated = load_generated(out, f"batchify_{script.stem}_batched")
    model = original.model
    train_vars = model.train_vars().unique()
    xs, ys = data(2)
    loss = original.loss_fun if variant == "lambda" else (lambda x, y: original.loss_fun(model, x, y))
    grad_f = bm.grad(loss, grad_vars=train_vars, has_aux=True, return_value=True)
    want = [grad_f(xs[e], ys[e]) for e in range(BATCH)]
    grads, losses, accs = generated.RateSNNBatched.from_model(model, BATCH).loss_fun_grad(xs, ys, train_vars=train_vars)
    np.testing.assert_allclose(np.asarray(losses), [float(w[1]) for w in want], rtol=1e-5, atol=1e-6)
    for key in train_vars:
        mean = np.mean([np.asarray(w[0][key]) for w in want], axis=0)
        np.testing.assert_allclose(np.asarray(grads[key]), mean, rtol=1e-5, atol=1e-6 * np.abs(mean).max())


VERIFY = ["--init", "12, 20, 4", "--method", "step_run", "--shared", "i=time", "--input-shape", "x=12",
          "--function", "loss_fun", "--input-shape", "x_single=12:float32:1.5", "--input-shape",
          "y_single=1:int32:3", "--steps", "8", "--batch", "5", "--no-speed", "--no-triage", "--format", "json"]


def test_verify_checks_the_users_function_and_catches_a_planted_bug(tmp_path, capsys) -> None:
    """``batchify verify --function loss_fun``: the loss, its outputs and its gradients (mean and per
    example) against the original run example by example with bm.grad; a wrong batched loss fails."""
    import json

    generated = tmp_path / "seed_script_batched.py"
    assert main([str(SCRIPT), "-o", str(generated), "--function", "loss_fun"]) == 0
    capsys.readouterr()
    assert main(["verify", str(SCRIPT), str(generated), *VERIFY, "--strict"]) == 0
    sections = {s["name"]: s for s in json.loads(capsys.readouterr().out)["classes"][0]["sections"]}
    assert sections["fn loss_fun"]["ok"] and sections["fn loss_fun/grad"]["ok"]
    planted = tmp_path / "planted_batched.py"
    planted.write_text(generated.read_text() + textwrap.dedent('''
        _correct = RateSNNBatched.loss_fun_pure
        def _planted(self, params, state, *args):
            state, (loss, acc) = _correct(self, params, state, *args)
            return state, (loss * 1.01, acc)
        RateSNNBatched.loss_fun_pure = _planted
    '''))
    assert main(["verify", str(SCRIPT), str(planted), *VERIFY]) == 1
    sections = {s["name"]: s for s in json.loads(capsys.readouterr().out)["classes"][0]["sections"]}
    assert not sections["fn loss_fun"]["ok"] and not sections["fn loss_fun/grad"]["ok"]
    assert sections["forward"]["ok"]  # the class itself is still right: the catch is the function check's
    # the gradients are named by the weights' attribute paths, as the stepping method's are (main
    # named them by BrainPy's automatic node names, `RateSNN0.w_in`, which differ from run to run)
    named = {m["quantity"] for m in sections["fn loss_fun/grad"]["mismatches"]}
    assert named and all(re.fullmatch(r"fn loss_fun grad (w1|w2) \((mean|example)\)", q) for q in named), named


def test_a_python_if_on_a_value_computed_from_the_state_is_refused_at_its_line() -> None:
    text = SCRIPT.read_text().replace("    acc = bm.mean(predicts.argmax(-1) == y_single)\n",
                                      "    acc = bm.mean(predicts.argmax(-1) == y_single)\n"
                                      "    if loss > 10.0:\n        loss = loss * 0.5\n", 1)
    line = text.splitlines().index("    if loss > 10.0:") + 1
    with pytest.raises(BatchifyError) as caught:
        transform(text.encode(), "seed.py", command="batchify seed.py", functions=["loss_fun"])
    found = [d for d in caught.value.diagnostics if d.code == "BFY210"]
    assert found and found[0].line == line and "loss" in found[0].message, caught.value.diagnostics
    # On configuration it stays a Python if.
    fine = SCRIPT.read_text().replace("    indices = np.arange(cfg[\"total_timepoint\"])\n",
                                      "    indices = np.arange(cfg[\"total_timepoint\"])\n"
                                      "    if len(indices) > 100:\n        indices = indices[:100]\n", 1)
    transform(fine.encode(), "seed.py", command="batchify seed.py", functions=["loss_fun"])


def test_a_harness_trains_on_the_users_own_loss(tmp_path) -> None:
    """``--function loss_fun --harness``: fit, evaluate and the gradients run on the user's loss, not on
    flag-chosen readouts; the harness's mean gradient is the per-example bm.grad's mean."""
    from batchify.harness import HarnessOptions

    text = transform(SCRIPT.read_bytes(), "seed_h.py", command="batchify", functions=["loss_fun"],
                     harness=HarnessOptions()).text
    assert "class RateSNNHarness(bfy.LossHarness, model=RateSNNBatched, has_aux=True):" in text
    out = tmp_path / "seed_h_batched.py"
    out.write_text(text)
    original = run_as_script(SCRIPT, "batchify_seed_h_original")
    generated = load_generated(out, "batchify_seed_h_batched")
    model = original.model
    batched = generated.RateSNNBatched.from_model(model, BATCH)
    harness = generated.RateSNNHarness(batched, learning_rate=2e-2)
    xs, ys = data(4)
    (loss, (losses, accs)), grads = harness.value_and_grad(batched.params(), xs, ys)
    grad_f = bm.grad(original.loss_fun, grad_vars={"w1": model.w1, "w2": model.w2}, has_aux=True, return_value=True)
    want = [grad_f(xs[e], ys[e]) for e in range(BATCH)]
    np.testing.assert_allclose(float(loss), np.mean([float(w[1]) for w in want]), rtol=1e-5)
    for name in ("w1", "w2"):
        mean = np.mean([np.asarray(w[0][name]) for w in want], axis=0)
        np.testing.assert_allclose(np.asarray(getattr(grads, name)), mean, rtol=1e-5, atol=1e-6 * np.abs(mean).max())
    rng = np.random.default_rng(5)
    train_x = (rng.random((48, 12)) * 1.5).astype(np.float32)
    train_y = rng.integers(0, 4, (48, 1)).astype(np.int32)
    before, _ = harness.evaluate(batched.params(), train_x, train_y)
    params, history = harness.fit(train_x, train_y, epochs=8, batch_size=BATCH, progress=False)
    after, accuracy = harness.evaluate(params, train_x, train_y)
    assert after < before and history["loss"][-1] < history["loss"][0], (before, after, history["loss"])
    assert accuracy is not None and 0.0 <= accuracy <= 1.0


def test_an_index_written_with_state_is_not_itself_state() -> None:
    """``record[i] = self.V`` puts state into ``record``, not into the loop index ``i`` (a corpus model's
    ``if ... and i % 2 == 0`` stays a Python if)."""
    source = textwrap.dedent('''
        import brainpy as bp
        import brainpy.math as bm


        class Rec(bp.DynamicalSystem):
            def __init__(self):
                super().__init__()
                self.v = bm.Variable(bm.zeros(3))

            def run(self, xs):
                record = bm.zeros((4, 3))
                for i in range(4):
                    self.v.value = self.v + xs[i]
                    record[i] = self.v
                    if i % 2 == 0:
                        self.v.value = self.v * 0.5
                return record
    ''')
    transform(source.encode(), "rec.py", command="batchify rec.py")
    with pytest.raises(BatchifyError, match="BFY210"):
        transform(source.replace("if i % 2 == 0:", "if record.sum() > 0:").encode(), "rec.py", command="batchify")


def test_a_harness_on_a_loss_that_does_not_reset_the_model_is_refused() -> None:
    """The harness starts every example from its reset state. On main a loss without
    ``model.reset_state()`` got a harness anyway, training on another loss than the user's (probe B:
    loss_fun_grad matched bm.grad, [1.1095, 0.6790, ...], the harness gave [1.633, 0.605, ...])."""
    text = SCRIPT.read_text().replace("    model.reset_state()\n", "", 1)
    assert "reset_state()" not in text.split("def loss_fun")[1].split("\ndef ")[0]
    with pytest.raises(BatchifyError) as caught:
        transform(text.encode(), "seed.py", command="batchify seed.py", functions=["loss_fun"],
                  harness=HarnessOptions())
    assert any(d.code == "BFY013" and "loss_fun() does not reset" in d.message for d in caught.value.diagnostics)
    # Without the harness the loss is batched as written: loss_fun_grad runs it so.
    assert "def loss_fun_pure" in transform(text.encode(), "seed.py", command="batchify seed.py",
                                            functions=["loss_fun"]).text


def test_a_function_looping_over_brainpys_inherited_step_run_is_refused_at_its_line() -> None:
    """Probe K (BrainPy's mnist_lif_readout.py: bm.for_loop(net.step_run, ...) in loss_fun). main exited
    0 and copied loss_fun unchanged (step_run is BrainPy's, so the function looked stateless): no
    loss_fun_pure or loss_fun_grad, and verify --function loss_fun said 'BFY900 internal error:
    AttributeError: 'SNNBatched' object has no attribute 'loss_fun_grad''. As in a method: BFY221."""
    text = textwrap.dedent('''
        import numpy as np

        import brainpy as bp
        import brainpy.math as bm


        class SNN(bp.DynamicalSystem):
            def __init__(self, n_in, n_out):
                super().__init__()
                self.l1 = bp.dnn.Dense(n_in, n_out)
                self.l2 = bp.dyn.Lif(n_out, V_th=1.)

            def update(self, x):
                return x >> self.l1 >> self.l2


        net = SNN(8, 4)


        def loss_fun(xs, ys):
            net.reset_state()
            outs = bm.for_loop(net.step_run, (np.arange(10), xs))
            return bm.mean((outs.mean(0) - ys) ** 2)
    ''')
    line = text.splitlines().index("    outs = bm.for_loop(net.step_run, (np.arange(10), xs))") + 1
    with pytest.raises(BatchifyError) as caught:
        transform(text.encode(), "snn.py", command="batchify snn.py", functions=["loss_fun"])
    found = [d for d in caught.value.diagnostics if d.code == "BFY221"]
    assert found and found[0].line == line and "loss_fun()" in found[0].message, caught.value.diagnostics
    assert "loss_fun() runs net.step_run, BrainPy's inherited step_run" in found[0].message  # (probe L: self.)
