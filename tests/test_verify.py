"""`batchify verify` as users run it: real subprocesses against real and deliberately broken files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from example_specs import EXAMPLES, ROOT, SPECS

from batchify.equivalence import Arg, check_equivalence
from batchify.loader import load_generated, load_models


def verify(*args: str, cwd: Path = ROOT):
    return subprocess.run([sys.executable, "-m", "batchify", "verify", *args], cwd=cwd,
                          capture_output=True, text=True)


def generate(tmp_path: Path, stem: str, source: str, *flags: str) -> None:
    """``stem.py`` holding ``source`` and ``stem_batched.py`` made from it by the CLI (with ``flags``)."""
    (tmp_path / f"{stem}.py").write_text(source)
    made = subprocess.run([sys.executable, "-m", "batchify", f"{stem}.py", "-o", f"{stem}_batched.py", *flags],
                          cwd=tmp_path, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr


def verify_json(*args: str, cwd: Path = ROOT) -> tuple[int, dict]:
    result = verify(*args, "--format", "json", cwd=cwd)
    # Nothing on stderr but warnings: a file edited by hand (the bugs planted here) is said to be one.
    warnings = [d for line in result.stderr.splitlines() for d in json.loads(line)["diagnostics"]]
    assert all(d["severity"] == "warning" for d in warnings) or result.returncode == 2, result.stderr
    return result.returncode, json.loads(result.stdout)


def sections(payload: dict) -> dict[str, dict]:
    (cls,) = payload["classes"]
    return {s["name"]: s for s in cls["sections"]}


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.stem)
def test_every_example_verifies_gradients_included(spec) -> None:
    rc, payload = verify_json(f"examples/{spec.stem}.py", f"examples/{spec.stem}_batched.py")
    assert rc == 0, payload
    found = sections(payload)
    assert all(s["ok"] for s in found.values())
    has_weights = spec.stem != "lif_population"
    assert (found["grad/example"]["skipped"] is None) == has_weights
    assert (found["grad/mean"]["skipped"] is None) == has_weights


def mutate(tmp_path: Path, stem: str, old: str, new: str, count: int = 1) -> Path:
    text = (EXAMPLES / f"{stem}_batched.py").read_text()
    assert text.count(old) == count, (old, text.count(old))
    out = tmp_path / f"{stem}_batched.py"
    out.write_text(text.replace(old, new))
    return out


def planted(tmp_path: Path, stem: str, patch: str) -> Path:
    """A copy of a generated example with ``patch`` appended (it rebinds what the module uses)."""
    out = tmp_path / f"{stem}_batched.py"
    out.write_text((EXAMPLES / f"{stem}_batched.py").read_text() + patch)
    return out


def test_scaled_state_update_is_caught(tmp_path: Path) -> None:
    broken = mutate(tmp_path, "rate_rnn", "state = state._replace(r=bm.tanh(state.h))",
                    "state = state._replace(r=bm.tanh(state.h) * 1.01)")
    rc, payload = verify_json("examples/rate_rnn.py", str(broken))
    assert rc == 1
    found = sections(payload)
    assert not found["forward"]["ok"] and not found["state"]["ok"]
    first = found["forward"]["mismatches"][0]
    assert first["quantity"].startswith("output") and first["step"] == 0
    assert {m["quantity"] for m in found["state"]["mismatches"]} == {"state h", "state r"}
    assert payload["classes"][0]["classification"].startswith("transformation bug")


def test_state_shared_across_the_batch_is_caught(tmp_path: Path) -> None:
    broken = planted(tmp_path, "spiking_classifier", """
_set_state = SpikingClassifierBatched.set_state
def _shared_v_hidden(self, state):
    _set_state(self, state._replace(v_hidden=bfy.stack(state.v_hidden[0], self.batch_size)))
SpikingClassifierBatched.set_state = _shared_v_hidden
""")
    rc, payload = verify_json("examples/spiking_classifier.py", str(broken))
    assert rc == 1
    found = sections(payload)
    assert not found["forward"]["ok"]
    assert all(m["example"] >= 1 for m in found["forward"]["mismatches"])  # example 0 is the one shared
    assert "state v_hidden" in {m["quantity"] for m in found["state"]["mismatches"]}


def test_gradient_cut_is_caught(tmp_path: Path) -> None:
    broken = mutate(tmp_path, "two_layer_net", "DECAY * state.y + s @ params.w + params.b",
                    "DECAY * state.y + s @ jax.lax.stop_gradient(params.w) + params.b")
    rc, payload = verify_json("examples/two_layer_net.py", str(broken))
    assert rc == 1
    found = sections(payload)
    assert found["forward"]["ok"] and found["state"]["ok"]  # forward unchanged
    assert {m["quantity"] for m in found["grad/example"]["mismatches"]} == {"gradient readout.w"}
    assert {m["quantity"] for m in found["grad/mean"]["mismatches"]} == {"gradient readout.w (mean)"}


def test_noise_reused_for_every_example_is_caught(tmp_path: Path) -> None:
    broken = planted(tmp_path, "noisy_lif", """
