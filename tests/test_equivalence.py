"""The generated batched class against the original, example by example (B >= 4, T >= 20)."""

from __future__ import annotations

import brainpy as bp
import brainpy.math as bm
import jax
import numpy as np
import pytest
from example_specs import SPECS, Spec

from batchify.equivalence import Arg, batch_of, check_equivalence, draws_randomly, example_key, restore, run_original, snapshot, state_vars
from batchify.loader import load_generated, load_models

BATCH = 5


def load(spec: Spec):
    original = getattr(load_models(spec.source), spec.cls)
    batched = getattr(load_generated(spec.generated), f"{spec.cls}Batched")
    return original, batched


def args_for(spec: Spec, batch: int) -> list[Arg]:
    xs = spec.inputs(batch)
    args = [Arg(per_example=xs)]
    if spec.shared_time_index:
        args.insert(0, Arg(shared=lambda t: t))
    return args


def build(spec: Spec, original, seed: int = 0):
    bm.random.seed(seed)
    return original(*spec.init)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.stem)
@pytest.mark.parametrize("driver", ["eager", "for_loop"])
def test_batched_matches_original(spec: Spec, driver: str) -> None:
    original, batched = load(spec)
    model = build(spec, original)
    report = check_equivalence(model, batched, spec.method, args_for(spec, BATCH), batch=BATCH,
                               steps=spec.steps, driver=driver)
    assert report.ok, "\n".join(map(str, report.mismatches))


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.stem)
def test_examples_are_not_trivial(spec: Spec) -> None:
    """The inputs drive every example somewhere: outputs vary over time and across examples."""
    original, _ = load(spec)
    model = build(spec, original)
    initial = snapshot(model)
    args = args_for(spec, 2)
    outs = []
    for e in range(2):
        restore(model, initial)
        outs.append([jax.tree.leaves(getattr(model, spec.method)(*(a.example(e, t) for a in args)))[0]
                     for t in range(spec.steps)])
    outs = np.asarray(outs, dtype=np.float64)
    assert outs.std() > 0
    assert not np.allclose(outs[0], outs[1])


@pytest.mark.parametrize("spec", [s for s in SPECS if s.method == "update"], ids=lambda s: s.stem)
def test_dsrunner_drives_the_batched_class(spec: Spec) -> None:
    original, batched_cls = load(spec)
    model = build(spec, original)
    xs = spec.inputs(BATCH)
    initial = snapshot(model)
    random = draws_randomly(batched_cls)
    want, _ = run_original(model, "update", [Arg(per_example=xs)], BATCH, spec.steps, [initial] * BATCH,
                           seed=0 if random else None)
    batched = batch_of(batched_cls, model, BATCH, 0)
    runner = bp.DSRunner(batched, progress_bar=False)
    got = runner.run(inputs=xs)  # [B, T, ...]: DSRunner sees BatchingMode
    want = jax.tree.map(lambda *x: np.stack(x), *[jax.tree.map(lambda *s: np.stack(s), *w) for w in want])
    for w, g in zip(jax.tree.leaves(want), jax.tree.leaves(got)):
        np.testing.assert_allclose(np.asarray(g, dtype=np.float64), w.astype(np.float64), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("spec", [s for s in SPECS if s.stem != "noisy_lif"], ids=lambda s: s.stem)
def test_reset_state_and_batch_size(spec: Spec) -> None:
    original, batched_cls = load(spec)
    model = build(spec, original)
    batched = batched_cls.from_model(model, BATCH)
    args = args_for(spec, BATCH)
    for t in range(3):
        getattr(batched, spec.method)(*(a.batch(t) for a in args))
    model.reset_state()
    want = {k: np.asarray(v.value) for k, v in state_vars(model).items()}
    batched.reset_state(BATCH + 2)
    for name, var in state_vars(batched).items():
        assert var.batch_axis == 0
        assert var.shape == (BATCH + 2, *want[name].shape)
        np.testing.assert_array_equal(np.asarray(var.value), np.broadcast_to(want[name], var.shape))
    assert batched.batch_size == BATCH + 2


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.stem)
def test_constructor_shapes_and_shared_weights(spec: Spec) -> None:
    original, batched_cls = load(spec)
    bm.random.seed(3)
    model = original(*spec.init)
    bm.random.seed(3)
    fresh = batched_cls(*spec.init, batch_size=BATCH)
    reference = model.vars(method="relative")
    for name, var in fresh.vars(method="relative").items():
        if name == "rng_key":  # the batched class's per-example random keys
            assert var.shape == (BATCH, 2) and var.batch_axis == 0
            continue
        want = reference[name]
        if isinstance(want, bm.TrainVar):
            assert var.shape == want.shape
            np.testing.assert_array_equal(np.asarray(var.value), np.asarray(want.value))  # same draws
        else:
            assert var.shape == (BATCH, *want.shape) and var.batch_axis == 0
    shared = batched_cls.from_model(model, BATCH)
    for name, var in shared.train_vars(method="relative").items():
        assert var is reference[name]


