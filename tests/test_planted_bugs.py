"""Issue 12, must-show 1: a verification that could not have failed is no proof. Copies of the
bundled examples' generated modules, each with one planted bug, must be caught by
``batchify verify`` with the default driving flags (the examples' pyproject tables).

Each bug is appended to the copy as a redefinition, so it is the same bug whatever the model:
- ``scaled``: the stepping method's new state scaled by 1.01;
- ``shared``: every example's state replaced by example 0's after each batched step;
- ``reordered``: the examples' states reversed after each batched step;
- ``stop_gradient``: a ``stop_gradient`` on the first weight the stepping method reads;
- ``one_key``: every example drawing from the same random key;
- ``reset``: ``reset()`` (``bp.reset_state``'s order) leaving every float state 1 % off;
- ``constructor``: ``FooBatched(..., batch_size=B)`` building weights and state 1 % off (what
  ``from_model``, the path the other checks take, builds right).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import jax.numpy as jnp

from batchify import runtime
from batchify.cli import main

ROOT = Path(__file__).resolve().parent.parent

EXAMPLES = {  # stem: (class, stepping method, has weights, draws randomly)
    "rate_rnn": ("RateRNN", "update", True, False),
    "two_layer_net": ("TwoLayerNet", "update", True, False),
    "spiking_classifier": ("SpikingClassifier", "step_run", True, False),
    "lif_population": ("LIFPopulation", "update", False, False),
    "noisy_lif": ("NoisyLIF", "update", True, True),
}

PLANTED = {
    "scaled": '''
_correct = {cls}Batched.{method}_pure
def _planted(self, params, state, *args):
    state, out = _correct(self, params, state, *args)
    return jax.tree.map(lambda v: v * 1.01 if jnp.issubdtype(v.dtype, jnp.floating) else v, state), out
{cls}Batched.{method}_pure = _planted
''',
    "shared": '''
_correct = {cls}Batched.set_state
{cls}Batched.set_state = lambda self, state: _correct(
    self, jax.tree.map(lambda v: jnp.broadcast_to(v[:1], v.shape), state))
''',
    "reordered": '''
_correct = {cls}Batched.set_state
{cls}Batched.set_state = lambda self, state: _correct(self, jax.tree.map(lambda v: v[::-1], state))
''',
    "stop_gradient": '''
_correct = {cls}Batched.{method}_pure
def _planted(self, params, state, *args):
    first = params._fields[0]
    params = params._replace(**{{first: jax.lax.stop_gradient(getattr(params, first))}})
    return _correct(self, params, state, *args)
{cls}Batched.{method}_pure = _planted
''',
    "one_key": "",  # bfy.example_keys gives every example example 0's key (set in the test)
    "reset": '''
_correct = {cls}Batched.reset_all_example
{cls}Batched.reset_all_example = lambda self, params, state: jax.tree.map(
    lambda v: v * 1.01 + 0.01 if jnp.issubdtype(v.dtype, jnp.floating) else v, _correct(self, params, state))
''',
    "constructor": '''
_correct = {cls}Batched.__init__
def _planted(self, *args, **kwargs):
    _correct(self, *args, **kwargs)
    off = lambda v: v * 1.01 + 0.01 if jnp.issubdtype(v.dtype, jnp.floating) else v
    self.set_params(jax.tree.map(off, self.params()))
    self.set_state(jax.tree.map(off, self.state()))
{cls}Batched.__init__ = _planted
''',
}


def cases():
    for stem, (cls, method, weights, random) in EXAMPLES.items():
        for bug in PLANTED:
            if (bug == "stop_gradient" and not weights) or (bug == "one_key" and not random):
                continue
            yield pytest.param(stem, cls, method, bug, id=f"{stem}-{bug}")


def verify(generated: Path, stem: str, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["verify", f"examples/{stem}.py", str(generated), "--no-speed", "--no-triage", "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("stem,cls,method,bug", list(cases()))
def test_a_planted_bug_is_caught(stem, cls, method, bug, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)  # the examples' verify tables are in the project's pyproject.toml
    text = (ROOT / "examples" / f"{stem}_batched.py").read_text()
    planted = tmp_path / f"{stem}_batched.py"
    planted.write_text(text + "\nimport jax\nimport jax.numpy as jnp\n" + PLANTED[bug].format(cls=cls, method=method))
    if bug == "one_key":  # in the runtime, for this test only (verify runs in this process)
        correct = runtime.example_keys
        monkeypatch.setattr(runtime, "example_keys", lambda *args: jnp.broadcast_to(
            correct(*args)[:1], correct(*args).shape))
    code, report = verify(planted, stem, capsys)
    assert code == 1 and report["classes"][0]["verdict"].startswith("FAIL"), report
    # The report's error over tolerance says so too: past 1 where a section mismatched.
    failed = [s for s in report["classes"][0]["sections"] if not s["ok"] and not s["skipped"]]
    assert failed and all(s["of_tolerance"] > 1 for s in failed), failed


@pytest.mark.parametrize("stem", list(EXAMPLES))
def test_the_unplanted_copies_pass_in_full(stem, tmp_path, capsys, monkeypatch) -> None:
    """The same copies without a bug pass, and not weakly: the catches above are the bugs'."""
    monkeypatch.chdir(ROOT)
    copy = tmp_path / f"{stem}_batched.py"
    copy.write_text((ROOT / "examples" / f"{stem}_batched.py").read_text())
    code, report = verify(copy, stem, capsys)
    result = report["classes"][0]
    assert code == 0 and result["verdict"] == "PASS", result
    strength = result["strength"]
    # Every state moves but an input port, cleared after each step as DSRunner clears it (seen as 0).
    assert strength["state_leaves"] > 0 and strength["examples_differ"], strength
    assert all(name.split(".")[-1] == "input" for name in strength["unmoved"]), strength
    assert strength["moved"] == strength["state_leaves"] - len(strength["unmoved"]) > 0, strength
    assert all(s["of_tolerance"] <= 1 for s in result["sections"]), result["sections"]
    assert strength["weights_with_gradient"] in (None, strength["weights"]), strength


