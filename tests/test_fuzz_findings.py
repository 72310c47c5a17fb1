"""Issue 20: what a fuzz run found; each case ends as correct output or a BFY diagnostic.

Each test failed on the main branch before the fix (items 1, 2, 3 and the valid/invalid inputs of 5).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODEL = (ROOT / "examples" / "rate_rnn.py").read_text()
ANCHOR = "        self.r.value = bm.tanh(self.h)\n"


def batchify(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "batchify", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def with_line(extra: str) -> str:
    assert ANCHOR in MODEL
    return MODEL.replace(ANCHOR, ANCHOR + extra)


def test_a_crlf_line_in_a_copied_helper_keeps_the_output_idempotent(tmp_path: Path) -> None:
    """Item 1: one CRLF line made `--check` stale forever."""
    src = tmp_path / "crlf.py"
    text = MODEL.replace("import brainpy.math as bm\n", "import brainpy.math as bm\n\n\ndef doubled(v):\r\n"
                         "    return v * 2.0\n", 1).replace("bm.tanh(self.h)", "doubled(bm.tanh(self.h))")
    src.write_bytes(text.encode())
    out = tmp_path / "crlf_batched.py"
    assert batchify(str(src), "-o", str(out), cwd=tmp_path).returncode == 0
    assert b"\r" not in out.read_bytes()
    check = batchify(str(src), "-o", str(out), "--check", cwd=tmp_path)
    assert check.returncode == 0, check.stderr


def verify(src: Path, out: Path) -> subprocess.CompletedProcess:
    return batchify("verify", str(src), str(out), "--init", "3, 8, 2", "--input-shape", "x=3", "--steps", "6",
                    "--no-speed", cwd=src.parent)


def test_an_unpacking_of_variable_objects_is_refused_and_of_values_verifies(tmp_path: Path) -> None:
    """Item 2: `self.h.value, self.r.value = self.r, self.h` assigns the Variable objects: the
    original's r ends as its own old value (not a swap). Refused at its line; the value swap verifies."""
    src = tmp_path / "swap.py"
    src.write_text(with_line("        self.h.value, self.r.value = self.r, self.h\n"))
    result = batchify(str(src), "-o", str(tmp_path / "swap_batched.py"), cwd=tmp_path)
    line = src.read_text().splitlines().index("        self.h.value, self.r.value = self.r, self.h") + 1
    assert result.returncode == 1 and f"swap.py:{line}:46: BFY205" in result.stderr, result.stderr
    src.write_text(with_line("        self.h.value, self.r.value = self.r.value, self.h.value\n"))
    out = tmp_path / "swap_batched.py"
    assert batchify(str(src), "-o", str(out), cwd=tmp_path).returncode == 0
    checked = verify(src, out)
    assert checked.returncode == 0 and "PASS" in checked.stdout, checked.stdout + checked.stderr


def test_an_update_returning_its_own_variable_verifies(tmp_path: Path) -> None:
    """Item 3: the original's reference recorded the Variable object, read after the last step."""
    src = tmp_path / "returns_variable.py"
    src.write_text(MODEL.replace("        return self.r @ self.w_out, self.r.value\n", "        return self.r\n"))
    out = tmp_path / "returns_variable_batched.py"
    assert batchify(str(src), "-o", str(out), cwd=tmp_path).returncode == 0
    checked = verify(src, out)
    assert checked.returncode == 0 and "PASS" in checked.stdout, checked.stdout + checked.stderr


