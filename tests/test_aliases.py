"""Issue 18: a Variable reached by another name (aliases, helpers, getattr, in-place methods) and
Python side effects in a step. Each pattern either verifies (the output reads no Variable through
``self``) or is refused at its line; never an exit 0 whose output fails or crashes."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PRELUDE = '''
import brainpy as bp
import brainpy.math as bm

CALLS = [0]
TOTAL = 0.0


def bump(var, amount):
    var += amount


def scaled(var, k):
    return var * k


class Child(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.U = bm.Variable(bm.zeros(n))

    def update(self, x):
        self.U.value = 0.5 * self.U + x
        return self.U.value
'''

CLASS = '''

class {name}(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.flag = True
        self.history = []
        self.W = bm.TrainVar(bm.random.normal(0.0, 0.5, (n, n)))
        self.V = bm.Variable(bm.ones(n) * 0.3)
        self.U = bm.Variable(bm.ones(n))
        self.child = Child(n)

    def _bump(self, var, amount):
        var += amount

    def _pick(self):
        return self.V

    def update(self, x):
{body}
'''

# Patterns that batchify follows: each must verify (outputs, states and gradients).
FOLLOWED = {
    # the table
    "AugmentedAlias": "v = self.V\nv += x @ self.W\nreturn v * 1.0",
    "AliasSeesNewValue": "v = self.V\nself.V.value = bm.tanh(x @ self.W)\nreturn v * 1.0",
    "GetattrSetattr": "getattr(self, 'V').value = bm.tanh(x @ self.W) + self.V\nsetattr(self, 'U', self.U * 0.5 + x)\n"
                      "return self.U + self.V",
    "FillInPlace": "self.U.fill(0.5)\nself.V.value = self.U + x @ self.W\nreturn self.V.value",
    "AliasValueWrite": "v = self.V\nv.value = x @ self.W + 0.5 * v\nreturn v.value",
    "ChildAlias": "u = self.child.U\nu.value = u * 0.9 + x @ self.W\nreturn self.child(x)",
    # of our own
    "TupleAlias": "a, b = self.V, self.U\na += b * (x @ self.W)\nreturn a + b",
    "ReadOnlyHelper": "self.V.value = bm.tanh(x @ self.W)\nreturn scaled(self.V, 2.0) + x",
    "AliasToReadOnlyHelper": "v = self.V\nself.V.value = x @ self.W\nreturn scaled(v, 3.0)",
    "WeightAlias": "w = self.W\nself.V.value = bm.tanh(x @ w + self.V)\nreturn self.V.value",
    "ZeroInPlace": "self.V.zero_()\nself.V += x @ self.W\nreturn self.V * 2.0",
    "AliasInLambda": "v = self.V\nf = lambda: v * 2.0\nself.V.value = x @ self.W + 0.1\nreturn f()",
    "AliasIndexedWrite": "v = self.V\nv[0] = 1.0\nv[1:] += x[1:] @ self.W[1:, 1:]\nreturn v * 1.0",
    "AliasOfAlias": "v = self.V\nw = v\nw += x @ self.W\nreturn v * 1.0",
    "LoopReadsVariables": "total = 0.0\nfor v in (self.V, self.U):\n    total = total + v.sum()\n"
                          "self.V.value = x @ self.W + total\nreturn self.V.value",
    # BrainPy's pipe calls the child (found in the wider corpus: `x >> self.neu1 >> self.syn1 >> ...`)
    "PipeToChild": "self.V.value = bm.tanh(x @ self.W)\nreturn (self.V * 0.5 + x) >> self.child",
    # declarations that change nothing between steps (main refused both as BFY214, "declares ... global")
    "GlobalOnlyRead": "global TOTAL\nself.V.value = bm.tanh(x @ self.W) + TOTAL\nreturn self.V.value",
    "NonlocalInAClosure": "gain = 0.5\n\ndef damp(v):\n    nonlocal gain\n    gain = gain * 2.0\n    return v * gain\n\n"
                          "self.V.value = damp(self.V) + x @ self.W\nreturn self.V.value",
}

# Patterns batchify cannot follow: refused at the marked line with the code.
REFUSED = {
    "HelperWritesArgument": ("bump(self.V, x @ self.W)  # <-\nreturn self.V.value", "BFY213"),
    "MethodWritesArgument": ("self._bump(self.V, x @ self.W)  # <-\nreturn self.V.value", "BFY213"),
    "ComputedGetattr": ("name = 'V'\ngetattr(self, name).value = x  # <-\nreturn x", "BFY213"),
    "UnknownInPlaceMethod": ("self.V.sort()  # <-\nreturn self.V + x @ self.W", "BFY205"),
    "TorchStyleInPlace": ("self.V.tanh_()  # <-\nreturn self.V + x @ self.W", "BFY205"),
    "GlobalMutated": ("CALLS[0] += 1  # <-\nself.V.value = x @ self.W\nreturn self.V.value", "BFY214"),
    "GlobalDeclared": ("global TOTAL  # <-\nTOTAL = TOTAL + 1.0\nself.V.value = x @ self.W\nreturn self.V.value",
                       "BFY214"),
    "GlobalAugmented": ("global TOTAL  # <-\nTOTAL += 1.0\nself.V.value = x @ self.W\nreturn self.V.value",
                        "BFY214"),
    "ReseedInStep": ("bm.random.seed(3)  # <-\nself.V.value = x @ self.W\nreturn self.V.value", "BFY214"),
    "PrintInStep": ("print(x)  # <-\nself.V.value = x @ self.W\nreturn self.V.value", "BFY214"),
    "AppendToPlainList": ("self.history.append(x)  # <-\nself.V.value = x @ self.W\nreturn self.V.value", "BFY214"),
    "VariableInContainer": ("items = [self.V, self.U]  # <-\nself.V.value = x @ self.W\nreturn items[0] * 1.0",
                            "BFY213"),
    "LoopWritesThroughName": ("for v in (self.V, self.U):  # <-\n    v += x @ self.W\nreturn self.V.value", "BFY213"),
    "VariableFromAMethod": ("v = self._pick()  # <-\nv += x @ self.W\nreturn self.V.value", "BFY213"),
    "UnknownVariableWritten": ("v = [self.V][0] if self.flag else None\nv.value = x  # <-\nreturn x", "BFY213"),
    "AliasBoundInBlock": ("if self.flag:\n    v = self.V  # <-\nelse:\n    v = self.U\nv += x @ self.W\n"
                          "return self.V.value", "BFY213"),
}


def source(name: str, body: str) -> str:
    return PRELUDE + CLASS.format(name=name, body=textwrap.indent(body, " " * 8))


def batchify(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "batchify", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=900)


def test_followed_patterns_verify_and_read_no_variable_through_self(tmp_path: Path) -> None:
    """Every followed pattern, one class each in one file, verified in one run."""
    text = PRELUDE + "".join(CLASS.format(name=n, body=textwrap.indent(b, " " * 8)) for n, b in FOLLOWED.items())
    src = tmp_path / "followed.py"
    src.write_text(text)
    tables = "".join(f'\n[tool.batchify.verify."followed.py::{n}"]\ninit = [4]\ninputs = {{ x = {{ shape = [4] }} }}\n'
                     f"steps = 5\n" for n in FOLLOWED)
    (tmp_path / "pyproject.toml").write_text("[tool.batchify]\n" + tables)
    out = tmp_path / "followed_batched.py"
    result = batchify(str(src), "-o", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    generated = out.read_text()
    for name in FOLLOWED:
        body = generated.split(f"class {name}Batched(")[1].split("def update_pure(")[1].split("\n    def ")[0]
        assert not re.search(r"self\.(V|U|W|child\.U)\b", body), f"{name}: a Variable read through self:\n{body}"
    checked = batchify("verify", str(src), str(out), "--no-speed", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for name in FOLLOWED:
        row = next(line for line in checked.stdout.splitlines() if line.startswith(name + " "))
        assert row.rstrip().endswith("PASS"), row
        assert "no weights" not in row


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_patterns_that_cannot_be_followed_are_refused_at_their_line(tmp_path: Path, name: str) -> None:
    body, code = REFUSED[name]
    text = source(name, body)
    src = tmp_path / "refused.py"
    src.write_text(text)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if t.endswith("# <-"))
    result = batchify(str(src), "-o", str(tmp_path / "out.py"), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert re.search(rf"refused\.py:{line}:\d+: {code} ", result.stderr), result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out.py").exists()