FREE_RUNNING = '''import brainpy as bp
import brainpy.math as bm


class Oscillators(bp.DynamicalSystem):
    """Coupled FitzHugh-Nagumo units with no input: every example alike unless its start differs."""

    def __init__(self, n, a=0.7, b=0.8, tau=12.5, g=0.3):
        super().__init__()
        self.a, self.b, self.tau, self.g = a, b, tau, g
        self.V = bm.Variable(bm.linspace(-1.0, 1.0, n))
        self.w = bm.Variable(bm.zeros(n))

    def update(self):
        coupling = self.g * (bm.mean(self.V) - self.V)
        dV = self.V - self.V ** 3 / 3 - self.w + 0.5 + coupling
        self.V.value = self.V + 0.1 * dV
        self.w.value = self.w + 0.1 * (self.V + self.a - self.b * self.w) / self.tau
        return self.V.value
'''


@pytest.mark.parametrize("bug", ["shared", "reordered"])
def test_a_free_running_model_catches_mixed_examples_only_from_perturbed_starts(bug, tmp_path, capsys,
                                                                               monkeypatch) -> None:
    """Without per-example inputs every example runs the same trajectory, so sharing or reordering
    examples cannot show: before this issue such a check was a PASS; now it is WEAK with every
    example starting alike (--perturb 0) and a FAIL with the default perturbed starts."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "osc.py").write_text(FREE_RUNNING)
    assert main(["osc.py", "-o", "osc_batched.py"]) == 0
    planted = tmp_path / "osc_batched.py"
    planted.write_text(planted.read_text() + "\nimport jax\nimport jax.numpy as jnp\n"
                       + PLANTED[bug].format(cls="Oscillators", method="update"))
    flags = ["verify", "osc.py", "osc_batched.py", "--init", "5", "--steps", "10", "--no-speed", "--no-triage",
             "--format", "json"]
    capsys.readouterr()
    assert main([*flags, "--perturb", "0", "--strict"]) == 1
    alike = json.loads(capsys.readouterr().out)["classes"][0]
    assert alike["verdict"] == "WEAK" and any("same" in r for r in alike["weak_reasons"]), alike
    assert main(flags) == 1
    assert json.loads(capsys.readouterr().out)["classes"][0]["verdict"].startswith("FAIL")


GATED = '''import brainpy as bp
import brainpy.math as bm


class Gated(bp.DynamicalSystem):
    """w_burst matters only where an input exceeds 2; w_read is read by readout(), not by update."""

    def __init__(self, n):
        super().__init__()
        self.w = bm.TrainVar(bm.ones(n) * 0.5)
        self.w_burst = bm.TrainVar(bm.ones(n) * 0.3)
        self.w_read = bm.TrainVar(bm.ones(n))
        self.h = bm.Variable(bm.zeros(n))

    def update(self, x):
        burst = bm.where(x > 2.0, self.w_burst * x, 0.0)
        self.h.value = 0.9 * self.h + self.w * x + burst
        return self.h.value

    def readout(self):
        return self.w_read * self.h
'''


def test_a_weight_the_step_reads_but_no_gradient_reaches_is_weak(tmp_path, capsys, monkeypatch) -> None:
    """Inputs in [0, 1) never take the branch that uses w_burst, so its gradient is zero in every
    example, original and batched alike: a dropped burst term would pass. main called this a full
    PASS (2 of 3 weights with a gradient, the third not read by update). Now WEAK, naming w_burst and
    not w_read; inputs scaled past the threshold make it a PASS."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gated.py").write_text(GATED)
    assert main(["gated.py", "-o", "gated_batched.py"]) == 0
    flags = ["verify", "gated.py", "gated_batched.py", "--init", "4", "--steps", "6", "--no-speed", "--no-triage",
             "--format", "json", "--strict"]
    capsys.readouterr()
    assert main([*flags, "--input-shape", "x=4"]) == 1
    weak = json.loads(capsys.readouterr().out)["classes"][0]
    assert weak["verdict"] == "WEAK", weak
    # Two ways of saying it: no gradient reached w_burst, and the branch that reads it never ran.
    reason, branch = weak["weak_reasons"]
    assert "w_burst" in reason and "w_read" not in reason, reason
    assert "gated.py:16 `burst = bm.where(x > 2.0, self.w_burst * x, 0.0)`: the comparison was never true; the " \
           "where() never took its true side" in branch, branch
    assert weak["strength"]["weights_without_gradient"] == ["w_burst"], weak["strength"]
    # w_read is not touched by update() at all: no gradient to check there (a weight feeding the state
    # only would be named here, and be WEAK: tests/test_verify.py)
    assert weak["strength"]["weights_outside_loss"] == [], weak["strength"]
    assert main([*flags, "--input-shape", "x=4:float32:4.0"]) == 0
    driven = json.loads(capsys.readouterr().out)["classes"][0]
    assert driven["verdict"] == "PASS" and driven["strength"]["weights_without_gradient"] == [], driven