@pytest.mark.parametrize("extra", [
    '        note = "before\u2028after"  # a line separator \u2028 in a string and a comment\n',
    '        note = "form\x0cfeed"\n        # a form feed \x0c in a comment\n',
])
def test_line_separators_inside_strings_and_comments_are_kept(tmp_path: Path, extra: str) -> None:
    """Item 5: U+2028 and form feeds are not line breaks to Python; they were split as such."""
    src = tmp_path / "separators.py"
    src.write_text(with_line(extra))
    out = tmp_path / "separators_batched.py"
    result = batchify(str(src), "-o", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    compile(text, str(out), "exec")
    assert extra.strip().split("=", 1)[1].split("#")[0].strip() in text


@pytest.mark.parametrize("extra,what", [
    ('        note = "\0"\n', "null bytes"),
    ("        y = print(*property)\n        y = print(sep='', sep='')\n", "keyword argument repeated"),
])
def test_invalid_python_that_libcst_accepts_is_bfy001(tmp_path: Path, extra: str, what: str) -> None:
    """Item 5: a NUL byte or a repeated keyword is not Python: BFY001, not an internal error."""
    src = tmp_path / "invalid.py"
    src.write_text(with_line(extra))
    result = batchify(str(src), "-o", str(tmp_path / "out.py"), cwd=tmp_path)
    assert result.returncode == 1 and "BFY001" in result.stderr and what in result.stderr, result.stderr


LOCAL_CHILD = '''import brainpy as bp
import brainpy.math as bm


class Drive(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.num = n
        self.spike = bm.Variable(bm.zeros(n, dtype=bool))

    def update(self):
        self.spike.value = bm.random.random(self.num) < 0.1


class Circuit(bp.DynSysGroup):
    def __init__(self, n=4):
        super().__init__()
        drive = Drive(n)
        cells = bp.dyn.Lif(n)
        self.syn = bp.synapses.Exponential(drive, cells, bp.conn.One2One(), g_max=1.0)  # <- 1
        self.drive = drive  # <- 2
        self.cells = cells
'''


def test_a_model_of_the_file_built_into_a_local_and_given_to_a_built_in_is_refused(tmp_path: Path) -> None:
    """Item 4 (the Wang 2002 network's pattern): exit 0, then the batched class could not be built."""
    src = tmp_path / "circuit.py"
    src.write_text(LOCAL_CHILD)
    lines = {m: n for n, t in enumerate(LOCAL_CHILD.splitlines(), 1) for m in ("1", "2") if t.endswith(f"# <- {m}")}
    for flags in ([], ["--class", "Circuit"]):
        result = batchify(str(src), "-o", str(tmp_path / "out.py"), *flags, cwd=tmp_path)
        assert result.returncode == 1, result.stderr
        assert f"circuit.py:{lines['1']}:" in result.stderr and "BFY104" in result.stderr, result.stderr
        assert f"circuit.py:{lines['2']}:" in result.stderr and "BFY105" in result.stderr, result.stderr
    assert batchify(str(src), "-o", str(tmp_path / "out.py"), "--class", "Drive", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("extra,code", [
    ("        self.traces[0:2] = [x, x]\n", "BFY205"),
])
def test_a_slice_write_into_a_varlist_is_a_diagnostic(tmp_path: Path, extra: str, code: str) -> None:
    """Item 5: it ended in BFY900 ('Slice' object has no attribute 'value')."""
    text = MODEL.replace("        self.r = Variable(bm.zeros(n_rec))\n",
                         "        self.r = Variable(bm.zeros(n_rec))\n"
                         "        self.traces = bm.VarList([bm.Variable(bm.zeros(n_rec)) for _ in range(3)])\n")
    src = tmp_path / "slices.py"
    src.write_text(text.replace(ANCHOR, ANCHOR + extra.replace("x, x", "self.h.value, self.h.value")))
    result = batchify(str(src), "-o", str(tmp_path / "out.py"), cwd=tmp_path)
    assert result.returncode == 1 and f" {code} " in result.stderr, result.stderr


def test_a_variable_and_a_child_under_one_name_is_a_diagnostic(tmp_path: Path) -> None:
    """Item 5: it ended in BFY900 (a repeated keyword in the generated constructor)."""
    src = tmp_path / "same_name.py"
    src.write_text("import brainpy as bp\nimport brainpy.math as bm\n\n\nclass Part(bp.DynamicalSystem):\n"
                   "    def __init__(self, n):\n        super().__init__()\n        self.u = bm.Variable(bm.zeros(n))\n\n"
                   "    def update(self, x):\n        self.u.value = x\n        return x\n\n\n"
                   "class Whole(bp.DynamicalSystem):\n    def __init__(self, n, nested=True):\n        super().__init__()\n"
                   "        if nested:\n            self.part = Part(n)\n        else:\n"
                   "            self.part = bm.Variable(bm.zeros(n))\n\n    def update(self, x):\n        return x\n")
    result = batchify(str(src), "-o", str(tmp_path / "out.py"), "--class", "Whole", cwd=tmp_path)
    assert result.returncode == 1 and "same_name.py:21:13: BFY107" in result.stderr, result.stderr


def test_a_double_underscore_class_name_is_refused(tmp_path: Path) -> None:
    """Item 6: `class __Net` got name-mangled references in the output (NameError, exit 0)."""
    src = tmp_path / "mangled.py"
    src.write_text(MODEL.replace("class RateRNN(", "class __RateRNN("))
    result = batchify(str(src), "-o", str(tmp_path / "out.py"), cwd=tmp_path)
    assert result.returncode == 1 and "BFY010 the class name __RateRNN" in result.stderr, result.stderr


def test_an_nfkc_spelling_of_a_variable_is_that_variable(tmp_path: Path) -> None:
    """Item 6: `self.Ｖ` is `self.V` to Python (PEP 3131); it crashed at run time."""
    src = tmp_path / "nfkc.py"
    src.write_text(MODEL.replace("        self.r.value = bm.tanh(self.h)\n", "        self.ｒ.value = bm.tanh(self.ｈ)\n"))
    out = tmp_path / "nfkc_batched.py"
    assert batchify(str(src), "-o", str(out), cwd=tmp_path).returncode == 0
    checked = verify(src, out)
    assert checked.returncode == 0 and "PASS" in checked.stdout, checked.stdout + checked.stderr


def test_a_match_on_configuration_verifies(tmp_path: Path) -> None:
    """Item 6: a `match` on configuration was refused as 'state written inside a nested function'."""
    src = tmp_path / "matched.py"
    src.write_text(MODEL.replace("        self.alpha = dt / tau\n", "        self.alpha = dt / tau\n        self.kind = 'tanh'\n")
                   .replace(ANCHOR, "        match self.kind:\n            case 'tanh':\n"
                            "                self.r.value = bm.tanh(self.h)\n            case _:\n"
                            "                self.r.value = self.h.value\n"))
    out = tmp_path / "matched_batched.py"
    result = batchify(str(src), "-o", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    checked = verify(src, out)
    assert checked.returncode == 0 and "PASS" in checked.stdout, checked.stdout + checked.stderr


def test_user_errors_in_verify_are_bfy302_at_the_users_line(tmp_path: Path) -> None:
    """Item 7: a constructor that raises (BFY302 at its line, exit 2); a bad --init (BFY302);
    a Variable named `mode` (refused when transforming, BFY010)."""
    src = tmp_path / "picky.py"
    src.write_text(MODEL.replace("        super().__init__()\n", "        super().__init__()\n        if n_in > 5:\n"
                                 "            raise ValueError('at most 5 inputs')\n", 1))
    out = tmp_path / "picky_batched.py"
    assert batchify(str(src), "-o", str(out), cwd=tmp_path).returncode == 0
    line = src.read_text().splitlines().index("            raise ValueError('at most 5 inputs')") + 1
    raised = batchify("verify", str(src), str(out), "--init", "9, 8, 2", "--input-shape", "x=9", "--no-speed",
                      cwd=tmp_path)
    assert raised.returncode == 2 and f"picky.py:{line}:1: BFY302" in raised.stderr, raised.stderr
    assert "ValueError: at most 5 inputs" in raised.stderr
    bad = batchify("verify", str(src), str(out), "--init", "3, (", "--input-shape", "x=3", "--no-speed", cwd=tmp_path)
    assert bad.returncode == 2 and "BFY302" in bad.stderr and "BFY900" not in bad.stderr, bad.stderr
    named = tmp_path / "named_mode.py"
    named.write_text(MODEL.replace("self.r = Variable(bm.zeros(n_rec))", "self.mode = Variable(bm.zeros(n_rec))"))
    result = batchify(str(named), "-o", str(tmp_path / "named_batched.py"), cwd=tmp_path)
    assert result.returncode == 1 and "BFY010 self.mode is BrainPy's computing mode" in result.stderr, result.stderr


def test_a_generated_module_that_raises_is_a_verification_fail(tmp_path: Path) -> None:
    """Issue 17 item 3 too: a rewrite bug (planted here) is a FAIL naming the generated line, exit 1."""
    src = tmp_path / "rate_rnn.py"
    src.write_text(MODEL)
    out = tmp_path / "rate_rnn_batched.py"
    assert batchify(str(src), "-o", str(out), cwd=tmp_path).returncode == 0
    text = out.read_text()
    planted = text.replace("    def update_pure(self, params, state, x):\n",
                           "    def update_pure(self, params, state, x):\n        raise KeyError('planted')\n", 1)
    out.write_text(planted)
    line = planted.splitlines().index("        raise KeyError('planted')") + 1
    result = verify(src, out)
    assert result.returncode == 1 and f"rate_rnn_batched.py:{line}:1: BFY303 verification FAIL" in result.stderr, (
        result.stdout + result.stderr)
    assert "KeyError" in result.stderr and "BFY900" not in result.stderr