import jax.numpy as _jnp
_example_keys = bfy.example_keys
bfy.example_keys = lambda seed, batch_size: _jnp.broadcast_to(_example_keys(seed, 1), (batch_size, 2))
""")
    rc, payload = verify_json("examples/noisy_lif.py", str(broken))
    assert rc == 1
    found = sections(payload)
    assert not found["forward"]["ok"]
    assert all(m["example"] >= 1 for m in found["forward"]["mismatches"])  # example 0 keeps its own stream


def test_float32_near_miss_is_classified_as_round_off() -> None:
    result = verify("examples/rate_rnn.py", "examples/rate_rnn_batched.py", "--rtol", "1e-9", "--atol", "1e-9")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "float64 rerun: float32 round-off: float64 agrees" in result.stdout
    assert "FAIL (float32 round-off" in result.stdout


def test_missing_driving_information_is_one_line_exit_2(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "spiking_classifier.py", tmp_path)
    shutil.copy(EXAMPLES / "spiking_classifier_batched.py", tmp_path)
    (tmp_path / "pyproject.toml").write_text("")
    result = verify("spiking_classifier.py", "spiking_classifier_batched.py", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("spiking_classifier.py:24:1: BFY301 cannot verify SpikingClassifier")
    assert "--init ARGS for SpikingClassifier(n_in, n_hidden, n_out, tau=8.0, v_th=1.0)" in line
    assert "--method NAME (one of reset_state, step_run)" not in line  # step_run is the only public one
    assert "--input-shape i=SHAPE or --shared i=time|VALUE for step_run(i, x)" in line
    assert "--input-shape x=SHAPE" in line
    assert '[tool.batchify.verify."spiking_classifier.py::SpikingClassifier"]' in line
    # Giving what it asked for is enough.
    ok = verify("spiking_classifier.py", "spiking_classifier_batched.py", "--init", "64, 32, 10",
                "--shared", "i=time", "--input-shape", "x=64", cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_a_class_with_no_stateful_method_says_so(tmp_path: Path) -> None:
    """main: 'missing --method NAME (one of no stateful method)', as if a flag could supply one."""
    generate(tmp_path, "still", "import brainpy as bp\nimport brainpy.math as bm\n\n\n"
                                "class Still(bp.DynamicalSystem):\n    def __init__(self, n):\n"
                                "        super().__init__()\n        self.V = bm.Variable(bm.zeros(n))\n\n"
                                "    def update(self, x):\n        return x * 2.0\n")
    result = verify("still.py", "still_batched.py", "--init", "3", "--input-shape", "x=3", cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == ("still.py:5:1: BFY301 cannot verify Still: batchify found no stateful method in "
                                     "it (none reads or writes a Variable, or calls a child model by its attribute), "
                                     "so nothing would be checked")


FIXTURES = ROOT / "tests" / "models"
HELD_BACK_STYLE = [
    # file, class, --init, inputs, extra flags
    ("aliases_and_helpers", "Cell", "6", ["--input-shape", "x=6:float32:20.0:-10.0"], []),  # below clip's -3 too
    ("inherit_and_nest", "Circuit", "4, 6", ["--input-shape", "x=4:float32:3.0"], []),
    ("odeint_share", "LIF", "6", ["--input-shape", "x=6:float32:200.0"], ["--dt", "0.1", "--steps", "40"]),
]


@pytest.mark.parametrize("case", HELD_BACK_STYLE, ids=lambda c: c[1])
def test_verdict_agrees_with_an_independent_check(case, tmp_path: Path) -> None:
    stem, cls, init, inputs, extra = case
    out = tmp_path / f"{stem}_batched.py"
    subprocess.run([sys.executable, "-m", "batchify", str(FIXTURES / f"{stem}.py"), "-o", str(out)], check=True)
    rc, payload = verify_json(str(FIXTURES / f"{stem}.py"), str(out), "--class", cls, "--init", init,
                              *inputs, *extra)
    # The independent check: the test suite's own loop over examples, with its own inputs.
    original = getattr(load_models(FIXTURES / f"{stem}.py", f"indep_{stem}"), cls)
    batched = getattr(load_generated(out, f"indep_gen_{stem}"), f"{cls}Batched")
    import brainpy.math as bm

    bm.random.seed(5)
    model = original(*[int(v) for v in init.split(",")])
    n_in = int(inputs[1].split("=")[1].split(":")[0])
    xs = (np.random.default_rng(9).random((3, 30, n_in)) * 50).astype(np.float32)
    dt = float(extra[1]) if extra else None
    independent = check_equivalence(model, batched, "update", [Arg(per_example=xs)], batch=3, steps=30, dt=dt)
    assert (rc == 0) == independent.ok == True  # noqa: E712 - both say the file is right
    assert payload["classes"][0]["verdict"] == "PASS"


def test_generate_then_verify(tmp_path: Path) -> None:
    out = tmp_path / "rate_rnn_batched.py"
    result = subprocess.run([sys.executable, "-m", "batchify", "examples/rate_rnn.py", "-o", str(out), "--verify",
                             "--init", "3, 16, 2", "--input-shape", "x=3", "--steps", "10"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert out.is_file() and "RateRNN  update  4  10  ok" in result.stdout


def test_old_tdi_signature_and_neighbours_do_not_get_in_the_way(tmp_path: Path) -> None:
    """`update(self, tdi, x=None)` is driven without a tdi (BrainPy fills it from bp.share), and
    verifying one class of a file analyses and loads only that class and what it needs."""
    src = tmp_path / "models.py"
    src.write_text((ROOT / "tests" / "models" / "old_style_and_modes.py").read_text()
                   + "\n\nclass Broken(bp.TwoEndConn):  # a removed BrainPy API, in the same file\n    pass\n")
    out = tmp_path / "models_batched.py"
    subprocess.run([sys.executable, "-m", "batchify", str(src), "-o", str(out), "--class", "FHN"], check=True,
                   capture_output=True)
    result = subprocess.run([sys.executable, "-m", "batchify", "verify", str(src), str(out), "--class", "FHN",
                             "--init", "4", "--input-shape", "x=4", "--dt", "0.1", "--steps", "6", "--batch", "3",
                             "--format", "json"], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["classes"][0]["verdict"] == "PASS"


def test_init_builds_brainpy_objects_and_source_classes_are_shared(tmp_path: Path) -> None:
    """`--init` may build BrainPy objects under bp/bm (a mode), and a source Enum compared in
    update is the same class on both sides of the check."""
    from batchify.drive import InitExpr, parse_init

    args, kwargs = parse_init("4, mode=bm.training_mode, kind='a'")
    assert args == (4,) and kwargs["kind"] == "a" and isinstance(kwargs["mode"], InitExpr)
    import brainpy.math as bm_

    assert kwargs["mode"].resolve() is bm_.training_mode
    src = tmp_path / "solver.py"
    src.write_text(
        "import enum\n\nimport brainpy as bp\nimport brainpy.math as bm\n\n\n"
        "class Solver(enum.Enum):\n    EULER = 1\n    HALF = 2\n\n\n"
        "class Leaky(bp.DynamicalSystem):\n"
        "    def __init__(self, n, solver=Solver.HALF):\n        super().__init__()\n"
        "        self.solver = solver\n        self.v = bm.Variable(bm.zeros(n))\n\n"
        "    def update(self, x):\n        if self.solver == Solver.HALF:\n"
        "            self.v.value = 0.5 * self.v + x\n        elif self.solver == Solver.EULER:\n"
        "            self.v.value = self.v + x\n        else:\n            raise ValueError(self.solver)\n"
        "        return self.v.value\n")
    out = tmp_path / "solver_batched.py"
    subprocess.run([sys.executable, "-m", "batchify", str(src), "-o", str(out)], check=True, capture_output=True)
    result = subprocess.run([sys.executable, "-m", "batchify", "verify", str(src), str(out), "--init", "3",
                             "--input-shape", "x=3", "--steps", "4", "--no-speed"], capture_output=True, text=True,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("cls, flags", [
    ("EINet", ["--input-shape", "inp=:float32:20.0", "--dt", "0.1", "--steps", "30", "--batch", "3"]),
    ("Readout", ["--init", "4, 3", "--input-shape", "x=4"]),
    # (at 20.0 the neuron never spiked: WEAK since its surrogate spike's step is measured)
    ("COBA", ["--input-shape", "inp=:float32:200.0", "--dt", "0.1", "--steps", "30", "--batch", "3"]),
])
def test_projection_networks_and_respelled_names_verify(cls: str, flags: list[str], tmp_path: Path) -> None:
    """``class Exponential(bp.Projection)`` held by a network of BrainPy neurons; a neuron of the file
    handed to such projections as their ``post`` (run as library code with them, its trained bias's
    gradient included); a ``TrainVar`` imported from ``brainpy.math.object_transform``: full strict
    PASS, constructor and resets included. On main the network failed (state diverging from step 1,
    float64 too), the neuron's network was refused (BFY104) and the readout ended in BFY900
    (KeyError: 'w', the weight missing from the generated params)."""
    src = ROOT / "tests" / "models" / "projections.py"
    out = tmp_path / "projections_batched.py"
    subprocess.run([sys.executable, "-m", "batchify", str(src), "-o", str(out)], check=True, capture_output=True)
    code, payload = verify_json(str(src), str(out), "--class", cls, *flags, "--strict", "--no-speed", cwd=tmp_path)
    assert code == 0, payload
    (result,) = payload["classes"]
    assert result["verdict"] == "PASS" and not result["weak_reasons"], result


def test_old_update_with_tdi_checks_its_gradient(tmp_path: Path) -> None:
    """``update(self, tdi, x)`` of a model with a weight: the gradient check calls the pure method
    with BrainPy's shared arguments as ``tdi``, as BrainPy fills it for the original. On main it
    ended in BFY900 (TypeError: update_pure() missing 1 required positional argument: 'x')."""
    src = ROOT / "tests" / "models" / "old_style_and_modes.py"
    out = tmp_path / "old_batched.py"
    subprocess.run([sys.executable, "-m", "batchify", str(src), "-o", str(out)], check=True, capture_output=True)
    # (not verify_json: BrainPy warns on stderr that update() no longer needs tdi)
    result = verify(str(src), str(out), "--class", "OldLeaky", "--init", "4", "--input-shape", "x=4", "--dt", "0.1",
                    "--steps", "10", "--batch", "3", "--strict", "--no-speed", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    payload = json.loads(result.stdout)
    sections_ = sections(payload)
    assert sections_["grad/example"]["ok"] and sections_["grad/mean"]["ok"], payload


WHILE_LOOP = '''import brainpy as bp
import brainpy.math as bm


class Two(bp.DynamicalSystem):
    def __init__(self, n_in, n, iters=3):
        super().__init__()
        self.iters = iters
        self.w = bm.TrainVar(bm.random.normal(0.0, 0.5, (n_in, n)))
        self.h = bm.Variable(bm.zeros(n))
        self.k = bm.Variable(bm.zeros((), dtype=bm.int32))

    def relax(self, h, j):
        return 0.5 * h + 0.1, j + 1

    def update(self, x):
        self.h.value = self.h + x @ self.w
        h, j = bm.while_loop(self.relax, lambda h, j: j < self.iters, (self.h.value, 0))
        self.h.value = h
        self.k.value += j
        return self.h.value
'''


def test_a_step_with_a_while_loop_is_checked_forward_with_its_gradients_skipped(tmp_path: Path) -> None:
    """main: BFY900 internal error (bm.grad on the original: no reverse mode through lax.while_loop),
    with the forward results never reported."""
    src = tmp_path / "relax.py"
    src.write_text(WHILE_LOOP)
    out = tmp_path / "relax_batched.py"
    assert subprocess.run([sys.executable, "-m", "batchify", str(src), "-o", str(out)], cwd=tmp_path).returncode == 0
    result = verify(str(src), str(out), "--init", "4, 5", "--input-shape", "x=4", "--no-speed", cwd=tmp_path)
    assert result.returncode == 0 and "PASS" in result.stdout, result.stdout + result.stderr
    assert "grad/example skipped: the original is not reverse-differentiable" in result.stdout


def test_a_source_whose_own_import_fails_is_the_sources_error(tmp_path: Path) -> None:
    """main: 'BFY900 internal error ... please report it' for the source's own failing import."""
    src = tmp_path / "noisy.py"
    src.write_text(WHILE_LOOP.replace("import brainpy.math as bm\n",
                                      "import brainpy.math as bm\nfrom brainpy.math.random import normal\n").replace(
        "self.h.value = self.h + x @ self.w", "self.h.value = self.h + x @ self.w + normal(0.0, 0.1, self.h.shape)"))
    out = tmp_path / "noisy_batched.py"
    assert subprocess.run([sys.executable, "-m", "batchify", str(src), "-o", str(out)], cwd=tmp_path).returncode == 0
    result = verify(str(src), str(out), "--init", "4, 5", "--input-shape", "x=4", "--no-speed", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert ("noisy.py:3:1: BFY302 cannot verify: the model's own code raised ModuleNotFoundError: No module named "
            "'brainpy.math.random'") in result.stderr
    assert "BFY900" not in result.stderr


def test_init_builds_objects_of_the_source_file(tmp_path: Path) -> None:
    """``--init 'Config(n=3, tau=5.0)'``: a model configured by a class of its own file can be
    verified (on main: "cannot read --init", only literals and bp/bm were allowed). Only the
    source's own classes and functions and BrainPy's may be called; anything else is a clean error."""
    src = tmp_path / "configured.py"
    src.write_text(
        "import dataclasses\nimport os\n\nimport brainpy as bp\nimport brainpy.math as bm\n\n\n"
        "@dataclasses.dataclass\nclass Config:\n    n: int\n    tau: float = 10.0\n\n"
        "    @classmethod\n    def small(cls):\n        return cls(2, 4.0)\n\n\n"
        "SIZE = 3\n\n\n"
        "class Leaky(bp.DynamicalSystem):\n"
        "    def __init__(self, cfg: Config):\n        super().__init__()\n        self.decay = 1.0 - 1.0 / cfg.tau\n"
        "        self.v = bm.Variable(bm.zeros(cfg.n))\n\n"
        "    def update(self, x):\n        self.v.value = self.decay * self.v + x\n        return self.v.value\n")
    out = tmp_path / "configured_batched.py"
    subprocess.run([sys.executable, "-m", "batchify", str(src), "-o", str(out)], check=True, capture_output=True)

    def verify(init: str, shape: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "batchify", "verify", str(src), str(out), "--init", init,
                               "--input-shape", f"x={shape}", "--steps", "6", "--no-speed"],
                              capture_output=True, text=True, cwd=tmp_path)

    for init, shape in (("Config(n=SIZE, tau=5.0)", "3"), ("Config.small()", "2"), ("cfg=Config(4)", "4")):
        result = verify(init, shape)
        assert result.returncode == 0 and "PASS" in result.stdout, (init, result.stdout + result.stderr)
    for init, why in (("os.getcwd()", "os is not a class, function or constant defined in configured.py"),
                      ("Missing(3)", "Missing is not a class"),
                      ("Config(n=len('abc'))", "len")):
        result = verify(init, "3")
        assert result.returncode == 2 and "Traceback" not in result.stderr, (init, result.stdout + result.stderr)
        assert why in result.stderr + result.stdout, (init, result.stdout + result.stderr)