def test_read_leaves_follows_what_reaches_the_result() -> None:
    """What the WEAK rule above calls 'read': a leaf whose value reaches the result, through a
    nested jit too; a value computed and thrown away is not read; inside a loop, a read counts."""
    import jax
    import jax.numpy as jnp

    from batchify.verify import read_leaves

    tree = {"used": jnp.ones(3), "dropped": jnp.ones(3), "jitted": jnp.ones(3), "looped": jnp.ones(3),
            "unused": jnp.ones(3)}

    def function(p):
        _ = p["dropped"] * 2.0  # computed, never reaching the result
        inner = jax.jit(lambda a, b: a.sum())(p["jitted"], p["unused"])  # b passed in, never read
        looped = jax.lax.fori_loop(0, 3, lambda i, c: c + p["looped"], jnp.zeros(3)).sum()
        return p["used"].sum() + inner + looped

    read = read_leaves(function, tree)
    assert read == {"used": True, "dropped": False, "jitted": True, "looped": True, "unused": False}, read


PHASED = '''import brainpy as bp
import brainpy.math as bm


class Phased(bp.DynamicalSystem):
    """A gain that cycles with an integer phase counter, and a boolean refractory flag."""

    def __init__(self, n, period=3):
        super().__init__()
        self.period = period
        self.phase = bm.Variable(bm.zeros(n, dtype=bm.int32))
        self.refractory = bm.Variable(bm.zeros(n, dtype=bool))
        self.V = bm.Variable(bm.zeros(n))

    def update(self, x):
        gain = bm.where(self.phase == 0, 2.0, 1.0)
        V = bm.where(self.refractory, 0.0, 0.9 * self.V + gain * x)
        spike = V > 1.0
        self.refractory.value = spike
        self.V.value = bm.where(spike, 0.0, V)
        self.phase.value = (self.phase + 1) % self.period
        return self.V.value
'''


