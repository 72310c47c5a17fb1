"""The batched class built by its own constructor and reset, against the original example by example.

``verify`` compares ``FooBatched.from_model(model, B)``; users also write ``FooBatched(..., batch_size=B)``
and reset it (``reset()``, ``bp.reset_state``, ``reset_state()``). Each model here came from an
adversarial review; on main each gave silently wrong results or crashed on one of those paths.
"""

from __future__ import annotations

import brainpy as bp
import brainpy.math as bm
import numpy as np
import pytest

from batchify import transform
from batchify.loader import load_generated, load_models

B, STEPS, DT = 4, 4, 0.1

SHAPE_IN_INIT = '''
import brainpy as bp
import brainpy.math as bm


class Pop(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.W = bm.TrainVar(bm.random.normal(0.0, 0.5, (n, n)))
        self.r = bm.Variable(bm.zeros(n))
        self.num = self.r.shape[0]
        self.u = bm.Variable(bm.ones(len(self.r)) * 0.5)

    def update(self, x):
        self.r.value = bm.tanh(x @ self.W + 0.5 * self.r + self.u)
        return self.r.sum() / self.num
'''

BUILTIN_IN_MODE = '''
import brainpy as bp
import brainpy.math as bm


class Net(bp.DynSysGroup):
    def __init__(self, n_in, n):
        super().__init__()
        self.syn = bp.dyn.Expon(n, tau=5.0, mode=self.mode)
        self.W = bm.TrainVar(bm.random.normal(0.5, 0.5, (n_in, n)))

    def update(self, x):
        return self.syn(x @ self.W)
'''

LEADING_AXIS_LIKE_A_BATCH = '''
import brainpy as bp
import brainpy.math as bm


class Traces(bp.DynamicalSystem):
    def __init__(self, n, k=4):
        super().__init__()
        self.V = bm.Variable(bm.zeros((k, n)), batch_axis=0)  # k traces per neuron; k may equal the batch
        self.h = bm.Variable(bm.zeros((1, n)), batch_axis=0)  # BrainPy's [1, n] habit
        self.decay = bm.asarray([0.1, 0.3, 0.5, 0.9])[:k, None]

    def update(self, x):
        self.V.value = self.decay * self.V + x
        self.h.value = self.h + self.V.sum(axis=0)
        return self.h[0].sum() + self.V.sum(axis=0)
'''

SUPER_RESET = '''
import brainpy as bp
import brainpy.math as bm


class LIF(bp.DynamicalSystem):
    def __init__(self, n, tau=10.0):
        super().__init__()
        self.tau = tau
        self.V = bm.Variable(bm.zeros(n))

    def reset_state(self, batch_size=None):
        super().reset_state(batch_size)
        self.V.value = bm.zeros_like(self.V) + 0.5

    def update(self, x):
        self.V.value = self.V + (x - self.V) / self.tau
        return self.V.value


class Net(bp.DynSysGroup):
    def __init__(self, n):
        super().__init__()
        self.a = LIF(n)
        self.acc = bm.Variable(bm.zeros(n))

    def reset_state(self, batch_size=None):
        super().reset_state(batch_size)
        self.acc.value = bm.zeros_like(self.acc) + self.a.V

    def update(self, x):
        self.acc += self.a(x)
        return self.acc.value
'''

RESET_LEVEL = '''
import brainpy as bp
import brainpy.math as bm


class Leaky(bp.DynamicalSystem):
    def __init__(self, n, v0=0.2):
        super().__init__()
        self.v0 = v0
        self.V = bm.Variable(bm.ones(n) * v0)

    def reset_state(self, batch_size=None):
        self.V.value = bm.ones_like(self.V) * self.v0

    def update(self, x):
        self.V.value = 0.8 * self.V + x
        return self.V.value


class Net(bp.DynSysGroup):
    def __init__(self, n):
        super().__init__()
        self.pop = Leaky(n, 0.3)
        self.readout = bm.Variable(bm.zeros(n))

    @bp.reset_level(1)  # after the children: the readout starts from the reset population
    def reset_state(self, batch_size=None):
        self.readout.value = 2.0 * self.pop.V

    def update(self, x):
        v = self.pop(x)
        self.readout.value = 0.5 * self.readout + v
        return self.readout.value
'''

