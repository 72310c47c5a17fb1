"""A Variable made into a name of ``__init__`` and then stored on ``self``, as ``bp.dnn.Linear`` makes its
weight (``weight = bm.TrainVar(weight)`` in training mode only, then ``self.W = weight``): main refused
every such model (BFY102), among them the BrainPy tutorial's ``MaskedLinear``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import brainpy as bp
import brainpy.math as bm
import numpy as np
import pytest

from batchify import transform
from batchify.diagnostics import BatchifyError
from batchify.loader import load_generated

LAYER = textwrap.dedent('''
    import brainpy as bp
    import brainpy.math as bm


    class Leaky(bp.DynamicalSystem):
        def __init__(self, n_in, n_out, mode=None):
            super().__init__(mode=mode)
            weight = bp.init.parameter(bp.init.KaimingNormal(), (n_in, n_out))
            if isinstance(self.mode, bm.TrainingMode):
                weight = bm.TrainVar(weight)
            self.W = weight
            trace = bm.Variable(bm.zeros(n_out))
            self.h = trace

        def update(self, x):
            self.h.value = 0.8 * self.h + bm.tanh(x @ self.W)
            return self.h.value


    class Masked(bp.DynamicalSystem):
        """No state at all: a stateless layer whose weight is a TrainVar in training mode only."""

        def __init__(self, n_in, n_out, scale):
            super().__init__()
            weight = bp.init.parameter(scale, (n_in, n_out))
            if isinstance(self.mode, bm.TrainingMode):
                weight = bm.TrainVar(weight)
            self.weight = weight
            self.mask = bm.asarray(np.arange(n_in * n_out).reshape(n_in, n_out) % 2)

        def update(self, x):
            return x @ (self.weight * self.mask)
''').replace("import brainpy.math as bm\n", "import brainpy.math as bm\nimport numpy as np\n", 1)


def write(tmp_path: Path) -> tuple[Path, Path]:
    src, out = tmp_path / "layer.py", tmp_path / "layer_batched.py"
    src.write_text(LAYER)
    out.write_text(transform(LAYER.encode(), "layer.py", command="batchify layer.py").text)
    return src, out


def test_the_batched_constructor_batches_the_state_where_it_is_stored(tmp_path: Path) -> None:
    text = write(tmp_path)[1].read_text()
    assert "trace = bm.Variable(bm.zeros(n_out))\n        self.h = bfy.batched(trace, batch_size)" in text
    assert "            weight = bm.TrainVar(weight)\n        self.W = weight\n" in text
    assert "x @ params.W" in text


@pytest.mark.parametrize("mode", ["nonbatching", "training"])
@pytest.mark.parametrize("cls, init", [("Leaky", "4, 3"), ("Masked", "4, 3, 1.0")])
def test_verify_passes_with_the_weight_a_trainvar_or_a_plain_value(tmp_path: Path, cls: str, init: str,
                                                                  mode: str) -> None:
    """main: BFY102 at `weight = bm.TrainVar(weight)`. Once transformed, Masked (a plain float weight
    outside training mode, no state) failed in the batched call: 'float' object has no attribute 'value',
    and its reset: vmap must have at least one non-None value in in_axes."""
    src, out = write(tmp_path)
    checked = subprocess.run([sys.executable, "-m", "batchify", "verify", str(src), str(out), "--class", cls,
                              "--init", init, "--input-shape", "x=4", "--steps", "6", "--batch", "3",
                              "--mode", mode, "--strict", "--no-speed", "--format", "json"],
                             capture_output=True, text=True, cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    report = json.loads(checked.stdout)["classes"][0]
    assert report["verdict"] == "PASS"
    strength = report["strength"]
    assert strength["examples_differ"]
    if cls == "Leaky":
        assert strength["moved"] == 1
    if mode == "training":
        assert strength["weights"] == 1 and strength["weights_with_gradient"] == 1
    else:
        assert strength["weights"] == 0


def test_a_plain_weight_trains_and_is_written_back(tmp_path: Path) -> None:
    """Outside training mode the weight is a plain value: set_params replaces it (a float has no .value)."""
    _, out = write(tmp_path)
    module = load_generated(out, "layer_batched_plain")
    batched = module.MaskedBatched(4, 3, 2.0, batch_size=2)
    assert float(batched.params().weight) == 2.0
    batched.set_params(batched.params()._replace(weight=np.full((4, 3), 0.5, np.float32)))
    np.testing.assert_array_equal(np.asarray(batched.weight), np.full((4, 3), 0.5))
    batched.reset()  # a model with no state resets (nothing mapped: vmap is told the batch size)
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(np.asarray(batched.update(x)), x @ (0.5 * np.asarray(batched.mask)))


@pytest.mark.parametrize("use", ["self.h2 = trace", "print(trace)", "self.traces = [trace]"])
def test_a_local_variable_used_otherwise_is_refused(use: str) -> None:
    """A second name for the Variable (stored twice, handed to a call, put in a list) stays BFY102."""
    source = LAYER.replace("        self.h = trace\n", f"        self.h = trace\n        {use}\n")
    assert source != LAYER
    with pytest.raises(BatchifyError) as caught:
        transform(source.encode(), "layer.py", command="batchify layer.py")
    assert any(d.code == "BFY102" and d.line == 14 for d in caught.value.diagnostics), [
        d.format() for d in caught.value.diagnostics]


def test_the_original_is_what_verify_compares_against() -> None:
    """The source runs on BrainPy as written, in both modes (so the cases above test real models)."""
    namespace: dict = {}
    exec(compile(LAYER, "layer.py", "exec"), namespace)
    with bm.environment(mode=bm.training_mode):
        trained = namespace["Leaky"](4, 3)
    assert isinstance(trained.W, bm.TrainVar)
    assert not isinstance(namespace["Leaky"](4, 3, mode=bm.nonbatching_mode).W, bm.Variable)
    assert isinstance(bp.init.parameter(1.0, (2, 2)), float)
