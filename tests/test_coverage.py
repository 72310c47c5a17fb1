"""Branch coverage of the original's run (``batchify.coverage``): each choice in the user's own code
(a comparison, where, max/min, cond, while) must go every way over the run, or the check of the
way never taken could not fail. Library internals (a random draw, jnp.remainder's sign fix-up, a
built-in neuron) are not the user's choices."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import brainpy as bp
import brainpy.math as bm
import jax
import jax.numpy as jnp
import pytest

from batchify.cli import main
from batchify.coverage import Coverage, trace_and_measure

MODELS = '''
import brainpy as bp
import brainpy.math as bm
import jax
import jax.numpy as jnp
import numpy as np


class Threshold(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.V = bm.Variable(bm.zeros(n))

    def update(self, x):
        V = self.V + x
        spike = V >= 1.0
        self.V.value = bm.where(spike, 0.0, V)
        return V


class Rectified(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.r = bm.Variable(bm.zeros(n))

    def update(self, x):
        self.r.value = 0.5 * self.r + bm.relu(x)
        return self.r.value


class Looping(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.V = bm.Variable(bm.zeros(n))

    def update(self, x):
        V = bm.while_loop(drop, above, (self.V + x,))[0]
        V = jax.lax.cond(x.sum() > 9.0, jnp.zeros_like, jnp.asarray, V)
        self.V.value = V
        return V


def drop(v):
    return (v - 1.0,)


def above(v):
    return jnp.any(v >= 1.0)


class Gate(bp.DynamicalSystem):
    """An HH rate written with bm.exprel (probe J: rola_neurons.py's HH was WEAK over exprel's own where
    for x near 0); the clip beside it is the model's choice."""

    def __init__(self, n):
        super().__init__()
        self.m = bm.Variable(bm.zeros(n))

    def update(self, V):
        alpha = 1.0 / bm.exprel(-(V + 40.0) / 10.0)
        m = self.m + 0.1 * (alpha * (1 - self.m) - self.m)
        self.m.value = bm.clip(m, 0.0, 0.5)
        return self.m.value


