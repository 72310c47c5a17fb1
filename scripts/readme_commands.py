"""Run every shell command of the README as written, from the repository root.

The README promises that its commands work on a fresh clone; this is how that stays true.
Every line of every ```sh block runs in order with bash from the repository root, as a user
would type it after the quick start: with ``.venv/bin`` first on PATH, as after
``. .venv/bin/activate`` (the quick start's own commands spell ``.venv/bin/`` out and create
it). A failing command stops the run with its exit code. CI (``.ci/run``) calls this on a clean
clone, so the quick start's install and test commands are the ones CI runs.

    python scripts/readme_commands.py [--list] [--skip PATTERN]...
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", flags=re.S | re.M)


def readme_commands(readme: Path = ROOT / "README.md") -> list[str]:
    """Each command of the README's ```sh blocks, in order (comment-only lines dropped)."""
    commands = []
    for block in SH_BLOCK.findall(readme.read_text(encoding="utf-8")):
        commands += [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return commands


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the commands, run nothing")
    parser.add_argument("--skip", action="append", default=[], metavar="PATTERN",
                        help="skip the commands containing PATTERN (repeatable)")
    args = parser.parse_args()
    commands = readme_commands()
    if args.list:
        print("\n".join(commands))
        return 0
    venv = ROOT / ".venv"
    env = {**os.environ, "VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    for command in commands:
        if any(pattern in command for pattern in args.skip):
            print(f"README $ {command}   (skipped)", flush=True)
            continue
        print(f"README $ {command}", flush=True)
        code = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=ROOT, env=env).returncode
        if code != 0:
            print(f"README command failed with exit code {code}: {command}", file=sys.stderr)
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
