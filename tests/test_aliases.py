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

    def _choose(self):
        return self.V if self.flag else self.U

    def _step(self, x):
        self.U.value = 0.5 * self.U + x
        return self.U

    def _l2(self):
        return sum((w ** 2).sum() for w in self.train_vars().values())

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
    # read before any write of the Variable it may be: the value then, in the original too
    "ConditionalAliasReadFirst": "v = self.V if self.flag else self.U\nself.U.value = v * 0.5 + x @ self.W\n"
                                 "return self.U.value",
    "ReturnedVariableReadFirst": "v = self._pick()\nout = v * 2.0\nself.V.value = x @ self.W + out\nreturn self.V.value",
    # the alias rebound at the top level before any write of its Variable: every read of it sees the
    # value when bound (main refused both as BFY213, "bound more than once")
    "AliasReboundBeforeWrite": "v = self.V\nv = v * 0.9 + x @ self.W\nself.V.value = v\nreturn v * 1.0",
    "AliasReadThenRebound": "v = self.V\nout = bm.tanh(v) * 2.0\nv = out + x @ self.W\nself.V.value = v\n"
                            "self.V += v\nreturn v + out",
    "AliasReboundBeforeACall": "u = self.U\nu = u * 0.5\nout = self._step(x @ self.W)\nreturn u + out",
    # `.value` of the Variable a method returns (probe G: main's batched code read `.value` of the
    # array the pure method returns: BFY303 AttributeError when run)
    "ValueOfAReturnedVariable": "a = self._step(x).value\nb = self._step(x @ self.W).value\nreturn a + b",
    "ValueOfAPickedVariable": "out = self._pick().value\nself.V.value = x @ self.W + out\nreturn self.V.value",
    # bound by another form but read only before any write of it: the value then, in the original too
    "WalrusReadBeforeTheWrite": "out = (v := self.V) * 2.0\nself.V.value = x @ self.W + v\nreturn out",
    # bound afresh in each pass before it is read: every read sees the value of this pass
    "ConditionalAliasBoundInTheLoop": "for k in range(2):\n    v = self.V if self.flag else self.U\n    out = v * 0.5\n"
                                      "    self.V.value = out + x @ self.W\nreturn self.V.value",
    # an alias named like an attribute, or used beside a keyword of its name (probe N: main rewrote the
    # attribute `self.V` through the alias `V` too, `state.V + self.state.V`, and `self.W` through `W`)
    "AliasNamedLikeItsAttribute": "V = self.V\nself.V.value = V * 0.9 + x @ self.W\nreturn self.V + V",
    "AliasNamedLikeAnotherAttribute": "W = self.V\nW += x @ self.W\nreturn W * (2.0 if self.flag else 1.0)",
    "AliasNamedLikeAKeyword": "var = self.V\nvar += x @ self.W\nreturn scaled(var=var, k=2.0)",
    "AliasShadowedByALambdaParameter": "v = self.V\nv += x @ self.W\ndouble = lambda v: v * 2.0\nreturn double(x) + v",
    # a function defined in the method binding a local of the alias's name: its own name, not the
    # alias (main refused both as BFY213, "bound more than once or inside a block")
    "AliasShadowedByANestedLocal": "V = self.V\n\ndef decay(v):\n    V = v * 0.9\n    return V\n\n"
                                   "V.value = decay(V.value) + x @ self.W\nreturn V.value",
    "AliasReadInANestedFunctionWhoseInnerOneShadowsIt": "v = self.V\n\ndef g():\n    def h(u):\n"
                                                        "        v = u * 2.0\n        return v\n\n"
                                                        "    return h(v) + v\n\nv += x @ self.W\nreturn g()",
    "AliasShadowedByAComprehension": "V = self.V\nV += x @ self.W\nparts = [V * 2.0 for V in (x, x)]\n"
                                     "return V.value + parts[0].sum()",
}

