"""Issue 11: refuse what cannot be proven; never emit code that breaks at import or run time.

Items 1-4 (item 4 is in test_base_spellings.py); each test failed on the main branch before the fix.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from batchify.diagnostics import BatchifyError
from batchify.validate import validate


def batchify(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "batchify", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def verify(src: Path, out: Path, n: int) -> subprocess.CompletedProcess:
    return batchify("verify", str(src), str(out), "--init", str(n), "--input-shape", f"x={n}", "--steps", "8",
                    "--no-speed", cwd=src.parent)


PLAIN_IMPORTS = '''import brainpy
import brainpy.math


class Net(brainpy.DynSysGroup):
    def __init__(self, n):
        super().__init__()
        self.N = brainpy.dyn.Lif(n, V_rest=-60.0, V_th=-50.0, V_reset=-60.0, tau=5.0)
        self.trace = brainpy.math.Variable(brainpy.math.zeros(n))

    def update(self, x):
        spike = self.N(x)
        self.trace.value = 0.9 * self.trace + spike
        return self.trace.value
'''


def test_plain_import_brainpy_gives_a_module_that_imports_and_verifies(tmp_path: Path) -> None:
    """Item 1: the library helper used `bp`, which a source with `import brainpy` never binds."""
    src = tmp_path / "plain.py"
    src.write_text(PLAIN_IMPORTS)
    out = tmp_path / "plain_batched.py"
    result = batchify(str(src), "-o", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    checked = verify(src, out, 4)
    assert checked.returncode == 0 and "PASS" in checked.stdout, checked.stdout + checked.stderr


@pytest.mark.parametrize("text,name", [
    ("def f():\n    return bp.zeros(3)\n", "bp"),
    ("class A:\n    x = undefined_thing\n", "undefined_thing"),
    ("import jax\nvalue = jax.numpy.zeros(3) + later\n", "later"),
])
def test_validate_refuses_a_module_that_reads_an_unbound_name(text: str, name: str) -> None:
    """Item 1: validate proves every name the generated module reads is bound (a batchify bug otherwise)."""
    with pytest.raises(BatchifyError) as caught:
        validate(text, "model.py")
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.code == "BFY900" and repr(name) in diagnostic.message


def test_validate_accepts_closures_classes_and_builtins() -> None:
    validate("import jax\n\n\ndef outer(a):\n    def inner(b):\n        return a + b + len([])\n    return inner\n\n\n"
             "class K:\n    y = 1\n    z = [i for i in range(y)] if y else None\n\n    def m(self):\n"
             "        return K, jax, outer\n", "ok.py")


ANNOTATED = '''import brainpy as bp
import brainpy.math as bm


class Leaky(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.v: bm.Variable = bm.Variable(bm.zeros(n))
        self.w: bm.TrainVar = bm.TrainVar(bm.ones(n) * 0.5)

    def update(self, x):
        self.v.value = 0.9 * self.v + x * self.w
        return self.v.value
'''

VARLIST_LOOP = '''import brainpy as bp
import brainpy.math as bm


class Traces(bp.DynamicalSystem):
    def __init__(self, n, taus=(2.0, 5.0, 9.0)):
        super().__init__()
        self.taus = taus
        self.w = bm.TrainVar(bm.ones((n, n)) * 0.1)
        self.traces = bm.VarList([bm.Variable(bm.zeros(n)) for _ in taus])

    def update(self, x):
        for tr in self.traces:
            tr.value = 0.8 * tr + x @ self.w
        return sum(t for t in self.traces)
'''


@pytest.mark.parametrize("name,text", [("annotated", ANNOTATED), ("varlist_loop", VARLIST_LOOP)])
def test_annotated_state_and_a_loop_writing_varlist_items_verify(tmp_path: Path, name: str, text: str) -> None:
    """Items 2 and 3: `self.v: bm.Variable = ...` was not batched; `for tr in self.traces: tr.value = ...`
    was left unrewritten (a crash inside vmap)."""
    src = tmp_path / f"{name}.py"
    src.write_text(text)
    out = tmp_path / f"{name}_batched.py"
    result = batchify(str(src), "-o", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    checked = verify(src, out, 3)
    assert checked.returncode == 0 and "PASS" in checked.stdout, checked.stdout + checked.stderr
    # The batched constructor (verify builds from_model) batches every state Variable too.
    from batchify.loader import load_generated

    module = load_generated(out, f"{name}_constructed")
    cls = next(v for k, v in vars(module).items() if k.endswith("Batched") and isinstance(v, type))
    batched = cls(3, batch_size=4)
    assert all(leaf.shape[0] == 4 for leaf in __import__("jax").tree.leaves(batched.state()))
    batched.update(__import__("jax").numpy.ones((4, 3)))


DERIVATIVE_READS_STATE = '''import brainpy as bp
import brainpy.math as bm


class Cell(bp.dyn.NeuDyn):
    def __init__(self, size):
        super().__init__(size)
        self.V = bm.Variable(bm.zeros(self.num))
        self.input = bm.Variable(bm.zeros(self.num))
        self.integral = bp.odeint(self.dV, method="exp_euler")

    def dV(self, V, t):
        return (-V + self.input) / 10.0

    def update(self, x=None):
        self.V.value = self.integral(self.V.value, bp.share["t"], bp.share["dt"])
        self.input.value = bm.zeros_like(self.input)
'''


def test_a_derivative_reading_state_handed_to_an_integrator_is_refused(tmp_path: Path) -> None:
    """Found in the wider corpus once examples started from different states (PituitaryCell): the
    integrator built in __init__ holds the batched dV, which inside one example's step vmapped the
    whole batch's stored input over the neuron axis; with 3 neurons and a batch of 3 nothing raised
    and verification FAILed (float64 too). Before: exit 0 and that output."""
    src = tmp_path / "cell.py"
    src.write_text(DERIVATIVE_READS_STATE)
    result = batchify(str(src), "-o", str(tmp_path / "cell_batched.py"), cwd=tmp_path)
    assert result.returncode == 1 and "cell.py:10:35: BFY208 self.dV is handed over in __init__ (to an integrator or a custom_vjp)" in result.stderr, \
        result.stderr
    assert "reads self.input" in result.stderr and not (tmp_path / "cell_batched.py").exists()


SCRIPT_SETTINGS = '''import argparse

import brainpy as bp
import brainpy.math as bm

parser = argparse.ArgumentParser()
parser.add_argument("--batch_size", type=int, default=512)
args = parser.parse_args()
bm.set(mode=bm.TrainingMode(args.batch_size))
bm.set_dt(0.5)


class Net(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.h = bm.Variable(bm.zeros(n))

    def update(self, x):
        self.h.value = 0.5 * self.h + x
        return self.h.value
'''


def test_a_setting_that_reads_the_scripts_arguments_is_not_copied(tmp_path: Path) -> None:
    """Found in the wider corpus (spiking_FPTT): `bm.set(mode=bm.TrainingMode(args.batch_size))` was
    copied with the argparse lines it needs, so importing the generated module (and verify) parsed
    batchify's own command line: "error: unrecognized arguments: verify ...". Literal settings stay."""
    src = tmp_path / "script.py"
    src.write_text(SCRIPT_SETTINGS)
    out = tmp_path / "script_batched.py"
    assert batchify(str(src), "-o", str(out), cwd=tmp_path).returncode == 0
    text = out.read_text()
    assert "parse_args" not in text and "argparse" not in text and "bm.set_dt(0.5)" in text
    checked = verify(src, out, 3)
    assert checked.returncode == 0 and "PASS" in checked.stdout, checked.stdout + checked.stderr