TWO_STEPS = '''import brainpy as bp
import brainpy.math as bm


class TwoSteps(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.w = bm.TrainVar(bm.linspace(0.5, 1.5, n))
        self.h = bm.Variable(bm.zeros(n))

    def _leak(self):
        self.h.value = 0.9 * self.h

    def update(self, x):
        self._leak()
        self.h.value = self.h + x * self.w
        return self.h.value

    def run_substeps(self, x):
        for k in range(3):
            self.h += x * self.w
        return self.h.value
'''


def test_verify_names_the_stateful_methods_it_did_not_check_and_checks_each_method_given(tmp_path: Path) -> None:
    """On main verify checked update() and PASSed --strict saying nothing of run_substeps(), a second
    stepping method it never ran; and ``--method a --method b`` kept the last one only."""
    src = tmp_path / "two_steps.py"
    src.write_text(TWO_STEPS)
    out = tmp_path / "two_steps_batched.py"
    subprocess.run([sys.executable, "-m", "batchify", str(src), "-o", str(out)], check=True, capture_output=True)
    base = [sys.executable, "-m", "batchify", "verify", str(src), str(out), "--init", "4", "--input-shape", "x=4",
            "--steps", "5", "--no-speed"]
    one = subprocess.run(base, capture_output=True, text=True, cwd=tmp_path)
    assert one.returncode == 0, one.stdout + one.stderr
    assert "TwoSteps: not checked: run_substeps(), stateful and never called by the method checked" in one.stdout, one.stdout
    assert "_leak" not in one.stdout  # called by update(): checked through it
    both = subprocess.run([*base, "--method", "update", "--method", "run_substeps", "--format", "json"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert both.returncode == 0, both.stdout + both.stderr
    classes = json.loads(both.stdout)["classes"]
    assert [(c["method"], c["verdict"]) for c in classes] == [("update", "PASS"), ("run_substeps", "PASS")]
    assert classes[0]["unchecked"] == classes[1]["unchecked"] == []
    # Each method its own inputs: `--input-shape y=...` is run_substeps(y)'s (main: BFY302 "no parameter
    # named 'y' in the stepping method" for update(x)), and each row's lines name its method.
    src.write_text(TWO_STEPS.replace("def run_substeps(self, x):", "def run_substeps(self, y):").replace(
        "self.h += x * self.w", "self.h += y * self.w"))
    subprocess.run([sys.executable, "-m", "batchify", str(src), "-o", str(out)], check=True, capture_output=True)
    each = subprocess.run([*base, "--method", "update", "--method", "run_substeps", "--input-shape", "y=4"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert each.returncode == 0, each.stdout + each.stderr
    assert "TwoSteps.update(): covered:" in each.stdout and "TwoSteps.run_substeps(): covered:" in each.stdout
    assert each.stderr == ""


def test_verify_warns_when_the_generated_file_is_not_what_batchify_made_of_the_source(tmp_path: Path) -> None:
    """verify checks the file as it is: main said nothing when it had been edited by hand since, or
    generated from another version of the source (probe E planted bugs that way unnoticed)."""
    src = tmp_path / "two_steps.py"
    src.write_text(TWO_STEPS)
    out = tmp_path / "two_steps_batched.py"
    subprocess.run([sys.executable, "-m", "batchify", str(src), "-o", str(out)], check=True, capture_output=True)
    command = [sys.executable, "-m", "batchify", "verify", "two_steps.py", "two_steps_batched.py", "--init", "4",
               "--input-shape", "x=4", "--steps", "5", "--no-speed"]
    fresh = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert fresh.returncode == 0 and fresh.stderr == "", fresh.stderr
    out.write_text(out.read_text().replace("0.9 * state.h", "0.8 * state.h"))
    edited = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert edited.stderr.startswith("two_steps_batched.py:1:1: BFY008 warning: was edited after batchify wrote it "
                                    "(its header's stamp differs): this checks the edited code"), edited.stderr
    assert edited.returncode == 1  # and the check itself catches this edit
    subprocess.run([sys.executable, "-m", "batchify", str(src), "-o", str(out), "--force"], check=True,
                   capture_output=True)
    src.write_text(TWO_STEPS + "\n# a comment\n")
    older = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert older.returncode == 0, older.stdout + older.stderr
    assert older.stderr.startswith("two_steps_batched.py:1:1: BFY008 warning: was generated from another version "
                                   "of the source"), older.stderr


def test_a_state_that_only_relaxes_from_its_perturbed_start_is_not_counted_as_moved() -> None:
    """A refractory counter whose branch the inputs never take: 0 in example 0, and in the perturbed
    examples it decays from its small start to 0. On main it counted as moved ('state moved 2/2')
    while a bug planted in its branch PASSed (probe B); now the summary names it: 'moved 1/2 (not: ref)'."""
    from batchify.equivalence import measure

    starts = [{"V": np.zeros(2), "ref": np.zeros(2)}, {"V": np.full(2, 0.01), "ref": np.full(2, 0.005)}]
    states = [[{"V": np.full(2, 0.5 * t), "ref": np.zeros(2)} for t in range(1, 4)],
              [{"V": np.full(2, 0.5 * t + 0.01), "ref": np.full(2, 0.005 / 2 ** t)} for t in range(1, 4)]]
    outputs = [[np.full(2, float(t))] for t in range(3)], [[np.full(2, float(t))] for t in range(3)]
    strength = measure(starts, list(outputs), states)
    assert (strength.moved, strength.unmoved) == (1, ["ref"])
    assert "state moved 1/2 (not: ref)" in strength.summary()
    # Driven past its perturbation in another example: moved.
    states[1][2]["ref"] = np.full(2, 3.0)
    assert measure(starts, list(outputs), states).moved == 2


def test_a_state_that_becomes_nan_is_not_a_large_move_but_nan_to_a_number_is() -> None:
    """A state whose other elements barely move and one element of which turns NaN (a diverging
    division): main counted any NaN appearing as an infinite move, so the check was not WEAK, though
    NaN compared with NaN agrees and says nothing. NaN turning into a number (WongWang2006's
    'no decision yet' decision_time) is still a move no tolerance hides."""
    from batchify.equivalence import measure

    starts = [{"V": np.array([1.0, 2.0])}, {"V": np.array([1.01, 2.01])}]
    states = [[{"V": np.array([np.nan if t > 1 else 1.0 + 1e-5 * t, 2.0 + 1e-5 * t])} for t in range(1, 4)],
              [{"V": np.array([1.01 + 1e-5 * t, 2.01 + 1e-5 * t])} for t in range(1, 4)]]
    outputs = [[[np.full(2, float(t))] for t in range(3)] for _ in range(2)]
    assert "V" in measure(starts, outputs, states).barely
    starts[0]["V"], states[0][2]["V"] = np.array([np.nan, 2.0]), np.array([7.0, 2.0])  # NaN -> a number
    assert "V" not in measure(starts, outputs, states).barely


def test_only_spikes_the_model_made_count() -> None:
    """A latch `fired |= spike` that never fires: examples 1.. start from perturbed flags, which it
    keeps. main counted those as spikes ('80 spikes') and so never said 'no spike', while a bug in
    the firing branch PASSed (probe E); now a flag counts only when a step turns it true."""
    from batchify.equivalence import measure

    off, on = np.zeros(4, bool), np.array([True, False, True, False])
    starts = [{"V": np.zeros(4), "fired": off}, {"V": np.full(4, 0.01), "fired": on}]
    states = [[{"V": np.full(4, 0.1 * t), "fired": off} for t in range(1, 4)],
              [{"V": np.full(4, 0.1 * t + 0.01), "fired": on} for t in range(1, 4)]]
    outputs = [[[np.full(4, float(t))] for t in range(3)] for _ in range(2)]
    strength = measure(starts, outputs, states)
    assert strength.spikes == 0 and any(r.startswith("no spike") for r in strength.weak_reasons(3, 2))
    states[0][1]["fired"] = np.array([False, True, False, False])  # a step of example 0 fires once ...
    states[0][2]["fired"] = np.array([False, True, False, False])  # ... and the latch holds it
    assert measure(starts, outputs, states).spikes == 1


LOSS_ONE = '''import functools

import brainpy as bp
import brainpy.math as bm
import numpy as np


class Net(bp.DynamicalSystem):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.n_out = n_out
        self.w = bm.TrainVar(bm.random.normal(0.0, 0.5, (n_in, n_out)))
        self.h = bm.Variable(bm.zeros(n_out))

    def reset_state(self, batch_size=None):
        self.h.value = bm.zeros(self.n_out)

    def step_run(self, i, x):
        self.h.value = bm.tanh(0.7 * self.h + x @ self.w)
        return self.h.value


model = Net(4, 3)


def loss_fun(x_single, y_single):
    model.reset_state()
    outs = bm.for_loop(functools.partial(model.step_run, x=x_single), np.arange(5))
    logits = bm.mean(outs, axis=0)
    return {shape}
'''


@pytest.mark.parametrize("shape, ok", [("-logits[y_single]", True), ("-logits", False)])
def test_a_function_loss_of_shape_one_verifies_and_a_vector_loss_is_a_clear_error(tmp_path: Path, shape: str,
                                                                                  ok: bool) -> None:
    """A ``[1]`` loss (a ``[1]`` label) is the scalar it is, as the harness takes it; on main verify's
    reference bm.grad raised and the run ended in BFY900 (internal error). A vector loss is the
    user's to fix: BFY302 naming bm.grad's complaint."""
    src = tmp_path / "loss_one.py"
    src.write_text(LOSS_ONE.format(shape=shape))
    out = tmp_path / "loss_one_batched.py"
    made = subprocess.run([sys.executable, "-m", "batchify", str(src), "-o", str(out), "--function", "loss_fun",
                           "--shared", "i"], capture_output=True, text=True, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    result = subprocess.run([sys.executable, "-m", "batchify", "verify", str(src), str(out), "--init", "4, 3",
                             "--method", "step_run", "--shared", "i=time", "--input-shape", "x=4", "--function",
                             "loss_fun", "--input-shape", "x_single=4", "--input-shape", "y_single=1:int32:3",
                             "--no-speed"], capture_output=True, text=True, cwd=tmp_path)
    if ok:
        assert result.returncode == 0 and "loss_fun(): losses and outputs ok" in result.stdout, \
            result.stdout + result.stderr
    else:
        assert result.returncode == 2 and "BFY302" in result.stderr and "bm.grad of the original loss_fun()" \
            in result.stderr and "Traceback" not in result.stderr, result.stdout + result.stderr


READOUT_IN_STATE = '''import brainpy as bp
import brainpy.math as bm


class RateReadout(bp.DynamicalSystem):
    def __init__(self, n, m, tau=10.0):
        super().__init__()
        self.tau = tau
        self.W = bm.TrainVar(bm.ones((n, n)) * 0.3)
        self.W_out = bm.TrainVar(bm.ones((n, m)) * 0.5)
        self.W_probe = bm.TrainVar(bm.ones((n, m)))
        self.r = bm.Variable(bm.zeros(n))
        self.y = bm.Variable(bm.zeros(m))

    def update(self, x):
        self.r.value = self.r + (-self.r + bm.tanh(self.r @ self.W + x)) / self.tau
        self.y.value = 0.9 * self.y + self.r @ self.W_out
        return self.r.value

    def probe(self):
        return self.r.value @ self.W_probe
'''


def test_a_weight_that_reaches_only_the_state_is_said_to_be_unchecked(tmp_path: Path) -> None:
    """The gradient check's loss is made of the step's outputs: W_out feeds only the state y, so its
    gradient was never compared. main: PASS ('gradient non-zero 1/3 (2 not reaching the float
    outputs)'), and a stop_gradient planted on W_out passed (probe E). W_probe, which update() does
    not touch at all, is no reason."""
    src = tmp_path / "readout.py"
    src.write_text(READOUT_IN_STATE)
    out = tmp_path / "readout_batched.py"
    subprocess.run([sys.executable, "-m", "batchify", str(src), "-o", str(out)], check=True, capture_output=True)
    checked = subprocess.run([sys.executable, "-m", "batchify", "verify", "readout.py", "readout_batched.py", "--init",
                              "4, 2", "--input-shape", "x=4", "--steps", "5", "--no-speed", "--strict"],
                             capture_output=True, text=True, cwd=tmp_path)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert ("RateReadout: WEAK: the gradient of W_out was not checked: it does not reach the step's float "
            "outputs") in checked.stdout, checked.stdout
    assert "W_probe was not checked" not in checked.stdout and "W_out, W_probe" not in checked.stdout


INPUTLESS = """
import brainpy as bp
import brainpy.math as bm


class Branching(bp.DynamicalSystem):
    \"\"\"A branching process (a public model found by code search): no input, its activity only
    from its state, which starts at zero.\"\"\"

    def __init__(self, size, m=1.0):
        super().__init__()
        self.size = size
        self.state = bm.Variable(bm.zeros(size))
        self.drive = bm.Variable(bm.zeros(size))
        self.W = (bm.random.rand(size, size) < 0.5) * (m / size * 2.0)

    def update(self):
        prob = bm.clip(self.state @ self.W + self.drive, 0.0, 1.0)
        self.state.value = bm.asarray(bm.random.rand(self.size) < prob, dtype=float)
        self.drive[:] = 0.0
"""


def test_a_weak_step_without_inputs_is_told_what_moves_it(tmp_path: Path) -> None:
    """A step that takes no input: main's WEAK advice was to drive the inputs (--input-shape),
    which it has none of; the starts (--perturb) are what moves it, and they do."""
    from batchify import transform

    (tmp_path / "branching.py").write_text(INPUTLESS)
    (tmp_path / "branching_batched.py").write_text(transform(INPUTLESS.encode(), "branching.py",
                                                             command="batchify").text)
    flags = ("branching.py", "branching_batched.py", "--init", "20", "--steps", "10", "--no-speed")
    code, payload = verify_json(*flags, cwd=tmp_path)
    reasons = payload["classes"][0]["weak_reasons"]
    assert code == 0 and payload["weak"] and reasons, payload
    assert not any("--input-shape" in r for r in reasons), reasons
    assert any("--perturb" in r for r in reasons), reasons
    code, payload = verify_json(*flags, "--perturb", "5", cwd=tmp_path)
    assert code == 0 and not payload["weak"], payload["classes"][0]["weak_reasons"]


NAN_READOUT = """
import brainpy as bp
import brainpy.math as bm


class Decode(bp.DynamicalSystem):
    \"\"\"A decoder whose rate stays zero (probe I's P_CANN1D.decode): 0/0, NaN at every step.\"\"\"

    def __init__(self, n):
        super().__init__()
        self.u = bm.Variable(bm.zeros(n))

    def update(self, x):
        self.u.value = 0.5 * self.u + x
        r = self.u * 0.0
        return bm.sum(r * self.u) / bm.sum(r)
"""


def test_an_output_that_is_nan_at_every_step_is_weak(tmp_path: Path) -> None:
    """NaN compared with NaN agrees, so an output NaN throughout could not fail; main counted it as
    varying (NaN != NaN) and said PASS."""
    from batchify import transform

    (tmp_path / "decode.py").write_text(NAN_READOUT)
    (tmp_path / "decode_batched.py").write_text(transform(NAN_READOUT.encode(), "decode.py", command="batchify").text)
    code, payload = verify_json("decode.py", "decode_batched.py", "--init", "4", "--input-shape", "x=4",
                                "--steps", "5", "--no-speed", cwd=tmp_path)
    result = payload["classes"][0]
    assert code == 0 and result["weak"], result["weak_reasons"]
    assert any("NaN" in r for r in result["weak_reasons"]), result["weak_reasons"]
    assert not result["strength"]["outputs_vary"], result["strength"]


INTEGRATED = """
import brainpy as bp
import brainpy.math as bm


class Cell(bp.DynamicalSystem):
    \"\"\"A derivative method that reads state, handed to an integrator in __init__ (probe I's
    DeepCerebellarNuclei): update calls it through the integrator.\"\"\"

    def __init__(self, n):
        super().__init__()
        self.V = bm.Variable(bm.zeros(n))
        self.drive = bm.Variable(bm.zeros(n))
        self.integral = bp.odeint(f=self.dV, method="exp_auto")

    def dV(self, V, t):
        return (-V + self.drive) / 10.0

    def update(self, x):
        self.drive.value = x
        self.V.value = self.integral(self.V, bp.share['t'], dt=bp.share['dt'])
        return self.V.value
"""


def test_a_derivative_called_through_an_integrator_is_checked(tmp_path: Path) -> None:
    """main: 'not checked: dV(), stateful and never called by the method checked', though update
    calls it through self.integral = bp.odeint(f=self.dV)."""
    from batchify import transform

    (tmp_path / "cell.py").write_text(INTEGRATED)
    (tmp_path / "cell_batched.py").write_text(transform(INTEGRATED.encode(), "cell.py", command="batchify").text)
    result = verify("cell.py", "cell_batched.py", "--init", "4", "--input-shape", "x=4", "--steps", "5", "--dt",
                    "0.5", "--no-speed", cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "not checked" not in result.stdout, result.stdout


def test_brainpy_2_clock_arguments_need_no_flags(tmp_path: Path) -> None:
    """Probe L (BrainPy's base-and-collector notebook: update(self, _t, _dt, x)). The README says _t and
    _dt are always shared; main's verify asked for '--input-shape _t=SHAPE or --shared _t=time|VALUE
    ...; --input-shape _dt=SHAPE ...'. Left out, they are the step's time and the time step."""
    generate(tmp_path, "clocked", "import brainpy as bp\nimport brainpy.math as bm\n\n\n"
                                  "class Clocked(bp.DynamicalSystem):\n    def __init__(self, n):\n"
                                  "        super().__init__()\n        self.V = bm.Variable(bm.zeros(n))\n\n"
                                  "    def update(self, _t, _dt, x):\n"
                                  "        self.V.value = self.V + _dt * (x - self.V) + 0.01 * _t\n"
                                  "        return self.V.value\n")
    result = verify("clocked.py", "clocked_batched.py", "--init", "3", "--input-shape", "x=3", "--steps", "6",
                    "--no-speed", "--strict", cwd=tmp_path)
    assert result.returncode == 0 and "PASS" in result.stdout, result.stdout + result.stderr


TRAINING_ONLY_WEIGHTS = """import brainpy as bp
import brainpy.math as bm


class Net(bp.DynamicalSystem):
    def __init__(self):
        super().__init__()
        self.fc = bp.dnn.Linear(3, 2)

    def update(self, x):
        return self.fc(x)


net = Net()


def loss(x):
    return (net.update(x) ** 2).sum()
"""


def test_a_function_check_with_no_weights_is_weak(tmp_path: Path) -> None:
    """Probe L (BrainPy's training tutorials build models under bm.training_environment()). Outside it
    bp.dnn.Linear makes no TrainVar, and main's verify --function said 'gradients (mean and per example)
    ok' and PASS with nothing differentiated. Now WEAK, pointing at --mode training, which PASSes; and
    the BFY012 for a model built in the with block says its setting goes with it."""
    generate(tmp_path, "fc", TRAINING_ONLY_WEIGHTS, "--function", "loss")
    flags = ["fc.py", "fc_batched.py", "--class", "Net", "--input-shape", "x=3", "--function", "loss", "--steps", "4",
             "--no-speed"]
    weak = verify(*flags, cwd=tmp_path)
    assert weak.returncode == 0 and "WEAK" in weak.stdout, weak.stdout + weak.stderr
    assert "loss()'s gradient is exactly zero for every example, or the model has no weights" in weak.stdout
    full = verify(*flags, "--mode", "training", "--strict", cwd=tmp_path)
    assert full.returncode == 0 and "PASS" in full.stdout, full.stdout + full.stderr
    (tmp_path / "fc_with.py").write_text(TRAINING_ONLY_WEIGHTS.replace(
        "net = Net()", "with bm.training_environment():\n    net = Net()"))
    refused = subprocess.run([sys.executable, "-m", "batchify", "fc_with.py", "-o", "fc_with_batched.py",
                              "--function", "loss"], cwd=tmp_path, capture_output=True, text=True)
    assert refused.returncode == 1 and "BFY012 'net' is defined only inside a module-level with block" in refused.stderr
    assert "bm.set_mode(bm.training_mode) before it" in refused.stderr, refused.stderr


def test_a_function_input_named_like_the_step_input_takes_its_own_shape(tmp_path: Path) -> None:
    """Probe M: loss_fun(x) takes a whole sequence [T, n] where update(x) takes one step [n]; main had
    one --input-shape x for both (the last flag won, and verify stopped with BFY302 MathError).
    `--input-shape loss_fun.x=6x4` is the function's own."""
    generate(
        tmp_path, "seqloss",
        "import brainpy as bp\nimport brainpy.math as bm\n\n\nclass Leaky(bp.DynamicalSystem):\n"
        "    def __init__(self, n):\n        super().__init__()\n        self.w = bm.TrainVar(bm.ones(n) * 0.5)\n"
        "        self.h = bm.Variable(bm.zeros(n))\n\n    def reset_state(self, batch_size=None):\n"
        "        self.h.value = bm.zeros_like(self.h.value)\n\n    def update(self, x):\n"
        "        self.h.value = 0.9 * self.h.value + self.w.value * x\n        return self.h.value\n\n\n"
        "model = Leaky(4)\n\n\ndef loss_fun(x):\n    model.reset_state()\n    hs = bm.for_loop(model.update, x)\n"
        "    return bm.mean(hs ** 2)\n", "--function", "loss_fun")
    result = verify("seqloss.py", "seqloss_batched.py", "--init", "4", "--input-shape", "x=4", "--function", "loss_fun",
                    "--input-shape", "loss_fun.x=6x4", "--steps", "6", "--no-speed", "--strict", cwd=tmp_path)
    assert result.returncode == 0 and "PASS" in result.stdout, result.stdout + result.stderr
    assert "loss_fun(): losses and outputs ok, gradients (mean and per example) ok" in result.stdout


RECALL = """import brainpy as bp
import brainpy.math as bm


class Hop(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.s = bm.Variable(bm.ones(n))
        self.W = bm.Variable(bm.eye(n) * 0.5)

    def update(self):
        self.s.value = bm.tanh(self.W.value @ self.s.value)


model = Hop(4)


def recall(pattern):
    model.s.value = pattern
    bm.for_loop(lambda i: model.update(), bm.arange(3))
    return model.s.value
"""


def test_a_function_that_is_not_a_loss_has_its_outputs_checked(tmp_path: Path) -> None:
    """Probe M (canns' HebbianTrainer recall loop). main's verify took every --function for a loss and
    stopped with BFY302 from bm.grad ('a loss must be a scalar'), so a batched recall could not be
    checked at all. Now its outputs are compared example by example, and a planted bug fails it."""
    generate(tmp_path, "hop", RECALL, "--function", "recall")
    flags = ["hop.py", "hop_batched.py", "--init", "4", "--function", "recall", "--input-shape", "pattern=4",
             "--steps", "6", "--no-speed", "--no-triage"]
    result = verify(*flags, cwd=tmp_path)
    assert result.returncode == 0 and "recall(): outputs ok against the original example by example" in result.stdout, (
        result.stdout + result.stderr)
    planted = tmp_path / "hop_batched.py"
    planted.write_text(planted.read_text().replace("s=bm.tanh(", "s=1.01 * bm.tanh("))
    failed = verify(*flags, cwd=tmp_path)
    assert failed.returncode == 1 and "recall(): outputs MISMATCH" in failed.stdout, failed.stdout + failed.stderr


SILENT_STEP = '''import brainpy as bp
import brainpy.math as bm


class Leaky(bp.DynamicalSystem):
    def __init__(self, n=3, tau=10.0):
        super().__init__()
        self.V = bm.Variable(bm.zeros(n))
        self.integral = bp.odeint(lambda V, t, x: (-V + x) / tau)

    def update(self, x):
        self.V.value = self.integral(self.V, bp.share["t"], x)
'''


def test_a_constructor_bug_in_a_step_that_returns_nothing_is_caught(tmp_path: Path) -> None:
    """Probe N: the batched constructor's integrator planted with tau * 2 PASSed, as the constructor
    check compared the steps' outputs only, and update() returns None. Now the state after each step
    is compared too."""
    generate(tmp_path, "leaky", SILENT_STEP)
    ok = verify("leaky.py", "leaky_batched.py", "--input-shape", "x=3", "--dt", "0.1", "--steps", "6", "--no-speed",
                cwd=tmp_path)
    assert ok.returncode == 0 and "PASS" in ok.stdout, ok.stdout + ok.stderr
    broken = tmp_path / "leaky_batched.py"
    text = broken.read_text()
    assert text.count("(-V + x) / tau)") == 1
    broken.write_text(text.replace("(-V + x) / tau)", "(-V + x) / (tau * 2))"))
    rc, payload = verify_json("leaky.py", "leaky_batched.py", "--input-shape", "x=3", "--dt", "0.1", "--steps", "6",
                              "--no-speed", cwd=tmp_path)
    assert rc == 1
    found = sections(payload)
    assert found["forward"]["ok"] and found["state"]["ok"]  # (from_model keeps the model's integrator)
    assert {m["quantity"] for m in found["constructor"]["mismatches"]} == {"constructor stepped state.V"}


LOOP_OVER_THE_MODEL = '''import brainpy as bp
import brainpy.math as bm


class Cell(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.w = bm.TrainVar(bm.ones(n) * 0.5)
        self.h = bm.Variable(bm.zeros(n))

    def update(self, x):
        self.h.value = 0.9 * self.h + self.w * x
        return self.h.value


model = Cell(3)


def loss_fun(xs):
    model.reset_state()
    outs = bm.for_loop(model, xs)
    return (outs ** 2).mean()
'''


def test_a_loss_looping_over_the_model_object_verifies(tmp_path: Path) -> None:
    """Probe N: `bm.for_loop(model, xs)` in the user's loss; main wrote no loss_fun_grad (see
    test_harness_probe); its batched loss and gradients now agree with bm.grad example by example."""
    generate(tmp_path, "cell", LOOP_OVER_THE_MODEL, "--function", "loss_fun")
    result = verify("cell.py", "cell_batched.py", "--function", "loss_fun", "--init", "3", "--input-shape", "xs=5x3",
                    "--input-shape", "x=3", "--no-speed", "--strict", cwd=tmp_path)
    assert result.returncode == 0 and "PASS" in result.stdout, result.stdout + result.stderr
    assert "loss_fun(): losses and outputs ok, gradients (mean and per example) ok" in result.stdout


@pytest.mark.parametrize("body", ["bm.for_loop(self, xs)", "bm.for_loop(self.__call__, xs)"])
def test_a_method_looping_over_the_model_itself_verifies(tmp_path: Path, body: str) -> None:
    """Probe N: `def predict(self, xs): return bm.for_loop(self, xs)` was copied as a plain method
    (exit 0): on the batch its loop ran over the batch axis (max abs error 1.46 with B == T, no
    error), and verify --method predict stopped with BFY900 ('no attribute predict_pure')."""
    source = LOOP_OVER_THE_MODEL.split("\n\nmodel = ")[0] + f"\n\n    def predict(self, xs):\n        return {body}\n"
    generate(tmp_path, "cell", source)
    assert "def predict_pure(self, params, state, xs):" in (tmp_path / "cell_batched.py").read_text()
    result = verify("cell.py", "cell_batched.py", "--method", "predict", "--init", "3", "--input-shape", "xs=5x3",
                    "--steps", "3", "--no-speed", "--strict", cwd=tmp_path)
    assert result.returncode == 0 and "PASS" in result.stdout, result.stdout + result.stderr


SLOW_LEARNER = '''import brainpy as bp
import brainpy.math as bm


class Oja(bp.DynamicalSystem):
    def __init__(self, n, eta=0.005):
        super().__init__()
        self.eta = eta
        self.w = bm.Variable(bm.linspace(-0.06, 0.06, n))

    def update(self, x):
        y = bm.dot(self.w.value, x)
        self.w.value = self.w.value + 0.1 * self.eta * y * (x - y * self.w.value)
        return y
'''


def test_a_state_that_barely_moves_makes_the_check_weak(tmp_path: Path) -> None:
    """Probe N: Oja's rule moves w by about 10 tolerances in 20 steps, and a 2 % error planted in its
    learning rate PASSed (err/tol 0.21): 'moved' meant any change at all. Now a check whose moving
    state all stayed within 100 tolerances of its start is WEAK, saying how small a bug could hide;
    run long enough, the same plant FAILs."""
    generate(tmp_path, "oja", SLOW_LEARNER)
    broken = tmp_path / "oja_batched.py"
    text = broken.read_text()
    assert text.count("0.1 * self.eta") == 1
    broken.write_text(text.replace("0.1 * self.eta", "0.1 * 1.02 * self.eta"))
    flags = ["--init", "3", "--input-shape", "x=3", "--no-speed", "--no-triage"]
    weak = verify("oja.py", "oja_batched.py", *flags, cwd=tmp_path)
    assert weak.returncode == 0 and "WEAK" in weak.stdout, weak.stdout + weak.stderr
    assert "(barely, in tolerances: w " in weak.stdout
    assert "a bug that changes its updates by less than 1/" in weak.stdout
    assert verify("oja.py", "oja_batched.py", *flags, "--strict", cwd=tmp_path).returncode == 1
    longer = verify("oja.py", "oja_batched.py", *flags, "--steps", "400", cwd=tmp_path)
    assert longer.returncode == 1 and "FAIL" in longer.stdout, longer.stdout + longer.stderr


TWO_PATHS = '''import brainpy as bp
import brainpy.math as bm


class Net(bp.DynSysGroup):
    def __init__(self):
        super().__init__()
        self.N = bp.neurons.LIF(4)
        self.S = bp.synapses.Delta(self.N, self.N, bp.conn.All2All(), g_max=0.5)
        self.r = bm.Variable(bm.zeros(1))

    def set_r(self, v):
        self.r.value = v
'''


def test_a_variable_reached_by_two_paths_is_perturbed_and_counted_once(tmp_path: Path) -> None:
    """Probe N: the synapse's S.pre.spike is the neuron's N.spike. main perturbed each path's start
    separately (the later write winning), so a step writing only r showed N.spike 'moved' against
    its other path's start, and the check PASSed with 'state moved 7/11, 5 spikes'; now each Variable
    is perturbed, compared and counted once, under its shortest path, and the check is WEAK."""
    generate(tmp_path, "net", TWO_PATHS)
    result = verify("net.py", "net_batched.py", "--method", "set_r", "--input-shape", "v=1", "--no-speed", cwd=tmp_path)
    assert result.returncode == 0 and "WEAK" in result.stdout, result.stdout + result.stderr
    assert "state moved 1/5 (not: N.V, N.input, N.spike, N.t_last_spike)" in result.stdout
    assert "S.pre" not in result.stdout


FLAG = '''import brainpy as bp
import brainpy.math as bm


class Flag(bp.DynamicalSystem):
    def __init__(self, n=3):
        super().__init__()
        self.V = bm.Variable(bm.zeros(n))
        self.flag = bm.Variable(bm.zeros(n, dtype=bool))

    def update(self, x):
        self.V.value = 0.5 * self.V + x
        self.flag.value = self.V > 1.
'''


def test_a_failing_flag_shows_its_error_in_the_table(tmp_path: Path) -> None:
    """Probe N: a boolean state planted wrong (V >= 1.5 for V > 1.) FAILed with 'max abs err 0.0e+00'
    and 'err/tol 0' in the table and the JSON, as if nothing were past its tolerance."""
    generate(tmp_path, "flag", FLAG)
    broken = tmp_path / "flag_batched.py"
    text = broken.read_text()
    assert text.count("state.V > 1.") == 1
    broken.write_text(text.replace("state.V > 1.", "state.V >= 1.5"))
    rc, payload = verify_json("flag.py", "flag_batched.py", "--input-shape", "x=3", "--no-speed", "--no-triage",
                              cwd=tmp_path)
    assert rc == 1
    state = sections(payload)["state"]
    assert not state["ok"] and state["max_abs"] == 1.0 and state["of_tolerance"] > 1


DELAYED_PRE = '''import brainpy as bp
import brainpy.math as bm


class Syn(bp.synapses.TwoEndConn):
    def __init__(self, pre, post, conn):
        super().__init__(pre=pre, post=post, conn=conn)
        self.delay = bm.LengthDelay(self.pre.spike, 2)

    def update(self):
        delayed = self.delay(2)
        self.delay.update(self.pre.spike)
        self.post.input += bm.sum(delayed)
'''


@pytest.mark.parametrize("port", ["pre.spike", "delay.delay_target"])
def test_a_port_on_a_variable_a_delay_also_holds_is_driven(tmp_path: Path, port: str) -> None:
    """``--port pre.spike`` where ``bm.LengthDelay(self.pre.spike, ...)`` holds that Variable too (as
    its ``delay_target``), every textbook synapse's spelling (probe N3): main raised BFY900
    ``KeyError: 'pre.spike'``, the Variable being listed once, under the delay's name. Either name
    drives it."""
    generate(tmp_path, "delayed", DELAYED_PRE)
    result = verify("delayed.py", "delayed_batched.py", "--init", "bp.neurons.LIF(4), bp.neurons.LIF(3), "
                    "bp.conn.All2All()", "--port", f"{port}=4:bool", "--dt", "0.1", "--steps", "10", "--batch",
                    "3", "--no-speed", cwd=tmp_path)
    assert result.returncode == 0 and "BFY900" not in result.stderr, result.stdout + result.stderr
    row = next(r for r in result.stdout.splitlines() if r.startswith("Syn "))
    assert row.rstrip().endswith("PASS"), result.stdout


OWN_SEEDED_DEFAULT = '''import brainpy as bp
import brainpy.math as bm


class Net(bp.DynamicalSystem):
    def __init__(self, n_in, n, w_init=bp.init.Normal(scale=0.5, seed=456)):
        super().__init__()
        self.W = w_init((n_in, n))
        self.h = bm.Variable(bm.zeros(n))

    def update(self, x):
        self.h.value = bm.tanh(x @ self.W + 0.5 * self.h)
        return self.h.value
'''


def test_an_original_whose_constructor_is_not_reproducible_is_not_called_a_transformation_bug(tmp_path: Path) -> None:
    """An initializer with a seed of its own as a default argument draws anew at every build of the
    original (probe N3, c-xy17/NeuralModeling's ESN): main FAILed the constructor section as a
    'transformation bug: float64 disagrees too'. Two builds of the original differ: the batched
    constructor cannot be held to it, said so; the rest is checked through from_model."""
    generate(tmp_path, "seeded", OWN_SEEDED_DEFAULT)
    code, payload = verify_json("seeded.py", "seeded_batched.py", "--init", "3, 5", "--input-shape", "x=3",
                                "--steps", "5", "--batch", "3", "--no-speed", cwd=tmp_path)
    found = sections(payload)
    assert code == 0, payload
    assert "two builds of Net differ" in found["constructor"]["skipped"]
    assert found["forward"]["ok"] and found["state"]["ok"]
    # the same model drawing from BrainPy's seeded stream is reproducible: compared, and a planted
    # constructor bug still fails
    reproducible = OWN_SEEDED_DEFAULT.replace("w_init=bp.init.Normal(scale=0.5, seed=456)", "w_init=bp.init.Normal(scale=0.5)")
    generate(tmp_path, "plain", reproducible)
    code, payload = verify_json("plain.py", "plain_batched.py", "--init", "3, 5", "--input-shape", "x=3",
                                "--steps", "5", "--batch", "3", "--no-speed", cwd=tmp_path)
    assert code == 0 and sections(payload)["constructor"]["skipped"] is None and sections(payload)["constructor"]["ok"]
    planted = tmp_path / "plain_batched.py"
    text = planted.read_text()
    assert "self.W = w_init((n_in, n))" in text
    planted.write_text(text.replace("self.W = w_init((n_in, n))", "self.W = w_init((n_in, n)) * 1.01"))
    code, payload = verify_json("plain.py", "plain_batched.py", "--init", "3, 5", "--input-shape", "x=3",
                                "--steps", "5", "--batch", "3", "--no-speed", cwd=tmp_path)
    assert code == 1 and not sections(payload)["constructor"]["ok"], payload


def test_a_keyword_only_step_input_is_driven_by_name(tmp_path: Path) -> None:
    """``--input-shape gain=1`` for ``update(self, x, *, gain)``: main's verify passed it by position
    (BFY900 'takes 2 positional arguments but 4 were given') once the transform took the method."""
    from test_runtime import KEYWORD_ONLY

    generate(tmp_path, "kw", KEYWORD_ONLY, "--class", "Net")
    result = verify("kw.py", "kw_batched.py", "--class", "Net", "--init", "3", "--input-shape", "x=3",
                    "--input-shape", "gain=1", "--steps", "5", "--strict", "--no-speed", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "gradient non-zero 1/1" in result.stdout


LEARNED_START = '''import brainpy as bp
import brainpy.math as bm


class LearnedStart(bp.DynamicalSystem):
    def __init__(self, n_in, n_hid):
        super().__init__()
        self.w_in = bm.TrainVar(bm.random.normal(0., 0.5, (n_in, n_hid)))
        self.w_rec = bm.TrainVar(bm.random.normal(0., 0.3, (n_hid, n_hid)))
        self.h0 = bm.TrainVar(bm.random.normal(0., 0.5, (n_hid,)))
        self.h = bm.Variable(bm.zeros(n_hid))
        self.reset_state()

    def reset_state(self, batch_size=None):
        self.h.value = bm.tanh(self.h0.value)

    def update(self, x):
        self.h.value = bm.tanh(x @ self.w_in + self.h @ self.w_rec)
        return self.h.value
'''


def test_a_weight_only_reset_state_reads_has_its_gradient_checked_through_the_reset(tmp_path: Path) -> None:
    """A learned initial state (``h = tanh(h0)`` in reset_state; probe N3): the gradient check starts
    from given states, so main never compared h0's gradient (PASS, 'gradient non-zero 2/3'), and a
    batched reset that drops it (``stop_gradient``: the same values) passed. Every harness rollout
    starts from that reset. Now compared through it, and the planted bug fails."""
    generate(tmp_path, "start", LEARNED_START)
    args = ["--init", "3, 4", "--input-shape", "x=3", "--steps", "5", "--strict", "--no-speed"]
    result = verify("start.py", "start_batched.py", *args, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "gradient non-zero 3/3 (h0 through reset_state)" in result.stdout, result.stdout
    planted = tmp_path / "start_batched.py"
    text = planted.read_text()
    assert "state = state._replace(h=bm.tanh(params.h0))" in text
    planted.write_text(text.replace("bm.tanh(params.h0)", "bm.tanh(jax.lax.stop_gradient(params.h0))"))
    code, payload = verify_json("start.py", "start_batched.py", *args, cwd=tmp_path)
    found = sections(payload)
    assert code == 1 and found["forward"]["ok"] and found["reset"]["ok"], payload
    assert not found["grad/example"]["ok"] and not found["grad/mean"]["ok"]
    assert any("h0 (through reset_state" in m["quantity"] for m in found["grad/example"]["mismatches"])


def test_a_weight_only_a_random_reset_reads_is_weak_saying_why(tmp_path: Path) -> None:
    """The reset draws each example's noise from keys this check does not line up with the original's:
    the gradient through it is not compared, and the run says so (WEAK), not PASS."""
    noisy = LEARNED_START.replace("self.h.value = bm.tanh(self.h0.value)",
                                  "self.h.value = bm.tanh(self.h0.value) + bm.random.normal(0., 0.01, self.h.shape)")
    assert noisy != LEARNED_START
    generate(tmp_path, "noisy", noisy)
    result = verify("noisy.py", "noisy_batched.py", "--init", "3, 4", "--input-shape", "x=3", "--steps", "5",
                    "--no-speed", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert next(r for r in result.stdout.splitlines() if r.startswith("LearnedStart ")).rstrip().endswith("WEAK")
    assert "the gradient of h0 was not checked: only reset_state reads it, and it draws random numbers" in result.stdout


TRAINING_RESET = """
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

    def reset_state(self, batch_size=None):
        self.V.value = bp.init.variable_(bm.ones, self.n, batch_size) * self.V_rest

    def update(self, x):
        self.V.value = self.V + (-self.V + x * self.w) / self.tau
        return self.V.value
"""


@pytest.mark.parametrize("planted", [False, True])
def test_a_training_mode_models_reset_is_checked_as_brainpy_resets_it(tmp_path: Path, planted: bool) -> None:
    """BrainPy's docs' LIF built in training mode: its original resets only given its batch size of one
    (reset_state(1); reset_state() raises). main skipped the resets ("reset skipped: the original's reset()
    raised MathError") and said PASS under --strict, though every reset of the batch raised; a reset
    planted wrong in the batched file passed too."""
    generate(tmp_path, "lif", TRAINING_RESET)
    if planted:
        made = tmp_path / "lif_batched.py"
        assert made.read_text().count("* self.V_rest") == 1
        made.write_text(made.read_text().replace("* self.V_rest", "* self.V_rest * 1.5"))
    code, payload = verify_json("lif.py", "lif_batched.py", "--init", "4", "--mode", "training", "--input-shape",
                                "x=1x4", "--steps", "5", "--batch", "3", "--strict", "--no-speed", cwd=tmp_path)
    reset = sections(payload)["reset"]
    assert reset["skipped"] is None, reset
    if planted:
        assert code == 1 and not reset["ok"], payload
    else:
        assert code == 0 and reset["ok"], payload
        assert payload["classes"][0]["verdict"] == "PASS"


def test_a_model_whose_reset_was_never_compared_is_weak(tmp_path: Path) -> None:
    """A reset the original cannot do in any way verify tries: the batch's reset was never compared, so
    the check could not have failed there. main: PASS under --strict with 'reset skipped'."""
    generate(tmp_path, "broken", TRAINING_RESET.replace("bp.init.variable_(bm.ones, self.n, batch_size)",
                                                        "bm.ones(self.n + 1)"))
    checked = verify("broken.py", "broken_batched.py", "--init", "4", "--mode", "training", "--input-shape",
                     "x=1x4", "--steps", "5", "--batch", "3", "--strict", "--no-speed", cwd=tmp_path)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "LIF: WEAK: the resets were not compared" in checked.stdout, checked.stdout