RESERVED_NAME = '''
import brainpy as bp
import brainpy.math as bm


class Cell(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.state = bm.Variable(bm.zeros(n))  # the batched class keeps it as self.state_
        self.width = self.state.shape[0]

    def reset_state(self, batch_size=None):
        self.state.value = bm.ones(self.width) * 0.2

    def update(self, x):
        self.state.value = 0.5 * self.state + x
        return self.state.value
'''

BATCH_OF_ONE = '''
import brainpy as bp
import brainpy.math as bm


class Node(bp.DynamicalSystemNS):
    def __init__(self, n, mode=None):
        super().__init__(mode=mode)
        self.size = (n,)
        self.reset_state(1)  # written for BrainPy's batching: a batch of one

    def reset_state(self, batch_size=1):
        self.v = bp.init.variable_(bm.zeros, self.size, batch_size)
        self.s = bp.init.variable_(bm.ones, self.size, self.mode)

    def update(self, x):
        self.v.value = 0.5 * self.v + x
        self.s.value = self.s * 0.9 + self.v
        return self.v.value + self.s
'''

BUILTIN_READ_BY_RESET = '''
import brainpy as bp
import brainpy.math as bm


class Cell(bp.DynamicalSystem):
    def __init__(self, n_in, n):
        super().__init__()
        self.n = n
        self.fc = bp.dnn.Linear(n_in, n, W_initializer=bp.init.Normal(0.5))
        self.reset_state()

    def reset_state(self, batch_size=None):
        self.V = bp.init.variable_(bm.zeros, self.n, batch_size)
        self.V.value = self.V + self.fc.W.sum(0)  # a reset reading a built-in's weight

    def update(self, x):
        self.V.value = 0.5 * self.V + self.fc(x)
        return self.V.value
'''

NESTED_FUNCTION_READS_RENAMED = '''
import brainpy as bp
import brainpy.math as bm
import jax
import jax.numpy as jnp


class Config:
    scale = 0.5


class Ring(bp.DynamicalSystem):
    def __init__(self, n, params=Config()):
        super().__init__()
        self.params = params  # the batched class has params(): it keeps this as self.params_
        self.x = jnp.linspace(0.0, 1.0, n)
        self.W = bm.TrainVar(self.make_w())
        self.r = bm.Variable(bm.zeros(n))

    def make_w(self):
        @jax.vmap
        def row(xi):
            return self.params.scale * jnp.exp(-(xi - self.x) ** 2)

        return row(self.x)

    def update(self, x):
        self.r.value = bm.tanh(self.r @ self.W + x)
        return self.r.value
'''

OWN_RESET_AND_A_BUILTIN = '''
import brainpy as bp
import brainpy.math as bm


class Net(bp.DynSysGroup):
    def __init__(self, n):
        super().__init__()
        self.syn = bp.dyn.Expon(n, tau=5.0)
        self.V = bm.Variable(bm.zeros(n))

    def reset_state(self, batch_size=None):
        self.V.value = bm.zeros(self.V.shape) + 0.1

    def update(self, x):
        self.V.value = 0.9 * self.V + self.syn(x)
        return self.V.value
'''

CASES = {
    "shape read in __init__": (SHAPE_IN_INIT, "Pop", (3,), 3),
    "built-in made with mode=self.mode": (BUILTIN_IN_MODE, "Net", (3, 5), 3),
    "leading axis the size of the batch": (LEADING_AXIS_LIKE_A_BATCH, "Traces", (3,), 3),
    "super().reset_state()": (SUPER_RESET, "Net", (3,), 3),
    "bp.reset_level": (RESET_LEVEL, "Net", (3,), 3),
    "a Variable named like a member": (RESERVED_NAME, "Cell", (3,), 3),
    "reset_state(batch_size=1) in training mode": (BATCH_OF_ONE, "Node", (3, bm.training_mode), 3),
    "a reset reading a built-in": (BUILTIN_READ_BY_RESET, "Cell", (2, 3), 2),
    "a nested function reading a renamed attribute": (NESTED_FUNCTION_READS_RENAMED, "Ring", (3,), 3),
    "its own reset_state and a built-in": (OWN_RESET_AND_A_BUILTIN, "Net", (3,), 3),
}