def test_integer_and_boolean_state_start_apart_so_sharing_them_shows(tmp_path, capsys, monkeypatch) -> None:
    """An integer phase counter moves the same way in every example, so if every example starts at
    the same phase, a batched model that keeps one phase for the whole batch cannot show: main
    perturbed float state only and called the planted copy below a PASS. Integer state now starts
    up to 2 apart, boolean state with some flags flipped; the correct copy still passes. (The planted
    copy shares the integer state only: the refractory flags differ between examples anyway.)"""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "phased.py").write_text(PHASED)
    assert main(["phased.py", "-o", "phased_batched.py"]) == 0
    flags = ["verify", "phased.py", "phased_batched.py", "--init", "5", "--input-shape", "x=5:float32:1.5",
             "--steps", "8", "--no-speed", "--no-triage", "--format", "json", "--strict"]
    capsys.readouterr()
    assert main(flags) == 0
    assert json.loads(capsys.readouterr().out)["classes"][0]["verdict"] == "PASS"
    planted = tmp_path / "phased_batched.py"
    planted.write_text(planted.read_text() + '''
import jax.numpy as jnp
_correct = PhasedBatched.set_state
PhasedBatched.set_state = lambda self, state: _correct(self, jax.tree.map(
    lambda v: jnp.broadcast_to(v[:1], v.shape) if jnp.issubdtype(v.dtype, jnp.integer) else v, state))
''')
    assert main(flags) == 1
    result = json.loads(capsys.readouterr().out)["classes"][0]
    assert result["verdict"].startswith("FAIL"), result


def test_a_reset_that_leaves_a_variable_alone_is_caught_from_the_perturbed_starts(tmp_path, capsys,
                                                                                  monkeypatch) -> None:
    """lif_population's batched reset_state with its `spike` and `input` writes dropped. The resets
    were compared from the state the last step left only, where no example was spiking and the
    input had just been cleared: main PASSed (probe E). Resets are compared from the perturbed
    starts too now, where some spike flags are up."""
    monkeypatch.chdir(ROOT)
    text = (ROOT / "examples" / "lif_population_batched.py").read_text()
    dropped = [line for line in text.splitlines() if "_replace(spike=bm.zeros(" in line or "_replace(input=bm.zeros(" in line]
    assert len(dropped) == 2, dropped
    planted = tmp_path / "lif_population_batched.py"
    planted.write_text("".join(line + "\n" for line in text.splitlines() if line not in dropped))
    code, report = verify(planted, "lif_population", capsys)
    assert code == 1, report
    failed = [m for s in report["classes"][0]["sections"] if s["name"] == "reset" for m in s["mismatches"]]
    assert any("from the start spike" in m["quantity"] for m in failed), failed


