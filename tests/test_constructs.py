"""Equivalence on models written to exercise each supported construct (tests/models/)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import brainpy.math as bm
import numpy as np
import pytest

from batchify.equivalence import Arg, check_equivalence
from batchify.loader import load_generated, load_models

MODELS = Path(__file__).resolve().parent / "models"

CASES = {
    # id: (file, class, constructor args, method, per-example input sizes, extra shared args[, dt, scale])
    "cell": ("aliases_and_helpers", "Cell", (6,), "update", [6], ()),
    "cell-plain": ("aliases_and_helpers", "Cell", (6, "plain"), "update", [6], ()),
    "cell-gain": ("aliases_and_helpers", "Cell", (6,), "update", [6, None], (0.7,)),
    "derived": ("inherit_and_nest", "Derived", (4,), "update", [4], ()),
    "pop": ("inherit_and_nest", "Pop", (5,), "update", [5], ()),
    "circuit": ("inherit_and_nest", "Circuit", (4, 6), "update", [4], ()),
    "old-style-super": ("inherit_and_nest", "OldStyle", (4,), "update", [4], ()),
    "super-past-a-class": ("inheritance", "Bypass", (4,), "update", [4], ()),
    "base-method-through-its-class": ("inheritance", "Explicit", (4,), "update", [4], ()),
    "subclass-of-a-random-base": ("inheritance", "ScaledNoisyLeak", (4,), "update", [4], ()),
    "reset-overridden-without-init": ("inheritance", "RandomStart", (4,), "update", [4], ()),
    "reset-overridden-with-init": ("inheritance", "Adapting", (4,), "update", [4], ()),
    "noise-helper-beside-a-read": ("inheritance", "Jittered", (4,), "update", [4], ()),
    "variable-factory": ("variable_factory", "Integrator", (5,), "update", [5], ()),
    "brainpy-object": ("plain_object", "LinearTrace", (3, 4), "update", [3], ()),
    "brainpy-objects-called": ("plain_object", "Smoothed", (3, 4), "update", [3], ()),
    "brainpy-object-own-call": ("plain_object", "Accumulator", (4,), "__call__", [4], ()),
    "odeint-share": ("odeint_share", "LIF", (6,), "update", [6], (), 0.1, 200.0),
    "builtin-dense-lif": ("builtin_children", "DenseLif", (3, 5), "update", [3], (), 0.1, 3.0),
    "builtin-projection-delay-poisson": ("builtin_children", "PoissonNet", (6, 3), "update", [], (), 0.1, 1.0),
    "varlist-vardict": ("control_flow", "TraceBank", (4,), "update", [4], ()),
    "while-loop-and-ifelse": ("control_flow", "Settling", (4,), "update", [4], (), None, 1.0),
    "builtin-group-without-update": ("builtin_children", "GroupNet", (), "update", [], (), 0.1, 1.0),
    "childrens-builtins-read-by-parent": ("builtin_children", "Stack", (3, 5), "update", [3], (), 0.1, 3.0),
    "reset-state-vars": ("reset_state_vars", "IF", (5,), "update", [5], (), None, 3.0),
    "reset-state-vars-nested": ("reset_state_vars", "Mixed", (5,), "update", [5], (), 0.1, 3.0),
    "own-random-state-and-delay": ("delays_and_rng", "NoisyDelayLine", (4,), "update", [4], ()),
    "old-update-tdi-input-port": ("old_style_and_modes", "FHN", (4,), "update", [4], (), 0.1, 1.0),
    "state-named-sde-mode-optional": ("old_style_and_modes", "NoisyUnit", (4,), "update", [4], (), 0.1, 2.0),
    "old-update-t-dt": ("old_style_and_modes", "OldClock", (4,), "update", [None, None, 4], (0.5, 0.1)),
    "optional-variable-absent": ("old_style_and_modes", "NoisyUnit", (4, 0.2, False), "update", [4], (), 0.1, 2.0),
    "user-projection-classes": ("projections", "EINet", (), "update", [1], (), 0.1, 40.0),
    "respelled-trainvar": ("projections", "Readout", (4, 3), "update", [4], ()),
    "own-neuron-handed-to-projections": ("projections", "COBA", (), "update", [1], (), 0.1, 40.0),
    "classes-built-by-library-code": ("projections", "LayeredCOBA", (), "update", [1], (), 0.1, 40.0),
}


def generate(stem: str, tmp_path: Path) -> Path:
    out = tmp_path / f"{stem}_batched.py"
    subprocess.run([sys.executable, "-m", "batchify", str(MODELS / f"{stem}.py"), "-o", str(out)],
                   check=True, capture_output=True)
    return out


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("driver", ["eager", "for_loop"])
def test_construct_equivalence(case: str, driver: str, tmp_path: Path) -> None:
    stem, cls, init, method, sizes, scalars, *clock = CASES[case]
    dt, scale = clock if clock else (None, 3.0)
    original = getattr(load_models(MODELS / f"{stem}.py", f"orig_{stem}_{case}"), cls)
    batched = getattr(load_generated(generate(stem, tmp_path), f"gen_{stem}_{case}_{driver}"), f"{cls}Batched")
    rng = np.random.default_rng(1)
    steps, batch = 40, 4
    args = []
    scalar_iter = iter(scalars)
    for size in sizes:
        if size is None:
            value = next(scalar_iter)
            args.append(Arg(shared=lambda t, v=value: v))
        else:
            args.append(Arg(per_example=(rng.random((batch, steps, size)) * scale - 0.5).astype(np.float32)))
    bm.random.seed(0)
    model = original(*init)
    report = check_equivalence(model, batched, method, args, batch=batch, steps=steps, driver=driver, dt=dt)
    assert report.ok, "\n".join(map(str, report.mismatches))


def test_odeint_model_spikes_and_refracts() -> None:
    """The odeint-share case is not vacuous: neurons spike, then stay refractory."""
    model = load_models(MODELS / "odeint_share.py", "orig_odeint_probe").LIF(3)
    import brainpy as bp

    spikes = []
    for t in range(40):
        bp.share.save(i=t, t=t * 0.1, dt=0.1)
        spikes.append(np.asarray(model.update(np.full(3, 199.5, np.float32))))
    spikes = np.asarray(spikes)
    assert 1 <= spikes.sum(axis=0).min() and spikes.sum(axis=0).max() < 40


def test_variable_factory_constructor_and_reset(tmp_path: Path) -> None:
    """bp.init.variable_ in __init__ (with the batching mode) and in reset_state, through the batched class."""
    original = load_models(MODELS / "variable_factory.py", "vf_orig").Integrator
    batched_cls = load_generated(generate("variable_factory", tmp_path), "vf_gen").IntegratorBatched
    fresh = batched_cls(5, batch_size=3)
    assert fresh.V.shape == (3, 5) and fresh.V.batch_axis == 0
    assert fresh.trace.shape == (3, 5) and float(fresh.trace.value[2, 4]) == 0.5
    model = original(5)
    batched = batched_cls.from_model(model, 3)
    batched.update(np.ones((3, 5), np.float32))
    batched.reset_state(4)
    assert batched.V.shape == (4, 5) and float(np.abs(np.asarray(batched.V.value)).max()) == 0.0
    np.testing.assert_array_equal(np.asarray(batched.trace.value), np.full((4, 5), 0.5, np.float32))


@pytest.mark.parametrize("method", ["update", "gated"])
def test_control_flow_carries_the_state(method: str, tmp_path: Path) -> None:
    """bm.for_loop over a stateful method or closure, and bm.cond with a stateful branch, rewritten
    to carry the state (``_for_loop``/``_cond``), match the original run example by example."""
    original = load_models(MODELS / "control_flow.py", f"cf_orig_{method}").LoopedRNN
    batched = load_generated(generate("control_flow", tmp_path), f"cf_gen_{method}").LoopedRNNBatched
    rng = np.random.default_rng(3)
    batch, steps, inner = 3, 4, 5
    args = [Arg(per_example=(rng.random((batch, steps, inner, 2)) * 2 - 1).astype(np.float32))]
    if method == "gated":
        args.append(Arg(per_example=(rng.random((batch, steps, inner)) > 0.3).astype(np.float32)))
    bm.random.seed(0)
    model = original(2, 6)
    report = check_equivalence(model, batched, method, args, batch=batch, steps=steps)
    assert report.ok, "\n".join(map(str, report.mismatches))
    # A method that only changes weights runs as written, on the TrainVars the batch shares.
    batched.from_model(model, batch).constrain()
    assert float(abs(model.w_rec.value).max()) <= 0.5


def test_read_only_step_inside_a_scan_closure(tmp_path: Path) -> None:
    """A method that only reads weights, called inside a jax.lax.scan closure, runs in place."""
    original = load_models(MODELS / "old_style_and_modes.py", "scan_orig").ScanRNN
    batched = load_generated(generate("old_style_and_modes", tmp_path), "scan_gen").ScanRNNBatched
    rng = np.random.default_rng(4)
    args = [Arg(per_example=(rng.random((3, 4, 6, 2)) * 2 - 1).astype(np.float32))]
    bm.random.seed(0)
    report = check_equivalence(original(2, 5), batched, "update", args, batch=3, steps=4)
    assert report.ok, "\n".join(map(str, report.mismatches))


@pytest.mark.parametrize("mode", ["mean", "sum", "example"])
def test_variable_learned_online_by_the_batch(mode: str, tmp_path: Path) -> None:
    """--shared w_out=mean|sum keeps one readout for the batch, moved by the mean or sum of the
    updates each example makes from the same start; =example keeps one per example, each exactly
    the original's run on that example."""
    out = tmp_path / f"learned_{mode}.py"
    subprocess.run([sys.executable, "-m", "batchify", str(MODELS / "learned_online.py"), "-o", str(out),
                    "--shared", f"w_out={mode}"], check=True, capture_output=True)
    batched_cls = load_generated(out, f"learned_gen_{mode}").ForceBatched
    bm.random.seed(0)
    model = load_models(MODELS / "learned_online.py", f"learned_orig_{mode}").Force(3, 5, 2)
    rng = np.random.default_rng(5)
    xs = rng.random((2, 4, 3)).astype(np.float32)  # [step, example, input]
    targets = rng.random((2, 4, 2)).astype(np.float32)
    batched = batched_cls.from_model(model, 4)
    for t in range(2):  # the reference: from the batch's current state, each example's update alone
        w, h = np.asarray(batched.w_out.value), np.asarray(batched.h.value)
        new_w, new_h = [], []
        for e in range(4):
            model.w_out.value = w if mode != "example" else w[e]
            model.h.value = h[e]
            model.learn(xs[t, e], targets[t, e])
            new_w.append(np.asarray(model.w_out.value))
            new_h.append(np.asarray(model.h.value))
        if mode != "example":  # the batch shares model's very Variable (like its weights): restore it
            model.w_out.value = w
        batched.learn(xs[t], targets[t])
        want = {"mean": np.mean(new_w, 0), "sum": w + np.sum(np.stack(new_w) - w, 0), "example": np.stack(new_w)}
        np.testing.assert_allclose(np.asarray(batched.w_out.value), want[mode], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(batched.h.value), np.stack(new_h), rtol=1e-5, atol=1e-6)
    assert batched.w_out.shape == ((4, 5, 2) if mode == "example" else (5, 2))  # one copy, or one per example


def test_class_deriving_from_a_built_in_is_batched_whole_as_library_code(tmp_path: Path) -> None:
    """``class AdaptiveLif(bp.dyn.Lif)`` named with --class: its Variables are BrainPy's, so the
    generated ``AdaptiveLifBatched`` runs one example's AdaptiveLif bound to each example's values."""
    out = tmp_path / "adaptive_batched.py"
    subprocess.run([sys.executable, "-m", "batchify", str(MODELS / "reset_state_vars.py"), "-o", str(out),
                    "--class", "AdaptiveLif"], check=True, capture_output=True)
    batched = load_generated(out, "adaptive_gen").AdaptiveLifBatched
    original = load_models(MODELS / "reset_state_vars.py", "adaptive_orig", only=["AdaptiveLif"]).AdaptiveLif
    rng = np.random.default_rng(6)
    args = [Arg(per_example=(rng.random((3, 30, 4)) * 30).astype(np.float32))]
    bm.random.seed(0)
    report = check_equivalence(original(4, V_th=-55.0), batched, "update", args, batch=3, steps=30, dt=0.1)
    assert report.ok, "\n".join(map(str, report.mismatches))