def classes(tmp_path, source: str, name: str):
    (tmp_path / "model.py").write_text(source)
    (tmp_path / "model_batched.py").write_text(transform(source.encode(), "model.py", command="batchify model.py").text)
    return getattr(load_models(tmp_path / "model.py"), name), getattr(load_generated(tmp_path / "model_batched.py"),
                                                                     f"{name}Batched")


def run(model, xs, reset):
    """Outputs of STEPS steps, a reset (``reset(model)``), then STEPS more; and the state after the reset."""
    outputs, after_reset = [], None
    for phase in range(2):
        for t in range(STEPS):
            bp.share.save(i=t, t=t * DT, dt=DT)
            outputs.append(np.asarray(bm.as_jax(model.update(bm.asarray(xs[:, t] if xs.ndim == 3 else xs[t])))))
        if phase == 0:
            reset(model)
            after_reset = {k: np.asarray(v.value) for k, v in sorted(model.vars().unique().items())
                           if not isinstance(v, bm.TrainVar)}
    return np.stack(outputs), after_reset


RESETS = {"reset()": lambda m: m.reset(), "bp.reset_state": bp.reset_state,
          "reset_state()": lambda m: m.reset_state()}


@pytest.mark.parametrize("reset", list(RESETS))
@pytest.mark.parametrize("case", list(CASES))
def test_the_constructed_batch_steps_and_resets_as_the_examples_do(tmp_path, case: str, reset: str) -> None:
    source, name, init, n_in = CASES[case]
    original_cls, batched_cls = classes(tmp_path, source, name)
    xs = np.random.default_rng(0).normal(size=(B, STEPS, n_in)).astype(np.float32)
    want = []
    for e in range(B):
        bm.random.seed(0)
        want.append(run(original_cls(*init), xs[e], RESETS[reset])[0])
    bm.random.seed(0)
    batched = batched_cls(*init, batch_size=B)
    got, _ = run(batched, xs, RESETS[reset])
    want = np.stack(want, axis=1)  # [time, batch, ...]
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # the same, built by from_model (what verify runs)
    bm.random.seed(0)
    converted = batched_cls.from_model(original_cls(*init), B)
    got, _ = run(converted, xs, RESETS[reset])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_the_constructor_keeps_plain_attributes_as_the_original_has_them(tmp_path) -> None:
    original_cls, batched_cls = classes(tmp_path, SHAPE_IN_INIT, "Pop")
    bm.random.seed(0)
    batched = batched_cls(3, batch_size=B)
    assert batched.num == 3 and batched.r.shape == (B, 3) and batched.u.shape == (B, 3)
    assert batched.W.shape == (3, 3) and batched.mode.batch_size == B


MODE_BRANCH = '''
import brainpy as bp
import brainpy.math as bm


class Spiky(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.W = bm.TrainVar(bm.random.normal(0.5, 0.5, (n, n)))
        self.V = bm.Variable(bm.zeros(n))

    def update(self, x):
        self.V.value = 0.9 * self.V + x @ self.W
        if isinstance(self.mode, bm.TrainingMode):  # a surrogate gradient while training
            s = bm.surrogate.sigmoid(self.V - 1.0)
        else:
            s = (self.V > 1.0).astype(bm.float32)
        self.V.value = self.V * (1.0 - s)
        return s
'''


