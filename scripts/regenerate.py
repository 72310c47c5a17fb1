"""Regenerate every committed generated file by re-running the command in its header.

Run from the repository root after a deliberate change to the generator, then read
the diff of every file it rewrote:  python scripts/regenerate.py
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PREFIX = "# Regenerate: "


def main() -> int:
    status = 0
    for path in sorted([*ROOT.glob("examples/*_batched.py"), *ROOT.glob("examples/training/*_batched.py"),
                        *ROOT.glob("tests/golden/*_batched.py")]):
        command = path.read_text().splitlines()[1]
        if not command.startswith(PREFIX):
            print(f"{path}: no regeneration command in the header", file=sys.stderr)
            status = 1
            continue
        words = shlex.split(command[len(PREFIX):])
        result = subprocess.run([sys.executable, "-m", "batchify", *words[1:]], cwd=ROOT)
        status = status or result.returncode
        print(f"{path.relative_to(ROOT)}: {'ok' if result.returncode == 0 else 'FAILED'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