# Patterns batchify cannot follow: refused at the marked line with the code.
REFUSED = {
    # Probe B: the original's list holds the Variable three times (all three its final value); on main
    # the batched code returned three snapshots, and a lambda's default read the old value.
    "AppendedVariable": ("outs = []\nfor k in range(3):\n    self.V += x @ self.W\n    outs.append(self.V)  # <-\n"
                         "return outs", "BFY213"),
    "LambdaDefault": ("readout = lambda v=self.V: v * 2.0  # <-\nself.V += x @ self.W\nreturn readout()", "BFY213"),
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
    # A name that may be one Variable or another (a conditional expression, `or`, a method returning
    # either), written through: batchify cannot tell which one it writes (main dropped the write).
    "ConditionalAliasWritten": ("v = self.V if self.flag else self.U  # <-\nv += x @ self.W\nreturn self.V.value",
                                "BFY213"),
    "EitherAliasWritten": ("v = self.flag and self.V or self.U  # <-\nv += x @ self.W\nreturn self.V.value", "BFY213"),
    "ConditionalVariableFromAMethod": ("v = self._choose()  # <-\nv += x @ self.W\nreturn self.V.value", "BFY213"),
    # ... or read after a write of a Variable it may be: the original's name sees the new value.
    "ConditionalAliasOutlivesWrite": ("v = self.V if self.flag else self.U  # <-\nself.V.value = x @ self.W\n"
                                      "return v * 1.0", "BFY213"),
    "ReturnedVariableOutlivesWrite": ("v = self._pick()  # <-\nself.V.value = x @ self.W\nreturn v * 1.0", "BFY213"),
    # ... or rebound only after a write of its Variable, or only in a block, or after a call that may write it
    "AliasReboundAfterWrite": ("v = self.V  # <-\nself.V.value = x @ self.W\nout = v * 1.0\nv = out\nreturn v",
                               "BFY213"),
    "AliasReboundInABlock": ("v = self.V  # <-\nif self.flag:\n    v = x @ self.W\nself.V.value = x @ self.W\n"
                             "return v * 1.0", "BFY213"),
    # (main wrote batched code reading U's old value here: verify FAILed it, the transform did not refuse)
    "AliasReboundAfterACall": ("u = self.U  # <-\nout = self._step(x @ self.W)\nu = u + out\nreturn u * 1.0",
                               "BFY213"),
    "ReturnedVariableOutlivesACall": ("a = self._step(x)  # <-\nb = self._step(x @ self.W)\nreturn a + b", "BFY213"),
    # A Variable bound to a name by any other form (probe G: main transformed each with exit 0, and the
    # batched code read the old value, or dropped the write through the name; verify FAILed all)
    "WalrusAliasOutlivesWrite": ("out = (v := self.V) * 1.0  # <-\nself.V.value = x @ self.W\nreturn v * 1.0 + out",
                                 "BFY213"),
    "WalrusAliasWrittenThrough": ("(v := self.V)  # <-\nv += x @ self.W\nreturn self.V * 1.0", "BFY213"),
    "WalrusInAnIfTest": ("if (v := self.V) is not None:  # <-\n    self.V.value = x @ self.W\nreturn v * 1.0",
                         "BFY213"),
    "WithAsAlias": ("import contextlib\nwith contextlib.nullcontext(self.V) as v:  # <-\n"
                    "    self.V.value = x @ self.W\n    out = v * 1.0\nreturn out", "BFY213"),
    "WithAsWrittenThrough": ("import contextlib\nwith contextlib.nullcontext(self.V) as v:  # <-\n"
                             "    v += x @ self.W\nreturn self.V * 1.0", "BFY213"),
    "StarredUnpackAlias": ("v, *rest = self.V, self.U  # <-\nself.V.value = x @ self.W\nreturn v * 1.0", "BFY213"),
    "StarredUnpackWrittenThrough": ("v, *rest = self.V, self.U  # <-\nv += x @ self.W\nreturn self.V * 1.0",
                                    "BFY213"),
    "NestedUnpackAlias": ("(v, u), k = (self.V, self.U), 1  # <-\nself.V.value = x @ self.W\nreturn v * 1.0 + u",
                          "BFY213"),
    "UnpackedInABlockWrittenThrough": ("if self.flag:\n    a, b = self.V, self.U  # <-\n    a += x @ self.W\n"
                                       "return self.V * 1.0", "BFY213"),
    "AnnotatedAlias": ("v: bm.Variable = self.V  # <-\nv += x @ self.W\nreturn self.V * 1.0", "BFY213"),
    "LoopNameOutlivesTheLoop": ("for v in (self.V,):  # <-\n    pass\nself.V.value = x @ self.W\nreturn v * 1.0",
                                "BFY213"),
    "LoopNameReadAfterAnEarlierPassWrote": ("total = 0.0\nfor v in (self.V, self.U):  # <-\n"
                                            "    self.U.value = v * 2.0 + x @ self.W\nreturn self.U.value", "BFY213"),
    "LocalFunctionReturnsVariable": ("def get():\n    return self.V\n\nv = get()  # <-\nself.V.value = x @ self.W\n"
                                     "return v * 1.0", "BFY213"),
    "LocalFunctionWrittenThrough": ("def get():\n    return self.V\n\nv = get()  # <-\nv += x @ self.W\n"
                                    "return self.V * 1.0", "BFY213"),
    "LambdaReturnsVariable": ("get = lambda: self.V\nv = get()  # <-\nself.V.value = x @ self.W\nreturn v * 1.0",
                              "BFY213"),
    # ... or read where it runs after that write although it comes first in the text: at the top of a
    # loop whose body writes the Variable (the next pass), or in a function called later (main wrote
    # batched code that read the old value for all five: verify FAILed them, the transform did not refuse)
    "ConditionalAliasReadAtALoopTop": ("v = self.V if self.flag else self.U  # <-\nfor k in range(2):\n"
                                       "    out = v * 0.5\n    self.V.value = out + x @ self.W\nreturn self.V.value",
                                       "BFY213"),
    "ReturnedVariableReadInAWhileLoop": ("v = self._pick()  # <-\nk = 0\nwhile k < 2:\n    out = v * 2.0\n"
                                         "    self.V.value = x @ self.W + out\n    k += 1\nreturn self.V.value",
                                         "BFY213"),
    "ConditionalAliasReadInALambda": ("v = self.V if self.flag else self.U  # <-\nf = lambda: v * 2.0\n"
                                      "self.V.value = x @ self.W\nreturn f()", "BFY213"),
    "ConditionalAliasReadInAFunction": ("v = self.V if self.flag else self.U  # <-\ndef g():\n    return v * 2.0\n\n"
                                        "self.V.value = x @ self.W\nreturn g()", "BFY213"),
    "ConditionalAliasReadInAGenerator": ("v = self.V if self.flag else self.U  # <-\ng = (v * 1.0 for _ in range(2))\n"
                                         "self.V.value = x @ self.W\nreturn sum(g)", "BFY213"),
    # BrainPy's collectors hand out the Variable objects: the step would read the whole batch's
    # state, and the weights outside the gradient (main passed it through unchanged).
    "CollectorInStep": ("self.V.value = x @ self.W\n"
                        "return sum((v ** 2).sum() for v in self.vars().values())  # <-", "BFY213"),
    # a function defined in the method rebinding the alias (`nonlocal`): the name is not the Variable
    # after it runs
    "AliasReboundByANestedFunction": ("v = self.V  # <-\n\ndef swap():\n    nonlocal v\n    v = x * 1.0\n\n"
                                      "swap()\nv += x @ self.W\nreturn self.V * 1.0", "BFY213"),
    # ... and a nested function's own name that may be a Variable, written through: named as written
    "ConditionalNameInANestedFunction": ("def bump():\n    v = self.V if self.flag else self.U  # <-\n"
                                         "    v += x @ self.W\n\nbump()\nreturn self.V * 1.0", "BFY213"),
    "CollectorInACalledHelper": ("self.V.value = x @ self.W\nreturn self.V + self._l2()  # <-", "BFY213"),
}


