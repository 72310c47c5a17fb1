"""The command line as users call it: real subprocesses, exit codes, files left (or not)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
import sys
from pathlib import Path

import pytest
from example_specs import EXAMPLES, SPECS, ROOT

from batchify.diagnostics import CODES

DIAGNOSTIC = re.compile(r"^(?P<path>[^\n]+):(?P<line>\d+):(?P<col>\d+): (?P<code>BFY\d{3}) (?P<msg>.+)$")

GOOD = '''import brainpy as bp
import brainpy.math as bm


class Leaky(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.w = bm.TrainVar(bm.ones((n, n)))
        self.v = bm.Variable(bm.zeros(n))

    def update(self, x):
        self.v.value = 0.9 * self.v + x @ self.w
        return self.v.value
'''


def batchify(*args: str, cwd: Path | None = None, stdin: bytes | None = None, env=None):
    return subprocess.run([sys.executable, "-m", "batchify", *args], cwd=cwd, input=stdin,
                          capture_output=True, env=env)


def model(body: str, init: str = "", header: str = "") -> str:
    """A model whose __init__ ends with ``init`` and whose class body ends with ``body``."""
    text = GOOD.replace("        self.v = bm.Variable(bm.zeros(n))\n",
                        "        self.v = bm.Variable(bm.zeros(n))\n" + init)
    return header + text + body


BAD_SOURCES = {
    "syntax-error": ("def broken(:\n    pass\n", "BFY001"),
    "no-model-class": ("import numpy as np\n\nclass Plain:\n    pass\n", "BFY004"),
    "empty-file": ("", "BFY004"),
    "timedelay": (model("", "        self.past = bm.TimeDelay(bm.zeros(n), 2.0)\n"), "BFY103"),
    "builtin-wired-to-own-model": (GOOD + "\n\nclass Net(bp.DynSysGroup):\n    def __init__(self):\n"
                                   "        super().__init__()\n        self.seq = bp.Sequential(Leaky(2), bp.dnn.Linear(2, 2))\n",
                                   "BFY104"),
    "plain-class-holding-variables": (GOOD + "\n\nclass Counter:\n    def __init__(self, n):\n"
                                      "        self.total = bm.Variable(bm.zeros(n))\n\n    def tick(self, x):\n"
                                      "        self.total.value += x\n        return self.total.value\n\n\n"
                                      "class Net(bp.DynamicalSystem):\n    def __init__(self, n):\n"
                                      "        super().__init__()\n        self.counter = Counter(n)\n\n"
                                      "    def update(self, x):\n        return self.counter.tick(x)\n", "BFY106"),
    "children-in-list": (GOOD + "\n\nclass Net(bp.DynSysGroup):\n    def __init__(self):\n        super().__init__()\n"
                         "        self.layers = [Leaky(2), Leaky(3)]\n", "BFY105"),
    # (probe K, BrainPy's ei_nets.py: main said 'BFY004 no BrainPy model class found' at 1:1)
    "model-in-function": ("import brainpy as bp\nimport brainpy.math as bm\n\n\ndef model1():\n"
                          "    class Leaky(bp.DynamicalSystem):\n        def __init__(self, n):\n"
                          "            super().__init__()\n            self.v = bm.Variable(bm.zeros(n))\n\n"
                          "    return Leaky(3)\n", "BFY106"),
    # (probe K: main exited 0, and the batched constructor built Leaky without its batch size)
    "children-in-collector": (GOOD + "\n\nclass Net(bp.DynSysGroup):\n    def __init__(self):\n        super().__init__()\n"
                              "        self.pops = bp.Collector()\n        self.pops['E'] = Leaky(2)\n"
                              "        self.register_implicit_nodes(self.pops)\n", "BFY105"),
    "weight-written": (model("\n    def learn(self, x):\n        self.w += 0.1 * bm.outer(self.v, x)\n"), "BFY201"),
    "plain-attribute-written": (model("\n    def count(self, x):\n        self.steps = self.v.sum()\n"), "BFY202"),
    "plain-attribute-in-unpacking": (model("\n    def count(self, x):\n        self.v.value, self.steps = x, 1\n"),
                                     "BFY202"),
    "write-in-closure": (model("\n    def run(self, xs):\n        def body(x):\n            self.v.value = x\n"
                               "        return jax.lax.map(body, xs)\n"), "BFY203"),
    "stateful-call-in-lambda": (model("\n    def twice(self, x):\n        f = lambda: self.update(x)\n        return f()\n"),
                                "BFY204"),
    "python-if-on-state": (model("\n    def gate(self, x):\n        if self.v.sum() > 0:\n            self.v.value = x\n"),
                           "BFY210"),
    "learned-online-undeclared": (model("\n    def learn(self, x):\n        self.g += bm.outer(x, self.v @ self.g)\n",
                                        "        self.g = bm.Variable(bm.ones((n, n)))\n"), "BFY211"),
    # (probe M, canns' Oja and BCM layers, y = W x: main exited 0 and each example learned its own W, unasked)
    "learned-online-on-the-left": (model("\n    def drive(self, x):\n        return self.g.value @ x\n\n"
                                         "    def learn(self, x):\n        self.g.value += 0.1 * bm.outer(x, x)\n",
                                         "        self.g = bm.Variable(bm.ones((n, n)))\n"), "BFY211"),
    "learned-online-transposed": (model("\n    def drive(self, x):\n        return x @ self.g.T\n\n"
                                        "    def learn(self, x):\n        self.g += 0.1 * bm.outer(x, x)\n",
                                        "        self.g = bm.Variable(bm.ones((n, n)))\n"), "BFY211"),
    "stored-function-reads-variable": (model("", "        self.scale = lambda x: self.update(x) * self.w\n"), "BFY212"),
    "in-place-method": (model("\n    def clear(self):\n        self.v.sort()\n"), "BFY205"),
    "numpy-random-draw": (model("\n    def noisy(self, x):\n        self.v += np.random.normal(size=x.shape)\n",
                                header="import numpy as np\n"), "BFY206"),
    # (probe M, canns' AmariHopfieldNetwork: main exited 0, and verify blamed 'a model handed to this one')
    "global-key-read": (model("\n    def noisy(self, x):\n        key = bm.random.get_key()\n"
                              "        self.v += jax.random.normal(key, x.shape)\n", header="import jax\n"), "BFY206"),
    "random-draw-in-lambda": (model("\n    def noisy(self, x):\n        f = lambda: bm.random.normal(size=x.shape)\n"
                                    "        self.v += f()\n"), "BFY204"),
    "star-kwargs": (model("\n    def many(self, **xs):\n        self.v.value = xs['a']\n"), "BFY207"),
    # (a property that only reads state is read in place; one that changes it has nothing to thread the change)
    "stateful-property": (model("\n    @property\n    def rate(self):\n        self.v.value = self.v * 0.5\n"
                                "        return self.v.mean()\n"), "BFY208"),
    "unknown-variable": (model("\n    def peek(self):\n        return self.u.value\n"), "BFY209"),
    # (reset_state may create Variables: its users call it before running the model)
    "variable-outside-init": (model("\n    def grow(self):\n        self.u = bm.Variable(bm.zeros(3))\n"), "BFY101"),
    "variable-in-list": (model("", "        self.vs = [bm.Variable(bm.zeros(n))]\n"), "BFY102"),
    # (probe I: main said BFY101 'a Variable is created in reset_state()', where creating one is fine)
    # (an unpacked pair, self.a, self.k = bm.Variable(...), 1, is followed since: each pair on its own)
    "variable-packed-in-reset": (model("\n    def reset_state(self, batch_size=None):\n"
                                       "        self.pair = (bm.Variable(bm.zeros(3)), 1)\n"),
                                 "BFY102"),
    "name-only-in-main": (model("\n    def scaled(self, x):\n        self.v.value = x * SCALE\n")
                          + "\n\nif __name__ == '__main__':\n    SCALE = 2.0\n", "BFY012"),
    "reserved-attribute": (model("", "        self.rng_key = bm.Variable(bm.zeros(n))\n"), "BFY010"),
    "import-clash": (model("\n    def squash(self, x):\n        self.v.value = bfy.tanh(x)\n",
                           header="import numpy as bfy\n"), "BFY011"),
    "batch-size-parameter": (GOOD.replace("def __init__(self, n)", "def __init__(self, n, batch_size=1)"), "BFY010"),
    # (from a probe, 2026-12-04: main exited 0 on each, and the batched class computed something else or failed)
    "class-decorator": ("def with_gain(cls):\n    cls.gain = 3.0\n    return cls\n\n\n" + GOOD.replace(
        "class Leaky", "@with_gain\nclass Leaky"), "BFY014"),
    "conditional-expression-on-state": (model("\n    def gate(self, x):\n        return x if self.v.sum() > 0 else -x\n"),
                                        "BFY210"),
    "assert-on-state": (model("\n    def gate(self, x):\n        assert self.v.sum() >= 0\n        return x\n"),
                        "BFY210"),
    "model-class-nested-in-a-model": (model("\n    class Cell(bp.DynamicalSystem):\n        def __init__(self, n):\n"
                                            "            super().__init__()\n            self.h = bm.Variable(bm.zeros(n))\n",
                                            "        self.cell = self.Cell(n)\n"), "BFY106"),
    "legacy-register-delay": (model("", "        self.pos = self.register_delay('v', 2, self.v)\n"), "BFY103"),
    "star-import-of-brainpy-math": (GOOD.replace("import brainpy.math as bm\n", "import brainpy.math as bm\n"
                                                 "from brainpy.math import *\n"), "BFY012"),
}


def files_in(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def assert_one_diagnostic(result, code: str) -> None:
    err = result.stderr.decode()
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    match = DIAGNOSTIC.match(lines[0])
    assert match, lines[0]
    assert match["code"] == code, lines[0]
    assert result.returncode == CODES[code].exit_code, (result.returncode, err)
    assert result.stdout == b""


@pytest.mark.parametrize("case", sorted(BAD_SOURCES))
def test_bad_source_gives_one_diagnostic_and_no_file(case: str, tmp_path: Path) -> None:
    text, code = BAD_SOURCES[case]
    src = tmp_path / "model.py"
    src.write_text(text)
    before = files_in(tmp_path)
    result = batchify(str(src), "-o", str(tmp_path / "model_batched.py"))
    assert_one_diagnostic(result, code)
    assert files_in(tmp_path) == before
    assert src.read_text() == text


def test_a_state_vector_on_the_left_of_a_product_is_not_learned_online(tmp_path: Path) -> None:
    """The look-alike of learned-online-on-the-left: a rate vector (made with one size) on the left of
    its recurrent weights, moved by a method outside update, is state."""
    src = tmp_path / "model.py"
    src.write_text(model("\n    def drive(self, x):\n        return self.v.value @ self.w\n\n"
                         "    def nudge(self, x):\n        self.v.value += 0.1 * x\n"))
    result = batchify(str(src), "-o", str(tmp_path / "model_batched.py"))
    assert result.returncode == 0, result.stderr.decode()


def test_built_ins_gathered_in_a_local_list_for_a_sequential_still_transform(tmp_path: Path) -> None:
    """The look-alike of the Collector refusal: bp.Sequential(*layers), itself a built-in, holds them."""
    src = tmp_path / "model.py"
    src.write_text(GOOD + "\n\nclass Net(bp.DynSysGroup):\n    def __init__(self, n):\n        super().__init__()\n"
                   "        layers = []\n        for _ in range(2):\n            layers.append(bp.dnn.Dense(n, n))\n"
                   "        self.seq = bp.Sequential(*layers)\n\n    def update(self, x):\n        return self.seq(x)\n")
    result = batchify(str(src), "-o", str(tmp_path / "model_batched.py"))
    assert result.returncode == 0, result.stderr.decode()
    assert 'builtins=("seq",)' in (tmp_path / "model_batched.py").read_text()


def test_a_class_batched_whole_that_builds_a_model_of_the_file_is_refused(tmp_path: Path) -> None:
    """--class Conn, Conn deriving from a BrainPy built-in (an older BrainPy's bp.dyn.TwoEndConn): batched
    whole, as library code. main: 'BFY900 the generated module reads 'Leaky', which it never binds'."""
    src = tmp_path / "model.py"
    text = (GOOD + "\n\nclass Conn(bp.dyn.TwoEndConn):\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.post = Leaky(n)\n\n    def update(self, x):\n        return self.post(x)\n")
    src.write_text(text)
    result = batchify(str(src), "--class", "Conn", "-o", str(tmp_path / "model_batched.py"))
    assert_one_diagnostic(result, "BFY104")
    assert "Conn derives from the BrainPy built-in brainpy.dyn.TwoEndConn and is batched whole" in result.stderr.decode()
    assert files_in(tmp_path) == {"model.py"} and src.read_text() == text


def test_pythons_own_warnings_about_the_source_are_not_batchifys_lines(tmp_path: Path) -> None:
    """Probe K (BrainPy's fixed_points_finder2.py): a string with '\\l' made the transform print Python's
    'SyntaxWarning: invalid escape sequence' on stderr, a line no tool reading diagnostics can parse."""
    src = tmp_path / "model.py"
    src.write_text(GOOD + "\n\nLABEL = 'Real($\\lambda$)'\n")
    assert "\\l" in src.read_text()
    result = batchify(str(src), "-o", str(tmp_path / "model_batched.py"))
    assert result.returncode == 0 and result.stderr.decode() == "", result.stderr.decode()


def test_missing_file(tmp_path: Path) -> None:
    result = batchify(str(tmp_path / "nope.py"), "-o", str(tmp_path / "out.py"))
    assert_one_diagnostic(result, "BFY002")
    assert files_in(tmp_path) == set()


def test_directory_as_source(tmp_path: Path) -> None:
    result = batchify(str(tmp_path), "-o", str(tmp_path / "out.py"))
    assert_one_diagnostic(result, "BFY002")
    assert files_in(tmp_path) == set()


def test_non_utf8_source(tmp_path: Path) -> None:
    src = tmp_path / "latin.py"
    src.write_bytes(GOOD.encode() + b"# caf\xe9\n")
    result = batchify(str(src), "-o", str(tmp_path / "out.py"))
    assert_one_diagnostic(result, "BFY003")
    assert "latin.py:14:" in result.stderr.decode()
    assert files_in(tmp_path) == {"latin.py"}


def test_source_equal_to_output_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "model.py"
    src.write_text(GOOD)
    for out in (str(src), str(tmp_path / "." / "model.py")):
        result = batchify(str(src), "-o", out)
        assert_one_diagnostic(result, "BFY006")
        assert src.read_text() == GOOD


def test_unwritable_output(tmp_path: Path) -> None:
    src = tmp_path / "model.py"
    src.write_text(GOOD)
    # Issue 17: a missing output folder is created, as code generators do.
    result = batchify(str(src), "-o", str(tmp_path / "new" / "dir" / "out.py"))
    assert result.returncode == 0 and (tmp_path / "new" / "dir" / "out.py").is_file()
    (tmp_path / "plain-file").write_text("not a folder")
    result = batchify(str(src), "-o", str(tmp_path / "plain-file" / "out.py"))
    assert_one_diagnostic(result, "BFY007")
    assert "plain-file" in result.stderr.decode()
    (tmp_path / "taken").mkdir()
    result = batchify(str(src), "-o", str(tmp_path / "taken"))
    assert_one_diagnostic(result, "BFY007")
    assert files_in(tmp_path) == {"model.py", "taken", "new", "plain-file"} and not any((tmp_path / "taken").iterdir())


def test_unknown_class(tmp_path: Path) -> None:
    src = tmp_path / "model.py"
    src.write_text(GOOD)
    result = batchify(str(src), "--class", "Nope", "-o", str(tmp_path / "out.py"))
    assert_one_diagnostic(result, "BFY005")
    assert "Leaky" in result.stderr.decode()


@pytest.mark.parametrize("args", [["--no-such-flag"], ["--format", "xml"], ["--check"], []],
                         ids=["unknown-flag", "bad-format", "check-without-output", "no-source"])
def test_usage_errors_exit_2_with_one_line(args: list[str], tmp_path: Path) -> None:
    src = tmp_path / "model.py"
    src.write_text(GOOD)
    result = batchify(*([str(src)] if args != [] else []), *args)
    err = result.stderr.decode()
    assert result.returncode == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


USAGE_ERRORS = {"unknown-flag": ["--no-such-flag"], "check-without-output": ["--check", "--format=json"],
                "missing-value": ["--format", "json", "-o"]}


@pytest.mark.parametrize(("command", "args"), [
    pytest.param(command, args, id=f"{' '.join(['batchify', *command])}: {name}")
    for command in ([], ["verify"], ["hook"]) for name, args in USAGE_ERRORS.items()
    if not (command and name == "check-without-output")])  # verify and hook take --check without -o
def test_usage_errors_honour_format_json(command: list[str], args: list[str], tmp_path: Path) -> None:
    """With --format json a usage error was a plain line on stderr (main printed 'batchify: error:
    unrecognized arguments: --no-such-flag ...'): an IDE reading JSON got none. Now one JSON object,
    BFY018, exit 2."""
    import json

    src = tmp_path / "model.py"
    src.write_text(GOOD)
    args = args if "json" in " ".join(args) else [*args, "--format", "json"]
    result = batchify(*command, str(src), *args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    payload = json.loads(result.stderr)
    (diagnostic,) = payload["diagnostics"]
    assert diagnostic["code"] == "BFY018" and diagnostic["path"] == "<command line>", diagnostic
    assert "--help" in diagnostic["message"]


def test_internal_errors_honour_format_json(tmp_path: Path) -> None:
    """Our own bug (BFY900) was a plain line even with --format json."""
    import json

    src = tmp_path / "model.py"
    src.write_text(GOOD)
    hook = tmp_path / "sitecustomize.py"
    hook.write_text("import batchify.pipeline as p\n"
                    "def broken(*a, **k):\n    raise RuntimeError('planted')\n"
                    "p.transform = broken\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env.pop("BATCHIFY_DEBUG", None)
    result = batchify(str(src), "--format", "json", env=env)
    assert result.returncode == 123, result.stderr
    (diagnostic,) = json.loads(result.stderr)["diagnostics"]
    assert diagnostic["code"] == "BFY900" and "planted" in diagnostic["message"], diagnostic


def test_failed_run_keeps_existing_output(tmp_path: Path) -> None:
    src = tmp_path / "model.py"
    out = tmp_path / "model_batched.py"
    src.write_text(GOOD)
    assert batchify(str(src), "-o", str(out)).returncode == 0
    good = out.read_bytes()
    src.write_text(GOOD + "\n    def bad(self):\n        self.w += self.v.sum()\n")
    result = batchify(str(src), "-o", str(out))
    assert result.returncode == 1
    assert out.read_bytes() == good
    assert files_in(tmp_path) == {"model.py", "model_batched.py"}


def test_json_diagnostics(tmp_path: Path) -> None:
    import json

    src = tmp_path / "model.py"
    src.write_text(BAD_SOURCES["weight-written"][0])
    result = batchify(str(src), "--format", "json")
    payload = json.loads(result.stderr)
    assert result.returncode == 1 and result.stdout == b""
    (diag,) = payload["diagnostics"]
    assert diag["code"] == "BFY201" and diag["line"] == 16 and diag["column"] == 9
    assert set(diag) == {"path", "line", "column", "end_line", "end_column", "code", "message", "severity"}


def test_stdin_to_stdout(tmp_path: Path) -> None:
    result = batchify("-", stdin=GOOD.encode(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    assert "class LeakyBatched(bfy.Batched, bp.DynamicalSystem, params=LeakyParams, state=LeakyState):" in text
    assert "# Regenerate: batchify -\n" in text
    compile(text, "<out>", "exec")
    bad = batchify("-", "--stdin-filename", "pkg/model.py", stdin=b"x = (", cwd=tmp_path)
    assert bad.returncode == 1 and bad.stdout == b""
    assert bad.stderr.decode().startswith("pkg/model.py:1:")


def test_check_and_diff(tmp_path: Path) -> None:
    src = tmp_path / "model.py"
    out = tmp_path / "model_batched.py"
    src.write_text(GOOD)
    missing = batchify(str(src), "-o", str(out), "--check")
    assert missing.returncode == 1 and "BFY008" in missing.stderr.decode() and not out.exists()
    assert batchify(str(src), "-o", str(out)).returncode == 0
    assert batchify(str(src), "-o", str(out), "--check").returncode == 0
    src.write_text(GOOD.replace("0.9 *", "0.8 *"))
    before = out.read_bytes()
    stale = batchify(str(src), "-o", str(out), "--check")
    assert stale.returncode == 1 and "BFY008" in stale.stderr.decode()
    diff = batchify(str(src), "-o", str(out), "--diff")
    assert diff.returncode == 0
    assert "-        state = state._replace(v=0.9 * state.v" in diff.stdout.decode()
    assert "+        state = state._replace(v=0.8 * state.v" in diff.stdout.decode()
    assert out.read_bytes() == before


def test_check_says_what_stands_where_the_output_should_be(tmp_path: Path) -> None:
    """--check on an output path that is a folder said it "is missing" (main), and advised the command
    that fails on it; now it says what is there, and to move it away first."""
    src = tmp_path / "model.py"
    src.write_text(GOOD)
    (tmp_path / "out").mkdir()
    result = batchify(str(src), "-o", str(tmp_path / "out"), "--check")
    err = result.stderr.decode()
    assert result.returncode == 1 and "BFY008 is a directory, where the generated file should be; move it away" in err, err
    missing = batchify(str(src), "-o", str(tmp_path / "none.py"), "--check").stderr.decode()
    assert "BFY008 is missing; regenerate with: " in missing, missing
    assert (tmp_path / "out").is_dir() and not (tmp_path / "none.py").exists()


def test_outside_a_project_paths_are_anchored_at_the_source_folder(tmp_path: Path) -> None:
    """With no pyproject.toml or .git above the source, the header spelled the paths as typed, from the
    cwd: the same file checked from another folder was "generated with other options" (main), and
    its regeneration command only worked from the first folder. Now they are relative to the
    source's folder, whichever cwd runs the command."""
    if any((folder / "pyproject.toml").is_file() or (folder / ".git").exists() for folder in tmp_path.parents):
        pytest.skip("the temporary folder lies inside a project")
    (tmp_path / "lab" / "sub").mkdir(parents=True)
    src = tmp_path / "lab" / "model.py"
    src.write_text(GOOD)
    assert batchify("lab/model.py", "-o", "lab/model_batched.py", cwd=tmp_path).returncode == 0
    header = (tmp_path / "lab" / "model_batched.py").read_text().splitlines()[1]
    assert header == "# Regenerate: batchify model.py -o model_batched.py", header
    for cwd, spelled in ((tmp_path / "lab", "."), (tmp_path / "lab" / "sub", ".."), (tmp_path, "lab")):
        check = batchify(f"{spelled}/model.py", "-o", f"{spelled}/model_batched.py", "--check", cwd=cwd)
        assert check.returncode == 0, (cwd, check.stderr.decode())
    absolute = batchify(str(src), "-o", str(tmp_path / "lab" / "model_batched.py"), "--check", cwd=tmp_path / "lab" / "sub")
    assert absolute.returncode == 0, absolute.stderr.decode()


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.stem)
def test_examples_compile_are_deterministic_and_checked(spec, tmp_path: Path) -> None:
    """Two runs (under different hash seeds) give the committed bytes; --check tracks the source."""
    header = (EXAMPLES / f"{spec.stem}_batched.py").read_text().splitlines()[1]
    args = header.split()[3:]  # "# Regenerate: batchify SRC -o OUT ..." -> SRC -o OUT ...
    assert args[:3] == [f"examples/{spec.stem}.py", "-o", f"examples/{spec.stem}_batched.py"]
    stdout_runs = []
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        # --check compares the regenerated bytes with the committed file.
        assert batchify(*args, "--check", cwd=ROOT, env=env).returncode == 0
        stdout_runs.append(batchify(*[a for a in args if a not in ("-o", f"examples/{spec.stem}_batched.py")],
                                    cwd=ROOT, env=env).stdout)
    assert stdout_runs[0] == stdout_runs[1] and stdout_runs[0]
    committed = (EXAMPLES / f"{spec.stem}_batched.py").read_text()
    compile(committed, spec.stem, "exec")
    assert batchify(*args, "--check", cwd=ROOT).returncode == 0
    # A copy of the example whose source changes is reported stale.
    work = tmp_path / "examples"
    work.mkdir()
    (tmp_path / "pyproject.toml").write_text("")
    shutil.copy(spec.source, work)
    shutil.copy(spec.generated, work)
    assert batchify(*args, "--check", cwd=tmp_path).returncode == 0
    with open(work / spec.source.name, "a") as fh:
        fh.write("\n# touched\n")
    stale = batchify(*args, "--check", cwd=tmp_path)
    assert stale.returncode == 1 and "BFY008" in stale.stderr.decode()


def test_output_is_idempotent(tmp_path: Path) -> None:
    src = tmp_path / "model.py"
    out = tmp_path / "model_batched.py"
    src.write_text(GOOD)
    batchify(str(src), "-o", str(out))
    first = out.read_bytes()
    batchify(str(src), "-o", str(out))
    assert out.read_bytes() == first


def test_transform_imports_neither_jax_nor_brainpy(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from batchify.cli import main\n"
        f"rc = main([{str(EXAMPLES / 'two_layer_net.py')!r}, '-o', {str(tmp_path / 'out.py')!r}])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib', 'brainpy', 'numpy'))\n"
        "print(rc, heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.stdout.strip() == "0 []", result.stdout + result.stderr
    assert (tmp_path / "out.py").is_file()
    # The pre-commit path too: `batchify hook --check` over the project's own targets.
    hook_probe = probe.replace(f"rc = main([{str(EXAMPLES / 'two_layer_net.py')!r}, '-o', {str(tmp_path / 'out.py')!r}])",
                               "rc = main(['hook', '--check'])")
    result = subprocess.run([sys.executable, "-c", hook_probe], capture_output=True, text=True, cwd=ROOT)
    assert result.stdout.strip() == "0 []", result.stdout + result.stderr


def test_every_code_is_documented() -> None:
    doc = (ROOT / "docs" / "diagnostics.md").read_text()
    documented = set(re.findall(r"^\| (BFY\d{3}) \|", doc, re.M))
    assert documented == set(CODES)
    for code, info in CODES.items():
        assert re.search(rf"^\| {code} \| {info.exit_code} \|", doc, re.M), code


def test_header_names_version_source_hash_and_command() -> None:
    import hashlib

    from batchify import __version__

    text = (EXAMPLES / "spiking_classifier_batched.py").read_text().splitlines()
    digest = hashlib.sha256((EXAMPLES / "spiking_classifier.py").read_bytes()).hexdigest()
    assert text[0] == (f"# Generated by batchify {__version__} from examples/spiking_classifier.py "
                       f"(sha256 {digest}); do not edit.")
    assert text[1] == ("# Regenerate: batchify examples/spiking_classifier.py "
                       "-o examples/spiking_classifier_batched.py --shared i --harness --harness-steps 25 "
                       "--input-mode constant --readout sum")


def test_one_sources_target_is_the_one_the_whole_listing_has(tmp_path) -> None:
    """``batchify SRC -o OUT`` asks the configuration for its own source only (no glob of the
    project): the same target as the full listing, through a symlink too, and none for others."""
    from batchify.config import find_config

    (tmp_path / "models").mkdir()
    for name in ("lif_population.py", "noisy_lif.py", "rate_rnn.py"):
        shutil.copy(EXAMPLES / name, tmp_path / "models" / name)
    (tmp_path / "models" / "notes.txt").write_text("not a model\n")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.batchify]\n\n[[tool.batchify.targets]]\nsource = "models/*.py"\noutput = "gen/*_batched.py"\n')
    config = find_config(tmp_path)
    every = config.targets()
    assert len(every) == 3
    for target in every:
        assert config.targets(among=target.source) == [target]
    assert config.targets(among=tmp_path / "models" / "notes.txt") == []
    assert config.targets(among=ROOT / "README.md") == []
    link = tmp_path / "models" / "linked.py"
    link.symlink_to(every[0].source)
    # The link is a source as the glob finds it, and it is the file it points to.
    assert every[0] in config.targets(among=link)
    assert any(t.source == link for t in config.targets(among=link))


def test_the_harness_is_for_the_class_asked_for_even_when_another_holds_it(tmp_path: Path) -> None:
    """``--class DenseLif --harness`` in a file whose Stack holds DenseLif layers: on main no harness
    at all was written (exit 0), since a class of the file that is no target counted as DenseLif's user."""
    out = tmp_path / "out.py"
    result = batchify(str(ROOT / "tests" / "models" / "builtin_children.py"), "-o", str(out), "--class", "DenseLif",
                      "--harness", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "\nclass DenseLifHarness(" in text and "StackBatched" not in text


def test_check_reports_a_hand_edited_output_as_stale_with_exit_1(tmp_path: Path) -> None:
    """The README: `--check` exits 1 when OUT differs. main exited 2 (BFY006, as for a refused write) on a
    hand-edited output, where the hook's --check said BFY008, exit 1. A file batchify did not write stays
    BFY006 (test_output_safety)."""
    src = tmp_path / "m.py"
    src.write_text((EXAMPLES / "rate_rnn.py").read_text())
    out = tmp_path / "out.py"
    assert batchify(str(src), "-o", str(out), cwd=tmp_path).returncode == 0
    out.write_text(out.read_text() + "# edit\n")
    edited = batchify(str(src), "-o", str(out), "--check", cwd=tmp_path)
    assert edited.returncode == 1 and b"BFY008 is stale: it was edited since it was generated" in edited.stderr
    assert out.read_text().endswith("# edit\n")


def test_verify_flags_for_one_class_in_a_file_of_several_ask_for_class(tmp_path: Path) -> None:
    """main applied --init and --input-shape to no class when the file had two top-level models, then said
    'missing --input-shape x=SHAPE' for the flag just given."""
    src = tmp_path / "two.py"
    src.write_text(GOOD + GOOD.split("\n\n\n", 1)[1].replace("class Leaky", "class Other"))
    out = tmp_path / "two_batched.py"
    assert batchify(str(src), "-o", str(out), cwd=tmp_path).returncode == 0
    result = batchify("verify", str(src), str(out), "--init", "3", "--input-shape", "x=3", cwd=tmp_path)
    err = result.stderr.decode()
    assert result.returncode == CODES["BFY301"].exit_code and " BFY301 --init drives one class" in err, err
    assert "--class NAME" in err and "Traceback" not in err


def test_a_class_deriving_from_another_files_model_is_reported_as_left_out(tmp_path: Path) -> None:
    """batchify reads one file: ``class Mine(Base)`` with ``Base`` imported is left out, and says so
    (BFY019, a warning, exit 0) while the file's own models are batched. main said nothing: MineBatched
    was simply missing from the output."""
    (tmp_path / "base_mod.py").write_text(textwrap.dedent('''\
        import brainpy as bp
        import brainpy.math as bm


        class Base(bp.DynamicalSystem):
            def __init__(self, n):
                super().__init__()
                self.V = bm.Variable(bm.zeros(n))

            def update(self, x):
                self.V.value = self.V * 0.9 + x
                return self.V.value
        '''))
    (tmp_path / "sub.py").write_text(textwrap.dedent('''\
        import brainpy as bp
        import brainpy.math as bm
        from base_mod import Base


        class Mine(Base):
            def update(self, x):
                return super().update(x) * 2.


        class Own(bp.DynamicalSystem):
            def __init__(self, n):
                super().__init__()
                self.U = bm.Variable(bm.zeros(n))

            def update(self, x):
                self.U.value = self.U + x
                return self.U.value
        '''))
    done = subprocess.run([sys.executable, "-m", "batchify", "sub.py", "-o", "sub_batched.py"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ("sub.py:6:7: BFY019 warning: Mine(Base -> base_mod.Base) is left out: its base comes "
                           "from another file, and batchify reads one file. Define that base here to batch Mine "
                           "with the rest\n")
    assert "class OwnBatched(" in (tmp_path / "sub_batched.py").read_text()
    as_json = subprocess.run([sys.executable, "-m", "batchify", "sub.py", "-o", "again.py", "--format", "json"],
                             cwd=tmp_path, capture_output=True, text=True)
    assert as_json.returncode == 0 and '"code": "BFY019"' in as_json.stderr and '"severity": "warning"' in as_json.stderr
    # Named with --class, it is refused, as before; a class deriving from BrainPy alone is never reported.
    named = subprocess.run([sys.executable, "-m", "batchify", "sub.py", "-o", "mine.py", "--class", "Mine"],
                           cwd=tmp_path, capture_output=True, text=True)
    assert named.returncode == 1 and "BFY005 --class Mine" in named.stderr
    own = subprocess.run([sys.executable, "-m", "batchify", "base_mod.py", "-o", "base_batched.py"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert own.returncode == 0 and own.stderr == ""


def test_python_m_batchify_cli_runs_the_cli(tmp_path: Path) -> None:
    """Probe L: `python -m batchify.cli SRC -o OUT` exited 0 and wrote nothing (no __main__ guard)."""
    src = tmp_path / "model.py"
    src.write_text(GOOD)
    result = subprocess.run([sys.executable, "-m", "batchify.cli", str(src), "-o", str(tmp_path / "out.py")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "class LeakyBatched" in (tmp_path / "out.py").read_text()