class ReluSurrogate(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.spike_fun = bm.surrogate.ReluGrad()
        self.V = bm.Variable(bm.zeros(n))

    def update(self, x):
        V = self.V + (x - self.V) / 2.0
        spike = self.spike_fun(V - 1.0)
        self.V.value = V - spike
        return spike


class Library(bp.DynamicalSystem):
    """Only library internals choose here: a random draw, jnp.remainder, jnp.unravel_index, an
    array's .sum(), a built-in neuron (the corpus's PC_cell was WEAK over unravel_index's where)."""

    def __init__(self, n):
        super().__init__()
        self.lif = bp.dyn.Lif(n)
        self.r = bm.Variable(bm.zeros(n))

    def update(self, x):
        keep = bm.random.bernoulli(0.8, self.r.shape)
        peak = bm.unravel_index(bm.argmax(self.r.value), self.r.shape)[0]  # jnp's own where inside
        self.r.value = jnp.remainder(self.r + x * keep, 3.0) + bm.random.normal(0.0, 0.01, self.r.shape)
        self.r.value = self.r + 1e-3 * (peak + self.r.sum())  # (a method's sum: a where inside too)
        # Indexing wraps negative indices with a where (probe F: `self.I[self.idx] += 0.3` was WEAK
        # whatever the inputs), and a dynamic slice clamps its start.
        self.r[np.array([0, 1])] += 0.1
        self.r.value = self.r.at[jnp.asarray([1])].add(0.1) + self.r[jnp.argmax(self.r.value)]
        return self.lif(self.r.value)


class SubSteps(bp.DynamicalSystem):
    """Choices inside loop bodies and a cond's branch: a model stepping several sub-steps with
    bm.for_loop, a while_loop relaxing, a branch that itself chooses."""

    def __init__(self, n):
        super().__init__()
        self.V = bm.Variable(bm.zeros(n))

    def update(self, x):
        def sub_step(v):
            v = v + 0.25 * x
            return bm.where(v >= 1.0, 0.0, v)

        V = 3.0 * bm.for_loop(sub_step, self.V.value * jnp.ones((4, 1)))[-1]
        V = bm.while_loop(lambda v: (jnp.where(v > 2.0, v - 1.0, v - 0.5),), lambda v: jnp.any(v > 1.5), (V,))[0]
        V = jax.lax.cond(x.sum() > 0.0, lambda v: jnp.maximum(v, -1.0), lambda v: v, V)
        self.V.value = V
        return V


class Surrogate(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.V = bm.Variable(bm.zeros(n))

    def update(self, x):
        spike = bm.surrogate.sigmoid(self.V + x - 1.0)
        self.V.value = (self.V + x) * (1.0 - spike)
        return spike


class Configured(bp.DynamicalSystem):
    def __init__(self, n, noise=0.0):
        super().__init__()
        self.noise = noise
        self.u = bm.Variable(bm.zeros(n))

    def update(self, x):
        self.u.value = bm.where(self.noise != 0.0, self.u + self.noise, 0.9 * self.u + x)
        self.u.value = bm.where(self.u > 10.0, 10.0, self.u)
'''


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    import importlib.util

    path = tmp_path_factory.mktemp("cov") / "covmodels.py"
    path.write_text(MODELS)
    spec = importlib.util.spec_from_file_location("covmodels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(model, inputs) -> Coverage:
    found = Coverage()

    def run():
        for x in inputs:
            model.update(jnp.asarray(x))

    trace_and_measure(run, found)
    return found


def untaken(found: Coverage) -> dict[str, list[str]]:
    return {source.split("`")[1]: source.split("`: ")[1] for source in found.untaken()}


def test_a_threshold_never_crossed_is_named_with_its_lines_and_a_crossed_one_is_covered(models) -> None:
    model = models.Threshold(3)
    low = measure(model, [[0.1, 0.2, 0.3]] * 3)
    assert untaken(low) == {"spike = V >= 1.0": "the comparison was never true",
                            "self.V.value = bm.where(spike, 0.0, V)": "the where() never took its true side"}
    assert len(low.lines()) == 2
    assert measure(model, [[0.1, 0.6, 0.3]] * 3).untaken() == []
    assert float(jnp.sum(model.V.value)) == 0.0  # the traced run left the model's state alone


def test_a_choice_on_a_setting_of_the_constructor_is_not_the_inputs_to_drive(models) -> None:
    """Probe M (canns' NonRecUnits: bm.where(self.noise_0 != 0.0, ...)). main counted it as a choice the
    run took one way, so the check was WEAK with advice to drive the inputs, which cannot change it. A
    choice on the step's values is still measured."""
    found = measure(models.Configured(2), [[0.5, 0.2]] * 3)
    assert untaken(found) == {"self.u.value = bm.where(self.u > 10.0, 10.0, self.u)":
                              "the comparison was never true; the where() never took its true side"}, found.untaken()


def test_a_rectifier_never_fed_a_negative_input_is_named(models) -> None:
    model = models.Rectified(2)
    assert untaken(measure(model, [[0.5, 0.2]] * 2)) == {
        "self.r.value = 0.5 * self.r + bm.relu(x)": "max() always chose the same argument"}
    assert measure(model, [[0.5, -0.2]] * 2).untaken() == []


def test_a_while_body_that_never_ran_and_a_cond_branch_never_taken_are_named(models) -> None:
    model = models.Looping(2)
    found = untaken(measure(model, [[0.1, 0.2]] * 2))
    assert found == {"V = bm.while_loop(drop, above, (self.V + x,))[0]": "the loop body never ran",
                     "V = jax.lax.cond(x.sum() > 9.0, jnp.zeros_like, jnp.asarray, V)":
                     "the comparison was never true; branch 1 never taken"}, found
    assert measure(model, [[1.5, 0.2], [9.0, 9.0]]).untaken() == []


def test_choices_inside_loop_bodies_and_cond_branches_are_measured(models) -> None:
    """main saw only the loops' and the cond's own predicates: a reset inside a bm.for_loop body
    never taken, a while body's where() one-sided and a branch's max() never acting all passed."""
    model = models.SubSteps(2)
    found = untaken(measure(model, [[0.1, 0.2]] * 2))
    assert found == {"return bm.where(v >= 1.0, 0.0, v)":
                     "the comparison was never true; the where() never took its true side",
                     "V = bm.while_loop(lambda v: (jnp.where(v > 2.0, v - 1.0, v - 0.5),)...":
                     "the loop body never ran",
                     "V = jax.lax.cond(x.sum() > 0.0, lambda v: jnp.maximum(v, -1.0), lam...":
                     "the comparison was never false; branch 0 never taken; max() always chose the same argument"}, found
    # Driven both ways: sub-steps cross the reset, the while body runs on both sides of its where,
    # the cond takes both branches and its max() acts on a negative V.
    assert measure(model, [[3.0, 4.0], [2.5, -20.0], [30.0, -20.0], [-9.0, -9.0]]).untaken() == []


@pytest.mark.parametrize("budget", [200_000, 0, 7, 40])
def test_entered_loops_compute_what_jax_computes_and_a_spent_budget_runs_the_rest_whole(budget) -> None:
    """Entering a body must not change the run it measures: scans forward and reversed, stacked
    outputs, a while loop and a cond, evaluated with the budget spent before, inside and after
    the loops, give jax's own results, and ``cut`` counts the loops finished whole."""
    from batchify.coverage import evaluate

    def f(v, xs):
        def step(c, x):
            c = jnp.where(c + x > 1.0, 0.0, c + x)
            return c, (c * 2.0, x.sum())

        c, (ys, sums) = jax.lax.scan(step, v, xs)
        r, rys = jax.lax.scan(lambda c, x: (jnp.maximum(c - x, -1.0), c), c, xs, reverse=True)
        w = jax.lax.while_loop(lambda a: a[1] < 5, lambda a: (a[0] * 0.9 + 0.1, a[1] + 1), (r, 0))[0]
        return jax.lax.cond(w.sum() > 0.0, lambda u: u + 1.0, lambda u: u - 1.0, w), ys, sums, rys

    args = (jnp.asarray([0.3, -0.2]), jnp.linspace(-1.0, 1.0, 12).reshape(6, 2))
    closed = jax.make_jaxpr(f)(*args)
    found = Coverage(budget=budget)
    got = evaluate(closed.jaxpr, closed.consts, list(args), found)
    for a, b in zip(got, jax.tree.leaves(f(*args)), strict=True):
        assert jnp.allclose(a, b, atol=1e-6), (a, b)
    # (two scans and the while loop; a cond's branch is not a loop and is always entered)
    assert found.cut == {200_000: 0, 0: 3}.get(budget, found.cut) and (found.cut > 0) == (budget < 200_000)


def test_a_surrogate_spike_that_never_fires_is_named(models) -> None:
    model = models.Surrogate(2)
    assert untaken(measure(model, [[0.1, 0.2]] * 2)) == {
        "spike = bm.surrogate.sigmoid(self.V + x - 1.0)": "the step's input was never non-negative"}
    assert measure(model, [[0.1, 0.2], [0.95, 0.2]]).untaken() == []


def test_a_guard_inside_a_brainpy_numeric_function_is_not_the_users_choice(models) -> None:
    found = untaken(measure(models.Gate(2), [[-60.0, -50.0]] * 3))
    assert found == {"self.m.value = bm.clip(m, 0.0, 0.5)":
                     "max() always chose the same argument; min() always chose the same argument"}, found


def test_library_internals_are_not_the_users_choices(models) -> None:
    found = measure(models.Library(2), [[0.1, 0.2]] * 3)
    assert found.lines() == {}, found.seen


def run_verify(tmp_path: Path, source: str, *flags: str, capsys) -> tuple[int, dict]:
    (tmp_path / "m.py").write_text(textwrap.dedent(source))
    assert main([str(tmp_path / "m.py"), "-o", str(tmp_path / "m_batched.py")]) == 0
    capsys.readouterr()
    code = main(["verify", str(tmp_path / "m.py"), str(tmp_path / "m_batched.py"), "--no-speed", "--no-triage",
                 "--format", "json", "--strict", "--steps", "8", "--batch", "3", *flags])
    return code, json.loads(capsys.readouterr().out)["classes"][0]


ALIF = '''
import brainpy as bp
import brainpy.math as bm


class ALIF(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.w = bm.TrainVar(bm.ones(n))
        self.V = bm.Variable(bm.zeros(n))
        self.a = bm.Variable(bm.zeros(n))

    def reset_state(self, batch_size=None, level=0.0):
        self.V.value = bm.ones(self.V.shape) * level
        self.a.value = bm.zeros(self.a.shape)

    def update(self, x, inhibit=False):
        if inhibit:
            x = -x
        V = self.V + (-self.V + self.w * x - self.a) / 10.0
        spike = V >= 2.0 + 0.5 * self.a
        self.a.value = self.a + (-self.a + 0.1 * V) / 50.0 + bm.where(spike, 1.0, 0.0)
        self.V.value = bm.where(spike, -5.0, V)
        return V
'''


@pytest.mark.slow
def test_a_reset_branch_the_inputs_never_take_makes_the_check_weak(tmp_path, capsys) -> None:
    """Probe E, repros 01 and 02: every state moved, examples differed, the weight had a gradient,
    and a batched file with the reset and the adaptation bump deleted PASSed with --strict, since
    inputs in [0, 1) never reach the threshold. main printed PASS (exit 0). Now WEAK, naming the
    lines; inputs past the threshold make it a PASS (and would fail the planted bug)."""
    code, weak = run_verify(tmp_path, ALIF, "--init", "4", "--input-shape", "x=4", capsys=capsys)
    assert code == 1 and weak["verdict"] == "WEAK", weak
    (reason,) = weak["weak_reasons"]
    assert "3 of the 3 lines" in reason and "m.py:21 `spike = V >= 2.0 + 0.5 * self.a`: the comparison was never " \
           "true" in reason, reason
    assert weak["strength"]["branches"] == 3 and len(weak["strength"]["untaken"]) == 3
    code, driven = run_verify(tmp_path, ALIF, "--init", "4", "--input-shape", "x=4:float32:80.0", capsys=capsys)
    assert code == 0 and driven["verdict"] == "PASS" and driven["strength"]["untaken"] == [], driven
    # A Python branch on an argument is no choice in the traced program: the report says it was left alone.
    assert driven["strength"]["defaults_only"] == ["update(inhibit=False)", "reset_state(level=0.0)"], driven["strength"]
    code, both = run_verify(tmp_path, ALIF, "--init", "4", "--input-shape", "x=4:float32:160.0:-80.0", "--shared",
                            "inhibit=True", capsys=capsys)  # (inhibited: the negative inputs spike)
    assert code == 0 and both["strength"]["defaults_only"] == ["reset_state(level=0.0)"], both["strength"]


@pytest.mark.slow
def test_a_model_the_coverage_cannot_trace_says_so_and_keeps_its_verdict(tmp_path, capsys, monkeypatch) -> None:
    import batchify.verify as verify

    def refuse(function, coverage):
        raise RuntimeError("no tracing here")

    monkeypatch.setattr(verify, "trace_and_measure", refuse)
    code, result = run_verify(tmp_path, ALIF, "--init", "4", "--input-shape", "x=4:float32:80.0", capsys=capsys)
    assert code == 0 and result["verdict"] == "PASS", result
    assert result["strength"]["branches"] is None
    assert result["strength"]["branches_note"] == "not measured: tracing the original's run raised RuntimeError: " \
                                                  "no tracing here"


@pytest.mark.parametrize("key", [jax.random.PRNGKey(3), jax.random.key(3)], ids=["raw", "typed"])
def test_a_random_model_is_measured_whichever_key_kind_its_state_holds(key) -> None:
    """BrainPy's global RandomState holds raw uint32 data or a typed key, as it was last seeded; the
    traced program takes one of them. CI's test order gave the other and the evaluation raised
    'ArrayImpl has no attribute _impl' in random_split."""
    saved = bm.random.DEFAULT.value
    bm.random.DEFAULT.value = key
    try:
        found = Coverage()
        trace_and_measure(lambda: bm.random.normal(0.0, 1.0, (8,)) > 0.0, found)
    finally:
        bm.random.DEFAULT.value = saved
    assert list(found.lines().values()) == [[]], found.lines()


def test_a_surrogates_gradient_is_not_a_choice_its_spike_is(models) -> None:
    """Probe N: ReluGrad computes its surrogate gradient with the spike (a max inside
    surrogate_grad); main counted that max as the user's choice at the spike's line ('max() always
    chose the same argument') and called a check WEAK that took the spike both ways."""
    found = measure(models.ReluSurrogate(2), [[1.9, 0.0]] * 4)
    assert untaken(found) == {}, found.seen
    assert len(found.lines()) == 1  # the spike's Heaviside: on and off
    silent = measure(models.ReluSurrogate(2), [[0.0, 0.0]] * 2)
    assert untaken(silent) == {"spike = self.spike_fun(V - 1.0)": "the step's input was never non-negative"}