def source(name: str, body: str) -> str:
    return PRELUDE + CLASS.format(name=name, body=textwrap.indent(body, " " * 8))


def batchify(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "batchify", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=900)


def transform(tmp_path: Path, filename: str, text: str, *args: str) -> tuple[Path, Path, subprocess.CompletedProcess]:
    """``text`` written to ``filename`` and transformed: ``(source, output, result)``."""
    src, out = tmp_path / filename, tmp_path / "out.py"
    src.write_text(text)
    return src, out, batchify(str(src), "-o", str(out), *args, cwd=tmp_path)


def assert_refused_at_mark(text: str, filename: str, code: str, result: subprocess.CompletedProcess, out: Path) -> None:
    """Refused with ``code`` at the line of ``text`` marked ``# <-``, no traceback, nothing written."""
    line = next(n for n, t in enumerate(text.splitlines(), 1) if t.endswith("# <-"))
    assert result.returncode == 1, result.stderr
    assert re.search(rf"{re.escape(filename)}:{line}:\d+: {code} ", result.stderr), result.stderr
    assert "Traceback" not in result.stderr and not out.exists()


def assert_verifies(tmp_path: Path, src: Path, out: Path, cls: str) -> None:
    checked = batchify("verify", str(src), str(out), "--class", cls, "--init", "3", "--input-shape", "x=3",
                       "--steps", "4", "--no-speed", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert next(r for r in checked.stdout.splitlines() if r.startswith(cls + " ")).rstrip().endswith("PASS")


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
    _, out, result = transform(tmp_path, "refused.py", text)
    assert_refused_at_mark(text, "refused.py", code, result, out)
    assert "_bfy" not in result.stderr  # names as the source spells them


# A Variable that __init__ stores under a second name, or hands to a child of the file: the step
# would read that name from the object (the whole batch's state; weights outside the gradient).
# Main transformed these with exit 0: tied weights gave a wrong gradient through the pure path, and
# verify crashed (BFY900, KeyError: 'dec').
INIT_PRELUDE = '''
import brainpy as bp
import brainpy.math as bm


class Decoder(bp.DynamicalSystem):
    def __init__(self, w):
        super().__init__()
        self.w = w

    def update(self, h):
        return h @ self.w.T


class {name}(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.enc = bm.TrainVar(bm.random.normal(0.0, 0.5, (n, n)))
        self.h = bm.Variable(bm.zeros(n))
{init}

    def update(self, x):
        self.h.value = bm.tanh(x @ self.enc)
{body}
'''
INIT_ALIASES = {
    "StateInAVarList": ("self.group = bm.VarList([self.h, bm.Variable(bm.ones(n))])  # <-",
                        "return self.group[1] * 2.0"),
    "TiedWeight": ("self.dec = self.enc  # <-", "return self.h @ self.dec.T"),
    "StateAlias": ("self.trace = self.h  # <-", "return self.trace * 2.0"),
    "WeightToAChild": ("self.decoder = Decoder(self.enc)  # <-", "return self.decoder(self.h)"),
    "StateToAChild": ("self.decoder = Decoder(self.h)  # <-", "return self.decoder(x)"),
}


@pytest.mark.parametrize("name", sorted(INIT_ALIASES))
def test_a_variable_under_a_second_name_from_init_is_refused(tmp_path: Path, name: str) -> None:
    init, body = INIT_ALIASES[name]
    text = INIT_PRELUDE.format(name=name, init=" " * 8 + init, body=" " * 8 + body)
    _, out, result = transform(tmp_path, "init_alias.py", text, "--class", name)
    assert_refused_at_mark(text, "init_alias.py", "BFY213", result, out)
    if name.endswith("ToAChild"):  # advice that keeps the model's meaning (probe N3: main advised
        # `self.enc.value`, which hands the child a constant: no gradient for a tied weight)
        assert "as an argument (self.child(x, self." in result.stderr, result.stderr
        assert ("a constant, without gradient" in result.stderr) == (name == "WeightToAChild"), result.stderr
        # a state the child would change: handed to its step, the child's change in place is BFY213
        # again (probe N4A); the advice says how to keep it
        assert ("a child that changes it returns the new value, for this class to assign" in result.stderr) == (
            name == "StateToAChild"), result.stderr


OVERRIDE = '''
import brainpy as bp
import brainpy.math as bm


class Rate(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.r = bm.Variable(bm.zeros(n))

    def act(self, u):
        return bm.tanh(u)

    def update(self, x):
        self.r.value = 0.5 * self.r + self.act(x)
        return self.r.value


class Adaptive(Rate):
    def __init__(self, n):
        super().__init__(n)
        self.a = bm.Variable(bm.zeros(n))

    def act(self, u):  # <-
        self.a.value = 0.9 * self.a + 0.1 * u
        return bm.tanh(u - self.a)
{also}
'''


@pytest.mark.parametrize("caller_overridden", [False, True])
def test_an_override_that_touches_state_where_the_base_did_not(tmp_path: Path, caller_overridden: bool) -> None:
    """Main wrote Rate.update_pure calling self.act() as plain code: Adaptive's batched step ran the
    stateful override on the whole batch (verify: BFY303, "a transformation bug"). Refused at the
    override, unless Adaptive overrides update too, which then verifies."""
    also = ("\n    def update(self, x):\n        self.r.value = 0.5 * self.r + self.act(x)\n        return self.r.value\n"
            if caller_overridden else "")
    text = OVERRIDE.format(also=also)
    src, out, result = transform(tmp_path, "override.py", text)
    if not caller_overridden:
        assert_refused_at_mark(text, "override.py", "BFY217", result, out)
        return
    assert result.returncode == 0, result.stderr
    assert_verifies(tmp_path, src, out, "Adaptive")


CELL_TWICE = '''
import brainpy as bp
import brainpy.math as bm


class Cell(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.h = bm.Variable(bm.zeros(n))

    def update(self, x):
        self.h.value = 0.5 * self.h + x
        return self.h


class Twice(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.cell = Cell(n)

    def update(self, x):
{body}
'''


@pytest.mark.parametrize("body, refused", [
    ("h1 = self.cell(x)  # <-\nh2 = self.cell(x)\nreturn h1 + h2", True),
    ("h1 = self.cell(x)\nout = h1 * 2.0\nh2 = self.cell(out)\nreturn h2 * 1.0", False),
])
def test_a_childs_returned_variable_held_across_its_next_step(tmp_path: Path, body: str, refused: bool) -> None:
    """The child's update returns its Variable object: the original's h1 is h2 after the second step
    (main's batched code kept the first step's value: verify MISMATCH, max abs error 0.49)."""
    text = CELL_TWICE.format(body=textwrap.indent(body, " " * 8))
    src, out, result = transform(tmp_path, "twice.py", text, "--class", "Twice")
    if refused:
        assert_refused_at_mark(text, "twice.py", "BFY213", result, out)
        return
    assert result.returncode == 0, result.stderr
    assert_verifies(tmp_path, src, out, "Twice")


RECURSIVE_PICK = '''
import brainpy as bp
import brainpy.math as bm


class Rec(bp.DynamicalSystem):
    def __init__(self, n, depth=1):
        super().__init__()
        self.depth = depth
        self.V = bm.Variable(bm.zeros(n))

    def pick(self, k):
        return self.pick(k - 1) if k > 0 else self.V

    def update(self, x):
        v = self.pick(self.depth)  # <-
        v += x
        return self.V.value
'''


def test_a_method_returning_its_own_call_is_followed_once(tmp_path: Path) -> None:
    """A method that returns what it returns itself (recursion on a configuration value): following
    its returns recursed without end (BFY009, "nests too deeply") before the cycle was cut."""
    _, out, result = transform(tmp_path, "rec.py", RECURSIVE_PICK)
    assert_refused_at_mark(RECURSIVE_PICK, "rec.py", "BFY213", result, out)


ITEMS = '''
import brainpy as bp
import brainpy.math as bm


class Items(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.w = bm.TrainVar(bm.random.normal(0.0, 0.5, (n, n)))
        self.mats = bm.VarDict({{"a": bm.Variable(bm.zeros(n)), "b": bm.Variable(bm.ones(n))}})
        self.traces = bm.VarList([bm.Variable(bm.zeros(n)) for _ in range(2)])

    def update(self, x):
        drive = x @ self.w
        total = bm.zeros_like(drive)
{body}
        return total
'''
ITEM_ALIASES = {
    "DictItems": "for k, v in self.mats.items():  # <-\n    self.mats[k] = v * 0.5 + drive\n    total = total + v",
    "Enumerated": "for i, tr in enumerate(self.traces):  # <-\n    self.traces[i] += drive\n    total = total + tr",
    "ItemAlias": "fast = self.traces[0]  # <-\nself.traces[0] = 0.5 * fast + drive\ntotal = total + fast * 2.0",
}


@pytest.mark.parametrize("name", sorted(ITEM_ALIASES))
def test_an_item_of_a_varlist_or_vardict_read_after_its_write_is_refused(tmp_path: Path, name: str) -> None:
    """The loop name or local is the item, the Variable object: the original reads the value just
    written. On main the batched code read the old one (probe A: largest output error 16.9; an
    alias a step behind). Reads before the write, and loops that only read, still transform."""
    text = ITEMS.format(body=textwrap.indent(ITEM_ALIASES[name], " " * 8))
    _, out, result = transform(tmp_path, "items.py", text)
    assert_refused_at_mark(text, "items.py", "BFY213", result, out)
    fine = ITEMS.format(body=textwrap.indent("for k, v in self.mats.items():\n    total = total + v\n"
                                             "    self.mats[k] = v * 0.5 + drive\nfast = self.traces[0]\n"
                                             "total = total + fast\nself.traces[0] = 0.5 * fast + drive", " " * 8))
    _, out, result = transform(tmp_path, "fine.py", fine)
    assert result.returncode == 0, result.stderr


HEBB = '''import brainpy as bp
import brainpy.math as bm


class Hebb(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.W = bm.Variable(bm.zeros((n, n)))

    def update(self, x):
        self.W += 0.1 * bm.outer(x, x)
        {fill}
        return self.W @ x
'''


def test_fill_diagonal_of_a_variable_in_place_is_refused_and_its_copy_verifies(tmp_path: Path) -> None:
    """Probe N (BrainPy's Hopfield example): `bm.fill_diagonal(self.W, 0.)` fills the Variable in
    place; main copied it as `bm.fill_diagonal(state.W, 0.)` (exit 0), which failed when run ('requires
    a brainpy Array'). Now BFY205 names the assignment that works, and that one verifies."""
    text = HEBB.replace("{fill}", "bm.fill_diagonal(self.W, 0.)  # <-")
    _, out, result = transform(tmp_path, "hebb.py", text)
    assert_refused_at_mark(text, "hebb.py", "BFY205", result, out)
    assert "self.W.value = bm.fill_diagonal(self.W, ..., inplace=False)" in result.stderr
    src, out, result = transform(tmp_path, "hebb.py",
                                 HEBB.replace("{fill}", "self.W.value = bm.fill_diagonal(self.W, 0., inplace=False)"))
    assert result.returncode == 0, result.stderr
    assert_verifies(tmp_path, src, out, "Hebb")


TIED_BY_ARGUMENT = '''import brainpy as bp
import brainpy.math as bm


class Leaky(bp.DynamicalSystem):
    def __init__(self, n_hid, tau):
        super().__init__()
        self.tau = tau
        self.r = bm.Variable(bm.zeros(n_hid))

    def update(self, x, w):
        self.r.value = self.r + (-self.r + bm.tanh(x @ w)) / self.tau
        return self.r.value


class TiedNet(bp.DynSysGroup):
    def __init__(self, n_in, n_hid):
        super().__init__()
        self.w = bm.TrainVar(bm.random.normal(0., 0.5, (n_in, n_hid)))
        self.fast = Leaky(n_hid, 2.0)
        self.slow = Leaky(n_hid, 8.0)

    def update(self, x):
        return self.fast(x, self.w) + self.slow(x, self.w)
'''


def test_a_weight_two_children_share_through_their_steps_verifies_with_its_gradient(tmp_path: Path) -> None:
    """What BFY213's advice for a weight handed to a child's constructor leads to: one weight,
    handed to both children's steps, its gradient the sum over both uses (checked against bm.grad)."""
    src, out, result = transform(tmp_path, "tied.py", TIED_BY_ARGUMENT, "--class", "TiedNet")
    assert result.returncode == 0, result.stderr
    checked = batchify("verify", str(src), str(out), "--class", "TiedNet", "--init", "3, 4", "--input-shape", "x=3",
                       "--steps", "5", "--strict", "--no-speed", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "gradient non-zero 1/1" in checked.stdout
