"""The batched model under BrainPy's own runner, against the original run example by example.

``bp.DSRunner`` (and ``step_run``) clear every node's inputs after each step (``bp.clear_input``).
Its sweep reaches a built-in's one-example object, not the batch's values the library holds, so
on main a legacy neuron's ``input`` port grew step after step in the batched model only: a
network stepping one with a current was off by 7.6-9.2 mV, and a class batched whole driven
through its port (``inputs=[('input', 20.)]``) saw 20, 40, 60, ... while verify PASSed both.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow

LEGACY_CHILD = '''import brainpy as bp
import brainpy.math as bm


class Net(bp.DynSysGroup):
    def __init__(self, n_in, n):
        super().__init__()
        self.E = bp.neurons.LIF(n, V_rest=-60., V_th=-50., V_reset=-60., tau=20., tau_ref=2.)
        self.w = bm.TrainVar(bm.ones((n_in, n)) * 4.0)
        self.trace = bm.Variable(bm.zeros(n))

    def update(self, x):
        spike = self.E(x @ self.w)
        self.trace.value = 0.9 * self.trace + spike
        return self.E.V.value
'''

WHOLE = '''import brainpy as bp
import brainpy.math as bm


class MyLIF(bp.neurons.LIF):
    def __init__(self, n):
        super().__init__(n, V_rest=-60., V_th=-50., V_reset=-60., tau=20., tau_ref=5.)
        self.rate = bm.Variable(bm.zeros(n))

    def update(self, x=None):
        spk = super().update(x)
        self.rate.value = 0.9 * self.rate + self.spike
        return spk
'''


def generated(tmp_path: Path, name: str, text: str):
    src = tmp_path / f"{name}.py"
    src.write_text(text)
    out = tmp_path / f"{name}_batched.py"
    result = subprocess.run([sys.executable, "-m", "batchify", str(src), "-o", str(out)], capture_output=True,
                            text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name), importlib.import_module(f"{name}_batched")
    finally:
        sys.path.remove(str(tmp_path))


def test_a_legacy_neuron_stepped_with_a_current_runs_as_the_original_under_dsrunner(tmp_path: Path) -> None:
    import brainpy as bp

    original, batched = generated(tmp_path, "legacy_child", LEGACY_CHILD)
    xs = (np.random.default_rng(0).random((3, 120, 4)) * 2.0).astype(np.float32)
    model = batched.NetBatched.from_model(original.Net(4, 5), batch_size=3)
    got = np.asarray(bp.DSRunner(model, progress_bar=False).run(inputs=xs))
    for e in range(3):
        want = np.asarray(bp.DSRunner(original.Net(4, 5), progress_bar=False).run(inputs=xs[e]))
        assert want.max() > -59.0  # the neurons integrate (and spike: V back at -60)
        np.testing.assert_allclose(got[e], want, atol=1e-4)


def test_a_class_batched_whole_takes_dsrunners_input_port_as_the_original(tmp_path: Path) -> None:
    import brainpy as bp

    original, batched = generated(tmp_path, "whole", WHOLE)
    model = batched.MyLIFBatched.from_model(original.MyLIF(5), batch_size=2)
    runner = bp.DSRunner(model, inputs=[("input", 20.0)], monitors=["V", "input"], progress_bar=False)
    runner.run(20.0)
    reference = bp.DSRunner(original.MyLIF(5), inputs=[("input", 20.0)], monitors=["V"], progress_bar=False)
    reference.run(20.0)
    want = np.asarray(reference.mon["V"])
    assert want.std() > 1.0
    for e in range(2):
        np.testing.assert_allclose(np.asarray(runner.mon["V"])[e], want, atol=1e-4)
    assert np.all(np.asarray(runner.mon["input"]) == 20.0)  # cleared after every step, as the original's


def test_verify_clears_inputs_after_each_step_as_dsrunner_does(tmp_path: Path) -> None:
    """verify steps both models as DSRunner does, so a batch whose ports are not cleared fails."""
    src = tmp_path / "legacy_child.py"
    src.write_text(LEGACY_CHILD)
    out = tmp_path / "legacy_child_batched.py"
    assert subprocess.run([sys.executable, "-m", "batchify", str(src), "-o", str(out)], cwd=tmp_path).returncode == 0
    args = ["verify", str(src), str(out), "--init", "4, 5", "--input-shape", "x=4:float32:2.0", "--steps", "60",
            "--dt", "0.1", "--no-speed", "--strict"]
    passed = subprocess.run([sys.executable, "-m", "batchify", *args], capture_output=True, text=True, cwd=tmp_path)
    assert passed.returncode == 0 and "PASS" in passed.stdout, passed.stdout + passed.stderr
    # The same batch with its clearing undone (what main generated code ran with) fails.
    out.write_text(out.read_text() + "\n\nNetBatched.clear_input = bp.DynamicalSystem.clear_input\n")
    failed = subprocess.run([sys.executable, "-m", "batchify", *args], capture_output=True, text=True, cwd=tmp_path)
    assert failed.returncode == 1 and "FAIL" in failed.stdout, failed.stdout + failed.stderr


def test_monitors_and_inputs_by_path_under_a_built_in_child_reach_the_batch(tmp_path: Path) -> None:
    """``monitors=['E.V']`` and ``inputs=[('E.V', 0.5, 'fix', '+')]`` resolve ``batched.E.V``: the
    batch's Variable. On main ``batched.E`` was the one-example built-in the library runs: the monitor
    read a stale copy of shape (n,) that only took the runner's input, and the batch never got it
    (the output went on without the +0.5 mV per step)."""
    import brainpy as bp
    import brainpy.math as bm

    original, batched = generated(tmp_path, "legacy_child", LEGACY_CHILD)
    xs = (np.random.default_rng(1).random((3, 80, 4)) * 0.5).astype(np.float32)
    model = batched.NetBatched.from_model(original.Net(4, 5), batch_size=3)
    runner = bp.DSRunner(model, inputs=[("E.V", 0.5, "fix", "+")], monitors=["E.V", "trace"], progress_bar=False)
    got = np.asarray(runner.run(inputs=xs))
    assert np.asarray(runner.mon["E.V"]).shape == (3, 80, 5)
    for e in range(3):
        one = original.Net(4, 5)
        reference = bp.DSRunner(one, inputs=[("E.V", 0.5, "fix", "+")], monitors=["E.V", "trace"], progress_bar=False)
        want = np.asarray(reference.run(inputs=xs[e]))
        assert np.asarray(reference.mon["trace"]).max() > 0.5  # the runner's input makes the neurons spike
        np.testing.assert_allclose(got[e], want, atol=1e-4)
        np.testing.assert_allclose(np.asarray(runner.mon["E.V"])[e], np.asarray(reference.mon["E.V"]), atol=1e-4)
        np.testing.assert_allclose(np.asarray(runner.mon["trace"])[e], np.asarray(reference.mon["trace"]), atol=1e-4)
    # Read by path as a user would: the batch's Variable, one row an example; the built-in's own kind.
    assert model.E.V.shape == (3, 5) and model.E.V.batch_axis == 0
    assert isinstance(model.E, bp.neurons.LIF) and model.E.num == 5
    np.testing.assert_allclose(np.asarray(model.E.V.value), np.asarray(runner.mon["E.V"])[:, -1], atol=1e-6)
    # The original the batch was made from keeps its own one-example Variables.
    assert original.Net(4, 5).E.V.shape == (5,)
    assert isinstance(model.w, bm.TrainVar)