@pytest.mark.parametrize("spec", [s for s in SPECS if s.stem != "lif_population"], ids=lambda s: s.stem)
def test_bm_grad_through_batched_class_matches_mean_of_original(spec: Spec) -> None:
    """bm.grad w.r.t. the batched class's train_vars() equals the mean per-example gradient."""
    original, batched_cls = load(spec)
    model = build(spec, original)
    args = args_for(spec, 4)
    steps = 8
    initial = snapshot(model)
    weights = model.train_vars(method="relative")
    names = sorted(weights)

    def run_loss(obj, pick):
        total = 0.0
        for t in range(steps):
            out = getattr(obj, spec.method)(*(pick(a, t) for a in args))
            total = total + jax.tree.leaves(out)[0].sum()
        return total

    random = draws_randomly(batched_cls)
    per_example = []
    for e in range(4):
        restore(model, initial)
        if random:
            bm.random.DEFAULT.value = example_key(0, e)
        loss = lambda: run_loss(model, lambda a, t: a.example(e, t))  # noqa: B023,E731
        grads = bm.grad(loss, grad_vars=[weights[n] for n in names])()
        per_example.append([np.asarray(g) for g in grads])
    restore(model, initial)
    batched = batch_of(batched_cls, model, 4, 0)
    mean_loss = lambda: run_loss(batched, lambda a, t: a.batch(t)) / 4  # noqa: E731
    train = batched.train_vars(method="relative")
    got = bm.grad(mean_loss, grad_vars=[train[n] for n in names])()
    for i, name in enumerate(names):
        want = np.mean([g[i] for g in per_example], axis=0)
        np.testing.assert_allclose(np.asarray(got[i]), want, rtol=1e-4, atol=1e-5, err_msg=name)
        assert np.abs(want).max() > 0, f"gradient of {name} is zero: the test would prove nothing"


def test_jit_of_batched_step() -> None:
    spec = SPECS[2]
    original, batched_cls = load(spec)
    model = build(spec, original)
    batched = batched_cls.from_model(model, BATCH)
    xs = spec.inputs(BATCH)
    step = bm.jit(lambda x: batched.update(x))
    first = step(xs[:, 0])
    assert first[0].shape == (BATCH, 2)
    assert batched.h.value.shape == (BATCH, 16)


def test_examples_in_a_batch_never_share_noise() -> None:
    """Same input, same initial state for every example: only the per-example streams differ."""
    spec = next(s for s in SPECS if s.stem == "noisy_lif")
    original, batched_cls = load(spec)
    model = build(spec, original)
    batched = batched_cls.from_model(model, 8, seed=1)
    x = np.broadcast_to(spec.inputs(1)[0, 0], (8, spec.n_in))
    outs = np.stack([np.asarray(batched.update(x)) for _ in range(10)], axis=1)  # [B, T, n]
    volts = np.asarray(batched.V.value)
    for i in range(8):
        for j in range(i):
            assert not np.array_equal(volts[i], volts[j]), (i, j)
    assert outs.sum() > 0
    keys = np.asarray(batched.rng_key.value)
    assert len({tuple(k) for k in keys}) == 8
    # Seeded batches are reproducible; different seeds differ.
    again = batched_cls.from_model(model, 8, seed=1)
    other = batched_cls.from_model(model, 8, seed=2)
    first = np.asarray(again.update(x))
    np.testing.assert_array_equal(first, outs[:, 0])
    assert not np.array_equal(np.asarray(other.rng_key.value), np.asarray(again.rng_key.value))


def test_random_reset_state_draws_per_example() -> None:
    spec = next(s for s in SPECS if s.stem == "noisy_lif")
    original, batched_cls = load(spec)
    model = build(spec, original)
    batched = batched_cls.from_model(model, 4, seed=3)
    batched.reset_state()
    volts = np.asarray(batched.V.value)
    assert len({tuple(v) for v in volts}) == 4 and (volts >= 0).all() and (volts <= 0.5).all()
    # Example i reset alone, from its key, gives the same draw.
    bm.random.DEFAULT.value = jax.random.fold_in(jax.random.PRNGKey(3), 2)
    model.reset_state()
    np.testing.assert_array_equal(np.asarray(model.V.value), volts[2])