def test_a_random_constructor_state_drawn_wrong_is_caught(tmp_path, capsys, monkeypatch) -> None:
    """Probe E, repro 08: noisy_lif with a random initial potential drawn in __init__, and a batched
    constructor drawing it from uniform(0, 5) instead of uniform(0, 0.5). For a model that draws
    random numbers the constructor's state was compared by shape only, so main PASSed it. A state
    the constructor draws once for the whole batch (the original's draw, from the same seed) is
    compared by value now; only state drawn per example (created by reset_state()) is shape-only,
    and the report names it."""
    monkeypatch.chdir(tmp_path)
    source = (ROOT / "examples" / "noisy_lif.py").read_text().replace(
        "self.V = bm.Variable(bm.zeros(n))", "self.V = bm.Variable(bm.random.uniform(0.0, 0.5, n))")
    assert "uniform(0.0, 0.5, n))" in source
    (tmp_path / "noisy_init.py").write_text(source)
    assert main(["noisy_init.py", "-o", "noisy_init_batched.py"]) == 0
    generated = (tmp_path / "noisy_init_batched.py").read_text()
    flags = ["verify", "noisy_init.py", "noisy_init_batched.py", "--init", "6, 10", "--input-shape", "x=6:float32:3.0",
             "--steps", "10", "--batch", "3", "--no-speed", "--no-triage", "--format", "json", "--strict"]
    capsys.readouterr()
    assert main(flags) == 0, capsys.readouterr().out
    right = json.loads(capsys.readouterr().out)["classes"][0]
    assert right["strength"]["constructor_shapes_only"] == [], right["strength"]
    planted = generated.replace("bm.random.uniform(0.0, 0.5, n)), batch_size)", "bm.random.uniform(0.0, 5.0, n)), batch_size)")
    assert planted != generated
    (tmp_path / "noisy_init_batched.py").write_text(planted)
    assert main(flags) == 1
    wrong = json.loads(capsys.readouterr().out)["classes"][0]
    constructor = next(s for s in wrong["sections"] if s["name"] == "constructor")
    assert not constructor["ok"] and any("constructor state" in m["quantity"] for m in constructor["mismatches"]), wrong


def test_constructor_state_drawn_per_example_is_named_as_compared_by_shape(tmp_path, capsys, monkeypatch) -> None:
    """noisy_lif with its constructor calling reset_state(), which draws V: the batched constructor
    draws each example's V from its own key, which from_model (one example copied) cannot match, so
    the constructor's V is compared by shape only; the report says so."""
    monkeypatch.chdir(tmp_path)
    source = (ROOT / "examples" / "noisy_lif.py").read_text().replace(
        "        self.spike = bm.Variable(bm.zeros(n))\n",
        "        self.spike = bm.Variable(bm.zeros(n))\n        self.reset_state()\n", 1)
    assert "self.reset_state()" in source
    (tmp_path / "noisy_reset.py").write_text(source)
    assert main(["noisy_reset.py", "-o", "noisy_reset_batched.py"]) == 0
    capsys.readouterr()
    code = main(["verify", "noisy_reset.py", "noisy_reset_batched.py", "--init", "6, 10", "--input-shape",
                 "x=6:float32:3.0", "--steps", "10", "--batch", "3", "--no-speed", "--no-triage", "--format", "json"])
    result = json.loads(capsys.readouterr().out)["classes"][0]
    assert code == 0 and result["ok"], result
    assert result["strength"]["constructor_shapes_only"] == ["V"], result["strength"]


PORT_WRITER = '''import brainpy as bp
import brainpy.math as bm


class Syn(bp.DynSysGroup):
    """Steps its presynaptic group and adds a current into post.input; post is stepped elsewhere."""

    def __init__(self):
        super().__init__()
        self.pre = bp.neurons.LIF(3)
        self.post = bp.neurons.LIF(3)
        self.g = bm.Variable(bm.zeros(3))

    def update(self, x):
        self.pre(x)
        self.g.value = 0.9 * self.g + self.pre.spike
        self.post.input += 2.0 * self.g
'''