def test_pure_methods_see_the_original_models_mode(tmp_path) -> None:
    """``self.mode`` in a pure method was always NonBatchingMode: a model built for training took the
    hard threshold, and ``--verify --mode training`` found gradient W off by 6.15."""
    import subprocess
    import sys

    (tmp_path / "spiky.py").write_text(MODE_BRANCH)
    result = subprocess.run([sys.executable, "-m", "batchify", "spiky.py", "-o", "spiky_batched.py", "--verify",
                             "--init", "3", "--input-shape", "x=3", "--mode", "training", "--strict"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and "PASS" in result.stdout, result.stdout + result.stderr
    assert "bfy.example_mode(self)" in (tmp_path / "spiky_batched.py").read_text()


BUILTIN_SUBCLASS_NAMING_ITSELF = '''
import brainpy as bp
import brainpy.math as bm


class Syn(bp.dyn.Expon):
    def __init__(self, n):
        super(Syn, self).__init__(n, tau=4.0)
'''


def verify_cli(tmp_path, source: str, *flags: str):
    import subprocess
    import sys

    (tmp_path / "syn.py").write_text(source)
    made = subprocess.run([sys.executable, "-m", "batchify", "syn.py", "-o", "syn_batched.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr
    return subprocess.run([sys.executable, "-m", "batchify", "verify", "syn.py", "syn_batched.py", "--init", "3",
                           "--input-shape", "x=3", "--no-speed", "--strict", *flags],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)


def test_a_builtin_subclass_naming_itself_in_super_builds(tmp_path) -> None:
    """``super(Syn, self).__init__(...)`` in a built-in's subclass: verify's constructor check raised
    "TypeError: super(type, obj): obj must be an instance or subtype of type" (Brette 2007's ExpCOBA,
    the course notes' STP): the batched class built the generated module's copy, which named the source's."""
    checked = verify_cli(tmp_path, BUILTIN_SUBCLASS_NAMING_ITSELF, "--class", "Syn")
    assert checked.returncode == 0 and "PASS" in checked.stdout, checked.stdout + checked.stderr


def test_verify_without_a_class_checks_a_builtin_subclass_and_never_nothing(tmp_path) -> None:
    """Without --class, a file whose only model is a built-in's subclass verified nothing and exited 0
    (``"ok": true, "classes": []``): a verification that could not fail."""
    checked = verify_cli(tmp_path, BUILTIN_SUBCLASS_NAMING_ITSELF, "--format", "json")
    import json

    report = json.loads(checked.stdout)
    assert checked.returncode == 0 and [c["cls"] for c in report["classes"]] == ["Syn"], checked.stdout


ALWAYS_BATCHED_LATE_STATE = '''
import brainpy as bp
import brainpy.math as bm


class RNN(bp.DynamicalSystem):
    def __init__(self, n_in, n):
        super().__init__()
        self.n = n
        self.rng = bm.random.RandomState(3)
        self.w = bm.TrainVar(self.rng.uniform(-0.5, 0.5, (n_in, n)))

    def reset_state(self, batch_size):  # no default: its users always pass the batch size
        self.h = bm.Variable(bm.zeros((batch_size, self.n)), batch_axis=0)

    def update(self, x):
        self.h.value = bm.tanh(x @ self.w + 0.5 * self.h + 0.1 * self.rng.randn(self.n))
        return self.h.value
'''


def test_a_reset_requiring_the_batch_size_makes_one_example_a_batch_of_one(tmp_path) -> None:
    """Song 2016's EI_RNN: ``reset_state(self, batch_size)`` that its constructor never calls. The
    batched constructor raised "This variables has 0 dimension, but the batch axis is set to be 0"
    (its one-example library), and then reset_state_pure missed its batch_size."""
    original_cls, batched_cls = classes(tmp_path, ALWAYS_BATCHED_LATE_STATE, "RNN")
    bm.random.seed(0)
    built = batched_cls(2, 3, batch_size=B)
    assert built.h.shape == (B, 1, 3)  # each example is the original's batch of one
    original = original_cls(2, 3)
    original.reset_state(1)
    converted = batched_cls.from_model(original, B)
    assert converted.h.shape == built.h.shape
    built.reset_state()
    assert np.asarray(built.h.value).shape == (B, 1, 3)


TRAINING_RESET = '''
import brainpy as bp
import brainpy.math as bm


class LIF(bp.DynamicalSystem):
    def __init__(self, n, V_rest=-0.5, tau=5.):
        super().__init__()
        self.n = n
        self.V_rest = V_rest
        self.tau = tau
        self.V = bp.init.variable_(bm.zeros, n, self.mode)
        self.w = bm.TrainVar(bm.ones(n))

    def reset_state(self, batch_size=None, level=1.0):
        self.V.value = bp.init.variable_(bm.ones, self.n, batch_size) * self.V_rest * level

    def update(self, x):
        self.V.value = self.V + (-self.V + x * self.w) / self.tau
        return self.V.value


class Net(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.cell = LIF(n)

    def reset(self, batch_size=None, level=1.0):
        self.cell.reset_state(batch_size, level)

    def update(self, x):
        return self.cell(x)
'''


@pytest.mark.parametrize("how", ["reset_state()", "reset_state(B)", "reset_state(level=2.0)", "bp.reset_state",
                                 "bp.reset_state(B)", "net.reset()", "net.reset(B)", "reset_state(2)"])
def test_a_training_mode_model_resets_each_example_as_a_batch_of_one(tmp_path, how: str) -> None:
    """BrainPy's docs' LIF (``variable_(bm.zeros, n, self.mode)``, ``reset_state(self, batch_size=None)``)
    built in training mode: the original resets with its batch size of one (``reset_state(1)``; with no
    size it raises). main raised MathError "(1, 4) ... (4,)" on every reset of the batch: each example
    was reset with ``batch_size=None`` while the call's batch size resized the batch."""
    source_cls, batched_cls = classes(tmp_path, TRAINING_RESET, "Net" if "net." in how else "LIF")
    n = 3
    with bm.environment(mode=bm.training_mode):
        original = source_cls(n)
    cell = original.cell if "net." in how else original
    assert cell.V.shape == (1, n)
    batched = batched_cls.from_model(original, B)
    xs = np.random.default_rng(0).normal(size=(B, 1, n)).astype(np.float32)
    batched.update(bm.asarray(xs))
    bcell = batched.cell if "net." in how else batched
    assert float(np.abs(np.asarray(bcell.V.value)).sum()) > 0
    size, level = B, 1.0
    if how == "reset_state()":
        batched.reset_state()
    elif how == "reset_state(B)":
        batched.reset_state(B)
    elif how == "reset_state(2)":
        batched.reset_state(2)
        size = 2
    elif how == "reset_state(level=2.0)":
        batched.reset_state(level=2.0)
        level = 2.0
    elif how == "bp.reset_state":
        bp.reset_state(batched)
    elif how == "bp.reset_state(B)":
        bp.reset_state(batched, B)
    elif how == "net.reset()":
        batched.reset()
    else:
        batched.reset(B)
    cell.reset_state(1, level)  # the original's working reset: its own batch of one
    expected = np.stack([np.asarray(cell.V.value)] * size)
    assert expected.shape == (size, 1, n)
    np.testing.assert_allclose(np.asarray(bcell.V.value), expected)
    assert batched.batch_size == size


def test_an_original_reset_to_another_batch_size_is_refused_by_from_model(tmp_path) -> None:
    """A training-mode model the user reset to a BrainPy batch of 4 (``model.reset(4)``, as RateRNN's own
    ``simulate`` does; probe N5): main's from_model made every example a batch of 4, the batch's ``x``
    (3, 4, 4), and the next reset raised BrainPy's MathError 'The shape of the original data is (4, 4),
    while we got (1, 4)'. Now from_model refuses, naming the reset that makes it work, which does."""
    source_cls, batched_cls = classes(tmp_path, TRAINING_RESET, "LIF")
    with bm.environment(mode=bm.training_mode):
        original = source_cls(4)
    original.reset_state(4)
    assert original.V.shape == (4, 4)
    with pytest.raises(ValueError, match=r"LIF was built in a mode of batch size 1 \(TrainingMode\(batch_size=1\)\), "
                                         r"but holds a batch of 4 \(V: \(4, 4\);.*model.reset_state\(1\)"):
        batched_cls.from_model(original, B)
    original.reset_state(1)
    batched = batched_cls.from_model(original, B)
    batched.reset_state()
    assert batched.V.shape == (B, 1, 4)


DERIVED_TRAINING_LIF = '''
import brainpy as bp
import brainpy.math as bm


class MyLif(bp.dyn.Lif):
    def __init__(self, n):
        super().__init__(n, V_rest=0., V_reset=0., V_th=1., tau=2.0, mode=bm.training_mode)

    def update(self, x):
        return super().update(x * 2.)
'''


@pytest.mark.parametrize("how", ["reset_state()", "reset()"])
def test_a_class_derived_from_a_built_in_in_training_mode_resets_each_example_as_a_batch_of_one(tmp_path, how) -> None:
    """A class of the file derived from a built-in (batched whole, run as library code), built in
    training mode: the original resets with its batch of one (``reset_state(1)``). main reset each
    example without the size: MathError "The shape of the original data is (3,), while we got ()"
    (verify: BFY900), while ``reset()`` (every node, as bp.reset_state) already passed the size."""
    source_cls, batched_cls = classes(tmp_path, DERIVED_TRAINING_LIF, "MyLif")
    original = source_cls(3)
    batched = batched_cls.from_model(original, B)
    batched.update(bm.asarray(np.random.default_rng(0).normal(size=(B, 1, 3)).astype(np.float32)) * 3)
    assert float(np.abs(np.asarray(batched.V.value)).sum()) > 0
    getattr(batched, how[:-2])()
    original.reset_state(1)
    np.testing.assert_allclose(np.asarray(batched.V.value), np.stack([np.asarray(original.V.value)] * B))


TRAINED_INITIAL_STATE = '''
import brainpy as bp
import brainpy.math as bm


class RNN(bp.DynamicalSystem):
    def __init__(self, num_in, num_hidden):
        super().__init__()
        self.rnn = bp.dyn.RNNCell(num_in, num_hidden, train_state=True)
        self.out = bp.dnn.Dense(num_hidden, 1)

    def update(self, x):
        return self.out(self.rnn(x))
'''


@pytest.mark.parametrize("how", ["reset_state(1)", "reset_state()", "bp.reset_state", "reset()"])
def test_a_built_in_whose_reset_writes_a_weight_is_refused_naming_it(tmp_path, how: str) -> None:
    """``bp.dyn.RNNCell(..., train_state=True)`` in training mode: its reset_state re-initialises the TrainVar
    ``state2train`` (a weight every example shares). main raised "<bound method Library.reset_modules of
    <batchify.runtime.Library object at 0x...>> wrote Variables that are not one example's state:
    ['rnn.state2train']", naming internals and no way out. The error names the built-in and the weight,
    and the way out it gives (reset the original, batch it again) works."""
    source_cls, batched_cls = classes(tmp_path, TRAINED_INITIAL_STATE, "RNN")
    with bm.environment(mode=bm.training_mode):
        original = source_cls(1, 5)
    batched = batched_cls.from_model(original, B)
    batched.update(bm.asarray(np.random.default_rng(0).normal(size=(B, 1, 1)).astype(np.float32)))
    with pytest.raises(RuntimeError) as raised:
        if how == "bp.reset_state":
            bp.reset_state(batched)
        else:
            eval(f"batched.{how}")
    message = str(raised.value)
    assert "rnn.state2train" in message and "RNNCell" in message, message
    assert "Library object at" not in message and "from_model" in message, message
    original.reset_state(1)  # the advice: the original reset as BrainPy resets it, then batched again
    again = batched_cls.from_model(original, B)
    assert again.rnn.state.shape == (B, 1, 5)
    np.testing.assert_allclose(np.asarray(again.rnn.state.value),
                               np.stack([np.asarray(original.rnn.state.value)] * B))


DENSE_TO_LIF = '''
import brainpy as bp
import brainpy.math as bm


class SNN(bp.DynamicalSystem):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.l1 = bp.dnn.Dense(n_in, n_out, b_initializer=None)
        self.l2 = bp.dyn.Lif(n_out, V_rest=0., V_reset=0., V_th=1., tau=2.0, spk_fun=bm.surrogate.arctan)

    def update(self, x):
        return x >> self.l1 >> self.l2
'''


def test_a_step_after_a_reset_that_resized_the_batch_names_the_resize(tmp_path) -> None:
    """BrainPy's docs' ``x >> Dense >> Lif`` in training mode, reset as BrainPy's trainers reset it
    (``reset_state(1)``): the batch becomes one example, as documented. main's next step said "argument 'x'
    is per example and needs a leading batch axis of size 1, but has shape [4, 1, 6]; ... regenerate the
    module with --shared x", advice that would give every example example 0's input."""
    source_cls, batched_cls = classes(tmp_path, DENSE_TO_LIF, "SNN")
    with bm.environment(mode=bm.training_mode):
        original = source_cls(6, 4)
    batched = batched_cls.from_model(original, B)
    x = bm.ones((B, 1, 6))
    batched.update(x)
    batched.reset_state(1)
    assert batched.batch_size == 1
    with pytest.raises(ValueError) as raised:
        batched.update(x)
    message = str(raised.value)
    assert "--shared" not in message and f"resized from {B}" in message and f"reset_state({B})" in message, message
    batched.reset_state(B)
    assert np.asarray(batched.update(x)).shape[0] == B
