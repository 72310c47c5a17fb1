"""Whole-output goldens for the construct models, and before/after pairs for single rewrites.

Goldens change only deliberately: BATCHIFY_UPDATE_GOLDENS=1 pytest tests/test_golden.py
(or python scripts/regenerate.py), then read the diff like code.
"""

from __future__ import annotations

import os
import shlex
import textwrap
from pathlib import Path

import pytest

from batchify import transform
from batchify.provenance import without_stamp

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODELS = sorted((HERE / "models").glob("*.py"))


@pytest.mark.parametrize("source", MODELS, ids=lambda p: p.stem)
def test_golden(source: Path) -> None:
    rel = source.relative_to(ROOT).as_posix()
    golden = HERE / "golden" / f"{source.stem}_batched.py"
    # A golden's header names its command; `--shared` declarations there are part of the case.
    words = shlex.split(golden.read_text().splitlines()[1].removeprefix("# Regenerate: "))
    shared = [words[i + 1] for i, w in enumerate(words) if w == "--shared"]
    command = shlex.join(["batchify", rel, "-o", golden.relative_to(ROOT).as_posix(),
                          *[w for s in shared for w in ("--shared", s)]])
    text = transform(source.read_bytes(), rel, command=command, shared=shared).text
    if os.environ.get("BATCHIFY_UPDATE_GOLDENS"):
        golden.write_text(text)
    # Line 3 fingerprints batchify itself (tests/test_provenance.py): it changes with any change to
    # batchify, the code below it only with a change to what is generated for this model.
    assert without_stamp(text) == without_stamp(golden.read_text())
    # Idempotent and stable: transforming again gives the same bytes.
    assert transform(source.read_bytes(), rel, command=command, shared=shared).text == text


PRELUDE = '''
import brainpy as bp
import brainpy.math as bm


class Child(bp.DynamicalSystem):
    def __init__(self):
        super().__init__()
        self.u = bm.Variable(bm.zeros(3))

    def update(self, x):
        self.u.value = self.u + x
        return self.u.value


class M(bp.DynamicalSystem):
    def __init__(self):
        super().__init__()
        self.W = bm.TrainVar(bm.ones(3))
        self.V = bm.Variable(bm.zeros(3))
        self.S = bm.Variable(bm.zeros(3))
        self.child = Child()

    def helper(self, x):
        self.S.value = x
        return x * 2

    def update(self, x):
'''

# (method body, expected update_pure body)
PAIRS = {
    "read-value": ("return self.V.value", "return bfy.unwrap(state), state.V"),
    "read-bare": ("return self.V + self.W", "return bfy.unwrap(state), state.V + params.W"),
    "assign-value": ("self.V.value = x", "state = state._replace(V=x)\nreturn bfy.unwrap(state), None"),
    "rebind": ("self.V = x * 2", "state = state._replace(V=x * 2)\nreturn bfy.unwrap(state), None"),
    "augmented": ("self.V -= x - 1", "state = state._replace(V=state.V - (x - 1))\nreturn bfy.unwrap(state), None"),
    "augmented-tighter": ("self.V -= 2 * x", "state = state._replace(V=state.V - 2 * x)\nreturn bfy.unwrap(state), None"),
    "index": ("self.V[0] = x[1]", "state = state._replace(V=state.V.at[0].set(x[1]))\nreturn bfy.unwrap(state), None"),
    "index-augmented": ("self.V[1:] += x[1:]",
                        "state = state._replace(V=state.V.at[1:].set(state.V[1:] + x[1:]))\nreturn bfy.unwrap(state), None"),
    "update-method": ("self.V.update(x)", "state = state._replace(V=x)\nreturn bfy.unwrap(state), None"),
    "unpack": ("self.V.value, self.S.value = x, -x",
               "new_V, new_S = x, -x\nstate = state._replace(V=new_V)\nstate = state._replace(S=new_S)\n"
               "return bfy.unwrap(state), None"),
    "chained": ("self.V.value = self.S.value = x",
                "value = x\nnew_V = value\nnew_S = value\nstate = state._replace(V=new_V)\n"
                "state = state._replace(S=new_S)\nreturn bfy.unwrap(state), None"),
    "own-call": ("y = self.helper(x)\nreturn y", "state, y = self.helper_pure(params, state, x)\nreturn bfy.unwrap(state), y"),
    "own-call-nested": ("return self.helper(self.helper(x))",
                        "state, helper_out = self.helper_pure(params, state, x)\n"
                        "state, helper_out_2 = self.helper_pure(params, state, helper_out)\n"
                        "return bfy.unwrap(state), helper_out_2"),
    "child-call": ("return self.child(x)",
                   "child_state, child_out = self.child.update_pure(params.child, state.child, x)\n"
                   "state = state._replace(child=child_state)\nreturn bfy.unwrap(state), child_out"),
    "child-write": ("self.child.u += x",
                    "state = state._replace(child=state.child._replace(u=state.child.u + x))\n"
                    "return bfy.unwrap(state), None"),
    "statement-call": ("self.helper(x)", "state, _ = self.helper_pure(params, state, x)\nreturn bfy.unwrap(state), None"),
    "tuple-return": ("return self.V, x", "return bfy.unwrap(state), (state.V, x)"),
}


@pytest.mark.parametrize("case", sorted(PAIRS))
def test_rewrite_pair(case: str) -> None:
    body, expected = PAIRS[case]
    source = PRELUDE + textwrap.indent(body, " " * 8) + "\n"
    text = transform(source.encode(), "m.py", command="batchify m.py").text
    pure = text.split("    def update_pure(self, params, state, x):\n", 2)[2]
    got = textwrap.dedent(pure.split("\n\n", 1)[0])
    assert got == expected


def test_generated_locals_never_shadow_user_names() -> None:
    source = PRELUDE + "        state = x\n        params = state * 2\n        self.V.value = params\n        return state\n"
    text = transform(source.encode(), "m.py", command="batchify m.py").text
    assert "    def update_pure(self, params_2, state_2, x):\n" in text
    assert "        state = x\n        params = state * 2\n        state_2 = state_2._replace(V=params)\n" in text
    assert "        return bfy.unwrap(state_2), state\n" in text


def test_generated_modules_hold_little_besides_the_model(capsys) -> None:
    """Issue 13: at most 2.0x the source's lines for a bundled example, 2.5x for a golden
    (scripts/line_ratio.py; the shared machinery lives in batchify.runtime)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("line_ratio", ROOT / "scripts" / "line_ratio.py")
    line_ratio = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(line_ratio)
    assert line_ratio.main(["--check"]) == 0, capsys.readouterr().out


def _python_3_11() -> str | None:
    """An interpreter of the oldest Python we support (3.11), where this machine has one (pyenv)."""
    root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    found = sorted(Path(root).glob("versions/3.11.*/bin/python"))
    return str(found[-1]) if found else None


@pytest.mark.skipif(_python_3_11() is None, reason="no Python 3.11 here")
def test_generated_code_compiles_on_the_oldest_python_we_support() -> None:
    """Python 3.11's grammar is older than 3.12's (PEP 701: no same quote inside an f-string's replacement
    field): every golden and bundled example's output compiles there, the grammar alone (no imports)."""
    import subprocess

    files = sorted({*(HERE / "golden").glob("*.py"), *(ROOT / "examples").rglob("*_batched.py")})
    check = "import sys\nfor f in sys.argv[1:]:\n    compile(open(f).read(), f, 'exec')\n"
    done = subprocess.run([_python_3_11(), "-c", check, *map(str, files)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(files) >= 20
