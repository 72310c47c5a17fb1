"""Issue 17: the README's snippets run as written from the repository root, and the top-level
help lists the subcommands a new user needs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


def test_the_using_the_result_snippet_runs_as_written() -> None:
    blocks = [b for b in python_blocks() if "SpikingClassifierBatched" in b]
    assert blocks, "the README lost its 'Using the result' snippet"
    result = subprocess.run([sys.executable, "-c", blocks[0]], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]


def test_top_level_help_names_the_subcommands() -> None:
    result = subprocess.run([sys.executable, "-m", "batchify", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0
    assert "batchify verify SRC GENERATED" in result.stdout and "batchify hook" in result.stdout
