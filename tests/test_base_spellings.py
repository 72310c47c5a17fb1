"""Issue 11 item 4: a model base is recognised under every name the installed BrainPy exports for it
(``bp.dyn.NeuGroup`` is ``bp.dyn.NeuDyn`` in brainpy 2.9), not only under one spelling."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

from batchify import names

NAMESPACES = ["brainpy", "brainpy.dyn", "brainpy.dnn", "brainpy.layers", "brainpy.math", "brainpy.dynsys"]


def resolve(qualified: str):
    module, _, attribute = qualified.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError):
        return None


def test_every_exported_spelling_of_a_model_base_is_in_the_table() -> None:
    bases = {id(obj) for obj in map(resolve, names.MODEL_BASES) if obj is not None}
    missing = sorted(f"{ns}.{key}" for ns in NAMESPACES for key, value in vars(importlib.import_module(ns)).items()
                     if isinstance(value, type) and id(value) in bases and f"{ns}.{key}" not in names.MODEL_BASES)
    assert missing == [], f"add to names.MODEL_BASES: {missing}"


def test_a_model_deriving_from_neugroup_keeps_its_own_state(tmp_path: Path) -> None:
    src = tmp_path / "neugroup.py"
    src.write_text(
        "import brainpy as bp\nimport brainpy.math as bm\n\n\nclass Cells(bp.dyn.NeuGroup):\n"
        "    def __init__(self, size):\n        super().__init__(size)\n        self.V = bm.Variable(bm.zeros(self.num))\n\n"
        "    def update(self, x):\n        self.V.value = 0.9 * self.V + x\n        return self.V.value\n")
    out = tmp_path / "neugroup_batched.py"
    result = subprocess.run([sys.executable, "-m", "batchify", str(src), "-o", str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "class CellsState(NamedTuple)" in out.read_text() and "    V: jax.Array" in out.read_text()
    checked = subprocess.run([sys.executable, "-m", "batchify", "verify", str(src), str(out), "--init", "5",
                              "--input-shape", "x=5", "--no-speed"], capture_output=True, text=True)
    assert checked.returncode == 0 and "PASS" in checked.stdout, checked.stdout + checked.stderr


def test_an_older_brainpys_network_base_is_a_model_base(tmp_path: Path) -> None:
    """``class Net(bp.dyn.Network)`` (BrainPy 2.0-2.3; probe K's 2014_CorticalModel). main took it for a
    built-in by its module and batched it whole: --class Net gave 'BFY900 the generated module reads
    'LIF', which it never binds'; without --class, Net was left out silently."""
    src = tmp_path / "net.py"
    src.write_text(
        "import brainpy as bp\nimport brainpy.math as bm\n\n\nclass LIF(bp.dyn.NeuDyn):\n"
        "    def __init__(self, size):\n        super().__init__(size=size)\n        self.V = bm.Variable(bm.zeros(self.num))\n\n"
        "    def update(self, x):\n        self.V.value = 0.9 * self.V + x\n        return self.V.value\n\n\n"
        "class Net(bp.dyn.Network):\n    def __init__(self, n):\n        super().__init__()\n        self.E = LIF(n)\n\n"
        "    def update(self, x):\n        return self.E(x)\n")
    out = tmp_path / "net_batched.py"
    result = subprocess.run([sys.executable, "-m", "batchify", str(src), "--class", "Net", "-o", str(out)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "class NetBatched(bfy.Batched, bp.dyn.Network, params=NetParams, state=NetState):" in text
    assert "        self.E = LIFBatched(n, batch_size=batch_size)\n" in text
