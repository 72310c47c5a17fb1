"""Issue 17 item 6: names that name nothing are errors with the closest valid name, in a
[tool.batchify] table and in `batchify verify --shared` (subprocess runs of the CLI)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def batchify(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "batchify", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_a_misspelt_tool_batchify_key_is_an_error_with_the_closest_key(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "a.py").write_text((ROOT / "examples" / "rate_rnn.py").read_text())
    (tmp_path / "pyproject.toml").write_text('[tool.batchify]\nshraed = ["i"]\n\n[[tool.batchify.targets]]\n'
                                             'source = "models/*.py"\noutput = "out/*.py"\n')
    result = batchify("hook", cwd=tmp_path)
    assert result.returncode == 2 and "pyproject.toml:2:1: BFY016" in result.stderr, result.stderr
    assert "did you mean 'shared'?" in result.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.batchify]\n\n[[tool.batchify.targets]]\nsource = "models/*.py"\n'
                                             'output = "out/*.py"\nclases = ["RateRNN"]\n')
    result = batchify("hook", cwd=tmp_path)
    assert result.returncode == 2 and "did you mean 'class'?" in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_verify_shared_naming_no_parameter_is_an_error(tmp_path: Path) -> None:
    result = batchify("verify", "examples/spiking_classifier.py", "examples/spiking_classifier_batched.py",
                      "--init", "64, 32, 10", "--method", "step_run", "--shared", "j=time", "--input-shape", "x=64",
                      "--steps", "3", "--no-speed", cwd=ROOT)
    assert result.returncode == 2 and "BFY302" in result.stderr, result.stdout + result.stderr
    assert "no parameter named 'j'" in result.stderr and "i, x" in result.stderr