def test_compare_counts_nan_against_a_number_and_allows_equal_infinities() -> None:
    """NaN against a number compared as ``nan > tolerance``, False: a batched model producing NaN
    passed. Equal infinities (a ``t_last_spike`` of -inf, both sides) gave err/tol inf on a PASS."""
    from batchify.equivalence import Report, compare

    nan_vs_number = Report(steps=1, batch=2)
    compare(nan_vs_number, "V", 0, np.array([1.0, 2.0]), np.array([1.0, np.nan]), 1e-5, 1e-6)
    assert nan_vs_number.mismatches and nan_vs_number.mismatches[0].example == 1
    inf_vs_number = Report(steps=1, batch=2)
    compare(inf_vs_number, "V", 0, np.array([np.inf, 2.0]), np.array([3.0, 2.0]), 1e-5, 1e-6)
    assert inf_vs_number.mismatches
    equal = Report(steps=1, batch=2)
    compare(equal, "t", 0, np.array([-np.inf, np.nan, 1.0]), np.array([-np.inf, np.nan, 1.0]), 1e-5, 1e-6)
    assert not equal.mismatches and equal.of_tolerance == 0.0
    # A mismatch beside a NaN both sides agree on: main reported "max rel error nan" (and a bare
    # NaN in the JSON report, which strict parsers reject; probe F, an AdEx gradient).
    beside_nan = Report(steps=1, batch=2)
    compare(beside_nan, "g", None, np.array([np.nan, 2.0, 0.0]), np.array([np.nan, 2.1, 0.0]), 1e-5, 1e-6)
    assert beside_nan.mismatches[0].max_rel == pytest.approx(0.05), beside_nan.mismatches[0]
    nan_vs_zero = Report(steps=1, batch=2)
    compare(nan_vs_zero, "g", None, np.array([np.nan, 0.0]), np.array([0.0, 0.0]), 1e-5, 1e-6)
    assert nan_vs_zero.mismatches[0].max_rel == float("inf")


def test_a_mean_over_examples_is_compared_at_the_scale_of_its_terms() -> None:
    """Gradients of 1e5 that cancel to a mean of 0.5: float32 summation is off by ~0.01, far past
    1e-4 of 0.5 (main: FAIL, "gradient J (mean) diverges (example 19)", an element index shown as an
    example; a chaotic RNN in probe C); at 1e-4 of the terms' mean magnitude it passes, with no
    example named, and a real error (an example dropped from the mean) still fails."""
    from batchify.equivalence import Report, compare

    each = np.array([[1e5, 3.0], [-1e5 + 1.0, 4.0]])
    want = each.mean(0)
    got = np.asarray(np.float32(each[0]) + np.float32(each[1]), np.float64) / 2 + np.array([0.01, 0.0])
    as_values = Report(steps=1, batch=2)
    compare(as_values, "gradient J (mean)", None, want, got, 1e-4, 1e-5)
    assert as_values.mismatches and as_values.mismatches[0].example == 0  # main: element 0 taken for an example
    as_mean = Report(steps=1, batch=2)
    compare(as_mean, "gradient J (mean)", None, want, got, 1e-4, 1e-5, scale=np.abs(each).mean(0))
    assert not as_mean.mismatches
    dropped = Report(steps=1, batch=2)
    compare(dropped, "gradient J (mean)", None, want, each[0] / 2, 1e-4, 1e-5, scale=np.abs(each).mean(0))
    assert dropped.mismatches and dropped.mismatches[0].example is None


def test_by_structure_frees_paths_of_automatic_node_names() -> None:
    """Two models built one after the other name their built-ins' nodes Expon2 / Expon4: the
    constructor check reported "constructor state shapes" differing (SurrogateGrad_lif's SNN)."""
    from batchify.verify import by_structure

    first = {"i2r.children.Expon2.g": 1, "r2o.children.Expon3.g": 2, "ch.children.IKDR_Ba2002v20.p": 3}
    second = {"i2r.children.Expon4.g": 10, "r2o.children.Expon5.g": 20, "ch.children.IKDR_Ba2002v21.p": 30}
    assert by_structure(first).keys() == by_structure(second).keys()
    assert by_structure(first, like=second) == {"i2r.children.Expon4.g": 1, "r2o.children.Expon5.g": 2,
                                                "ch.children.IKDR_Ba2002v21.p": 3}
    two_in_one = {"s.children.Expon7.g": 1, "s.children.Expon12.g": 2}  # numeric, not lexical, order
    assert by_structure(two_in_one, like={"s.children.Expon1.g": 0, "s.children.Expon2.g": 0}) == {
        "s.children.Expon1.g": 1, "s.children.Expon2.g": 2}
