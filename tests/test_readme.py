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


def test_every_fenced_block_says_what_it_is() -> None:
    """An untagged block could hide a command that scripts/readme_commands.py would not run."""
    fences = re.findall(r"^```(.*)$", (ROOT / "README.md").read_text(), flags=re.M)
    openings = fences[::2]
    assert openings and all(openings), f"README fences without a language: {fences}"
    assert set(openings) <= {"sh", "python", "toml", "yaml", "text"}, openings


def test_the_readme_commands_are_the_ones_ci_runs() -> None:
    """CI runs every ```sh line through scripts/readme_commands.py; here: the quick start is among
    them, and every file a command names exists in the checkout."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from readme_commands import readme_commands
    finally:
        sys.path.pop(0)
    commands = readme_commands()
    assert any("pip install -e '.[test]'" in c for c in commands) and ".venv/bin/python -m pytest" in commands
    assert "scripts/readme_commands.py" in (ROOT / ".ci" / "run").read_text()
    named = {w for c in commands for w in c.split() if w.endswith(".py") and not w.startswith(("build/", "-"))}
    missing = sorted(w for w in named if not (ROOT / w).is_file())
    assert not missing, missing
