"""The pre-commit hook on a repository with 20 model files: wall time, in one run.

Builds a temporary git repository holding 20 models (the bundled examples under new
names) and a [tool.batchify] glob target, then times, as whole processes:
  batchify hook            (20 outputs created)
  batchify hook --check    (20 outputs up to date)
  pre-commit run --all-files with the batchify-check hook, installed from this repository
Usage: python bench/hook_bench.py [--repeat 3] [--no-pre-commit]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [p for p in sorted((ROOT / "examples").glob("*.py")) if not p.stem.endswith("_batched")]
N_FILES = 20


def timed(cmd: list[str], cwd: Path, env=None) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, env=env)
    return time.perf_counter() - start, proc.returncode


def cpu(cmd: list[str], cwd: Path) -> float:
    """CPU seconds (user + system) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, cwd=cwd, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@example.com", *args], cwd=repo, check=True,
                   capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-pre-commit", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        (repo / "models").mkdir(parents=True)
        for i in range(N_FILES):
            src = SOURCES[i % len(SOURCES)]
            text = src.read_text()
            if src.stem == "spiking_classifier":  # needs --shared i; keep the bench to one glob target
                text = text.replace("def step_run(self, i, x):", "def step_run(self, x, i=0):")
            (repo / "models" / f"model_{i:02d}.py").write_text(text)
        (repo / "pyproject.toml").write_text(
            '[tool.batchify]\n\n[[tool.batchify.targets]]\nsource = "models/*.py"\noutput = "models/*_batched.py"\n')
        batchify = [sys.executable, "-m", "batchify", "hook"]
        t_create, rc = timed(batchify, repo)
        assert rc == 1, "the first run creates 20 outputs and fails, as formatters do"
        checks = [timed([*batchify, "--check"], repo) for _ in range(args.repeat)]
        assert all(rc == 0 for _, rc in checks)
        t_check = statistics.median(t for t, _ in checks)
        print(f"{N_FILES} model files, {len(SOURCES)} distinct examples, median of {args.repeat} runs")
        print(f"  batchify hook (creates 20 outputs):   {t_create:6.2f} s  ({t_create / N_FILES * 1e3:5.0f} ms a file)")
        print(f"  batchify hook --check (up to date):   {t_check:6.2f} s  ({t_check / N_FILES * 1e3:5.0f} ms a file)")
        # CPU above the process start-up (`batchify --version` loads the same CLI and exits).
        start_up = statistics.median(cpu([sys.executable, "-m", "batchify", "--version"], repo)
                                     for _ in range(args.repeat))
        check_cpu = statistics.median(cpu([*batchify, "--check"], repo) for _ in range(args.repeat))
        print(f"  hook --check CPU above start-up:      {(check_cpu - start_up) / N_FILES * 1e3:6.1f} ms a file "
              f"(start-up {start_up * 1e3:.0f} ms, check {check_cpu * 1e3:.0f} ms)")
        if args.no_pre_commit:
            return
        hooks = Path(tmp) / "hooks"
        hooks.mkdir()
        for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "batchify", "templates"):
            src = ROOT / name
            (shutil.copytree if src.is_dir() else shutil.copy)(src, hooks / name)
        git(hooks, "init", "-q")
        git(hooks, "add", "-A")
        git(hooks, "commit", "-qm", "hooks")
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=hooks, capture_output=True, text=True).stdout.strip()
        (repo / ".pre-commit-config.yaml").write_text(
            f"repos:\n- repo: {hooks}\n  rev: {rev}\n  hooks:\n  - id: batchify-check\n")
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        env = {**os.environ, "PRE_COMMIT_HOME": str(Path(tmp) / "pc-home")}
        pre_commit = [sys.executable, "-m", "pre_commit", "run", "--all-files"]
        timed(pre_commit, repo, env)  # installs the hook environment: not timed
        runs = [timed(pre_commit, repo, env) for _ in range(args.repeat)]
        assert all(rc == 0 for _, rc in runs), runs
        t_pc = statistics.median(t for t, _ in runs)
        print(f"  pre-commit run --all-files (check):   {t_pc:6.2f} s  ({t_pc / N_FILES * 1e3:5.0f} ms a file)")


if __name__ == "__main__":
    main()
