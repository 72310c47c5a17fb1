"""verify on models it used to blame wrongly or answer with an internal error (probes N4A, N4B,
2026-12-06): a child built with an explicit BrainPy name, an original that raises inside BrainPy's own
code, a shared value the generated module takes per example. Each test names what main did."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from batchify import transform

HEAD = "import brainpy as bp\nimport brainpy.math as bm\n\n\n"


def verify_cli(tmp_path: Path, name: str, source: str, *flags: str, generate: tuple[str, ...] = ()
               ) -> subprocess.CompletedProcess:
    """``batchify verify`` of ``source`` against the module batchify makes of it (with ``generate``'s
    transform flags, ``--shared s``), in a fresh process."""
    (tmp_path / f"{name}.py").write_text(source)
    if generate:
        done = subprocess.run([sys.executable, "-m", "batchify", f"{name}.py", "-o", f"{name}_batched.py", *generate],
                              capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    else:
        (tmp_path / f"{name}_batched.py").write_text(transform(source.encode(), f"{name}.py",
                                                               command="batchify").text)
    return subprocess.run([sys.executable, "-m", "batchify", "verify", f"{name}.py", f"{name}_batched.py", *flags,
                           "--no-speed"], capture_output=True, text=True, cwd=tmp_path)


NAMED_CHILD = HEAD + """\
class Net(bp.DynSysGroup):
  def __init__(self, n=4):
    super().__init__()
    self.E = bp.dyn.Lif(n, V_th=1., name='E')
    self.w = bm.TrainVar(bm.ones(n))

  def update(self, x):
    self.E(x * self.w)
    return self.E.V.value
"""


def test_a_child_with_an_explicit_name_verifies(tmp_path: Path) -> None:
    """main: BFY302 'the model's own code raised UniqueNameError: ... has a used name "E" (in __init__);
    fix the model': verify builds the model (and the batched one) several times in one process, and
    BrainPy refuses a second live object of one name. The docs' `rates.FHN(..., name='fhn')`."""
    checked = verify_cli(tmp_path, "named", NAMED_CHILD, "--init", "4", "--input-shape", "x=4:float32:30.0",
                         "--steps", "10", "--batch", "3", "--strict")
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]
    assert "UniqueNameError" not in checked.stderr
    assert "PASS" in checked.stdout and "gradient non-zero 1/1" in checked.stdout
    row = next(line for line in checked.stdout.splitlines() if line.startswith("Net "))
    assert row.split()[5:9] == ["ok", "ok", "ok", "ok"], row  # state, reset, constructor (FooBatched(...)), grad


BUILTIN_SUBCLASS = HEAD + """\
class RE(bp.dyn.CondNeuGroup):
  def __init__(self, size):
    super().__init__(size)
    self.IL = bp.channels.IL(size)
    self.IT = bp.channels.ICaT_HP1992(size, V_sh=0., phi_q=3., phi_p=3.)
"""


def test_an_original_raising_in_brainpys_code_is_the_models_error(tmp_path: Path) -> None:
    """main: 'BFY900 internal error: TypeError: _ICa_p2q_ss.current() missing 2 required positional
    arguments ... (please report it)', exit 123: a class of the file deriving from a BrainPy built-in
    (Bazhenov_1998's RE, old-style channels put straight into a CondNeuGroup, which BrainPy 2.9 runs
    into a TypeError) raised in its step with no frame of the source file in the traceback. The same
    error in the model's own code was already BFY302."""
    checked = verify_cli(tmp_path, "channels", BUILTIN_SUBCLASS, "--init", "4", "--dt", "0.05", "--port",
                         "input=4:float32:2.0", "--steps", "5", "--batch", "3")
    assert checked.returncode == 2, checked.stdout[-3000:] + checked.stderr[-2000:]
    assert "BFY900" not in checked.stderr and "please report" not in checked.stderr, checked.stderr
    assert checked.stderr.startswith("channels.py:5:1: BFY302 cannot verify: the model's own code raised TypeError: "
                                     "_ICa_p2q_ss.current() missing 2 required positional arguments"), checked.stderr
    assert "RE.update" in checked.stderr, checked.stderr


BUILTIN_SUBCLASS_INIT = HEAD + """\
class N(bp.dyn.Lif):
  def scaled(self, x):
    self.update(x)
    return self.V.value * 2.
"""


def test_an_original_constructor_raising_in_brainpys_code_is_the_models_error(tmp_path: Path) -> None:
    """main: 'BFY900 internal error: TypeError: 'int' object is not iterable (please report it ...)': the
    constructor of a class of the file with no __init__ of its own (BrainPy's, given `sharding=5`)."""
    checked = verify_cli(tmp_path, "lifsub", BUILTIN_SUBCLASS_INIT, "--init", "4, sharding=5", "--method", "scaled",
                         "--input-shape", "x=4", "--steps", "3")
    assert checked.returncode == 2, checked.stdout[-3000:] + checked.stderr[-2000:]
    assert checked.stderr.startswith("lifsub.py:5:1: BFY302 cannot verify: the model's own code raised TypeError: "
                                     ), checked.stderr
    assert "(in N.__init__, in BrainPy's code it runs)" in checked.stderr, checked.stderr


SHARED_DICT = HEAD + """\
class Node(bp.DynamicalSystem):
  def __init__(self, n):
    super().__init__()
    self.v = bm.Variable(bm.zeros(n))

  def update(self, s, x):
    self.v.value = 0.5 * self.v + x
    if s['output_type'] == 'double':
      return 2. * self.v.value
    return self.v.value
"""


def test_a_shared_value_the_module_takes_per_example_is_a_driving_error(tmp_path: Path) -> None:
    """main: 'BFY900 internal error: ValueError: argument 's' is per example and needs a leading batch axis of
    size 3, but has shape []; ... regenerate the module with --shared s (please report it ...)', exit 123, for
    `verify --shared s=DICT` on a module generated without `--shared s` (OTTT-SNN's OnlineLIFNode.update(s, x)).
    The advice was right; the code was not: a flag the generated module does not match is BFY302."""
    flags = ("--init", "4", "--input-shape", "x=4:float32:1.0", "--shared", "s={'output_type': 'double'}",
             "--steps", "5", "--batch", "3", "--strict")
    checked = verify_cli(tmp_path, "node", SHARED_DICT, *flags)
    assert checked.returncode == 2, checked.stdout[-3000:] + checked.stderr[-2000:]
    assert "BFY900" not in checked.stderr and "please report" not in checked.stderr, checked.stderr
    assert checked.stderr.startswith("node.py:5:1: BFY302 cannot verify: --shared s="), checked.stderr
    assert "node_batched.py was generated without --shared s" in checked.stderr, checked.stderr
    assert "regenerate the module with --shared s" in checked.stderr, checked.stderr
    # The advice followed: PASS.
    regenerated = verify_cli(tmp_path, "node", SHARED_DICT, *flags, generate=("--shared", "s"))
    assert regenerated.returncode == 0, regenerated.stdout[-3000:] + regenerated.stderr[-2000:]
    # A shared Python number needs no --shared at generation (the runtime uses it for every example).
    number = verify_cli(tmp_path, "node", SHARED_DICT.replace("s['output_type'] == 'double'", "s > 0"),
                        *flags[:4], "--shared", "s=1", *flags[6:])
    assert number.returncode == 0, number.stdout[-3000:] + number.stderr[-2000:]