def test_a_wrong_current_into_an_input_port_is_caught(tmp_path, capsys, monkeypatch) -> None:
    """Probe L (BrainPy's synapse notebooks, a synapse verified alone): verify compared the state after
    clearing the input ports, as DSRunner clears them between steps, so a step whose only effect is
    `self.post.input += I` was never compared: main PASSed a planted 3.0 * g for 2.0 * g ('state moved
    4/9 (not: post.V, post.input, ...)'). The state is now compared before the ports are cleared."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "syn.py").write_text(PORT_WRITER)
    assert main(["syn.py", "-o", "syn_batched.py"]) == 0
    flags = ["verify", "syn.py", "syn_batched.py", "--class", "Syn", "--input-shape", "x=3:float32:1000",
             "--steps", "20", "--no-speed", "--no-triage", "--format", "json"]
    capsys.readouterr()
    assert main([*flags, "--strict"]) == 0
    assert json.loads(capsys.readouterr().out)["classes"][0]["verdict"] == "PASS"
    planted = tmp_path / "syn_batched.py"
    assert "+ 2.0 * state.g)" in planted.read_text()
    planted.write_text(planted.read_text().replace("+ 2.0 * state.g)", "+ 3.0 * state.g)"))
    assert main(flags) == 1
    assert json.loads(capsys.readouterr().out)["classes"][0]["verdict"].startswith("FAIL")


NOT_YET_DECIDED = '''import brainpy as bp
import brainpy.math as bm
import jax.numpy as jnp


class Dec(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.S = bm.Variable(bm.zeros(n))
        self.decision_time = bm.Variable(jnp.full(n, jnp.nan))  # "no decision yet"

    def update(self, x):
        t = bp.share.load("t")
        self.S.value = self.S.value + x + 0.1 * bm.random.randn(*self.S.shape)
        new = jnp.isnan(self.decision_time.value) & (self.S.value > 1.0)
        self.decision_time.value = jnp.where(new, t, self.decision_time.value)
        return self.S.value
'''


def test_a_constructor_state_starting_as_nan_is_compared_by_value(tmp_path, capsys, monkeypatch) -> None:
    """WongWang2006's ``decision_time`` starts as NaN, 'no decision yet' (probe N5). NaN == NaN is False, so
    main took the state for one each example drew for itself and compared it by shape only: a batched
    constructor planted to start neuron 0 at -7 (it never decides) PASSed --strict, and the state's move
    from NaN to a time read 'barely, in tolerances: decision_time 0x'."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dec.py").write_text(NOT_YET_DECIDED)
    assert main(["dec.py", "-o", "dec_batched.py"]) == 0
    flags = ["verify", "dec.py", "dec_batched.py", "--init", "3", "--input-shape", "x=3:float32:0.2", "--dt", "1.0",
             "--steps", "30", "--no-speed", "--no-triage", "--format", "json", "--strict"]
    capsys.readouterr()
    assert main(flags) == 0, capsys.readouterr().out
    right = json.loads(capsys.readouterr().out)["classes"][0]
    assert right["strength"]["constructor_shapes_only"] == [], right["strength"]
    assert "decision_time" not in right["strength"]["barely"], right["strength"]
    generated = (tmp_path / "dec_batched.py").read_text()
    planted = generated.replace("jnp.full(n, jnp.nan)), batch_size)", "jnp.full(n, jnp.nan).at[0].set(-7.0)), batch_size)")
    assert planted != generated
    (tmp_path / "dec_batched.py").write_text(planted)
    assert main(flags) == 1
    wrong = json.loads(capsys.readouterr().out)["classes"][0]
    constructor = next(s for s in wrong["sections"] if s["name"] == "constructor")
    assert not constructor["ok"] and any("decision_time" in m["quantity"] for m in constructor["mismatches"]), wrong
