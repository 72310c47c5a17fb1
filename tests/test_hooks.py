"""The pre-commit hooks, installed from this repository by the real `pre-commit` tool."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from example_specs import EXAMPLES, ROOT

PRE_COMMIT = [sys.executable, "-m", "pre_commit"]
SHIPPED = ["pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "batchify", "templates"]


def git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com",
                           "-c", "commit.gpgsign=false", *args], cwd=repo, capture_output=True, text=True)


@pytest.fixture(scope="session")
def hooks_repo(tmp_path_factory) -> tuple[Path, str]:
    """This repository's working tree as a git repository pre-commit can install from."""
    repo = tmp_path_factory.mktemp("batchify-hooks")
    for name in SHIPPED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, repo / name)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    assert git(repo, "commit", "-qm", "hooks").returncode == 0
    return repo, git(repo, "rev-parse", "HEAD").stdout.strip()


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


PYPROJECT = """
[tool.batchify]

[[tool.batchify.targets]]
source = "models/*.py"
output = "models/*_batched.py"
"""


def make_user_repo(tmp_path: Path, hooks_repo, hook_id: str, home: Path):
    repo = tmp_path / "user"
    (repo / "models").mkdir(parents=True)
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / "README.md").write_text("a project\n")
    shutil.copy(EXAMPLES / "rate_rnn.py", repo / "models" / "rnn.py")
    path, rev = hooks_repo
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {path}\n  rev: {rev}\n  hooks:\n  - id: {hook_id}\n")
    env = {**os.environ, "PRE_COMMIT_HOME": str(home)}
    git(repo, "init", "-q")
    install = subprocess.run([*PRE_COMMIT, "install"], cwd=repo, capture_output=True, text=True, env=env)
    assert install.returncode == 0, install.stdout + install.stderr
    return repo, env


def commit(repo: Path, env, message: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", message],
                          cwd=repo, capture_output=True, text=True, env=env)


def test_batchify_hook_regenerates_fails_once_then_passes(tmp_path, hooks_repo, pre_commit_home) -> None:
    repo, env = make_user_repo(tmp_path, hooks_repo, "batchify", pre_commit_home)
    generated = repo / "models" / "rnn_batched.py"
    git(repo, "add", "-A")
    first = commit(repo, env, "model")  # the output does not exist yet: created, and the commit fails
    assert first.returncode != 0, first.stdout
    assert "created models/rnn_batched.py" in first.stdout + first.stderr
    assert generated.is_file()
    git(repo, "add", "-A")
    assert commit(repo, env, "model and its batched module").returncode == 0

    # Edit the model: the hook regenerates its output and fails once, then passes.
    source = repo / "models" / "rnn.py"
    source.write_text(source.read_text().replace("g=1.2", "g=1.1"))
    before = generated.read_text()
    git(repo, "add", "models/rnn.py")
    failed = commit(repo, env, "tune g")
    assert failed.returncode != 0
    assert "regenerated models/rnn_batched.py" in failed.stdout + failed.stderr
    assert generated.read_text() != before
    git(repo, "add", "models/rnn_batched.py")
    assert commit(repo, env, "tune g").returncode == 0

    # An unrelated commit is untouched.
    (repo / "README.md").write_text("a project, documented\n")
    git(repo, "add", "README.md")
    unrelated = commit(repo, env, "docs")
    assert unrelated.returncode == 0, unrelated.stdout + unrelated.stderr
    assert git(repo, "status", "--porcelain").stdout == ""

    # A new model file matched by the glob gets its output created.
    shutil.copy(EXAMPLES / "two_layer_net.py", repo / "models" / "net.py")
    git(repo, "add", "models/net.py")
    new = commit(repo, env, "a second model")
    assert new.returncode != 0 and (repo / "models" / "net_batched.py").is_file()
    git(repo, "add", "-A")
    assert commit(repo, env, "a second model").returncode == 0
    assert git(repo, "status", "--porcelain").stdout == ""


def test_batchify_check_fails_on_stale_output_and_writes_nothing(tmp_path, hooks_repo, pre_commit_home) -> None:
    repo, env = make_user_repo(tmp_path, hooks_repo, "batchify-check", pre_commit_home)
    generated = repo / "models" / "rnn_batched.py"
    missing = subprocess.run([*PRE_COMMIT, "run", "--files", "models/rnn.py"], cwd=repo, capture_output=True,
                             text=True, env=env)
    assert missing.returncode == 1 and "BFY008" in missing.stdout and "is missing" in missing.stdout
    assert not generated.exists()
    subprocess.run([sys.executable, "-m", "batchify", "models/rnn.py", "-o", "models/rnn_batched.py"], cwd=repo,
                   check=True)
    git(repo, "add", "-A")
    assert commit(repo, env, "model").returncode == 0
    source = repo / "models" / "rnn.py"
    source.write_text(source.read_text().replace("tau=5.0", "tau=4.0"))
    git(repo, "add", "models/rnn.py")
    before = generated.read_bytes()
    stale = commit(repo, env, "stale")
    assert stale.returncode != 0
    assert "models/rnn_batched.py:1:1: BFY008 is stale: its source changed since it was generated" in stale.stdout + stale.stderr
    assert generated.read_bytes() == before


def test_hook_from_a_subdirectory(tmp_path) -> None:
    repo = tmp_path / "proj"
    (repo / "models" / "deep").mkdir(parents=True)
    (repo / "pyproject.toml").write_text(PYPROJECT.replace("models/*.py", "models/**/*.py")
                                         .replace("models/*_batched.py", "models/**/*_batched.py"))
    shutil.copy(EXAMPLES / "rate_rnn.py", repo / "models" / "deep" / "rnn.py")
    shutil.copy(EXAMPLES / "lif_population.py", repo / "models" / "lif.py")
    run = subprocess.run([sys.executable, "-m", "batchify", "hook"], cwd=repo / "models" / "deep",
                         capture_output=True, text=True)
    assert run.returncode == 1
    assert (repo / "models" / "deep" / "rnn_batched.py").is_file() and (repo / "models" / "lif_batched.py").is_file()
    header = (repo / "models" / "deep" / "rnn_batched.py").read_text().splitlines()[1]
    assert header == "# Regenerate: batchify models/deep/rnn.py -o models/deep/rnn_batched.py"
    again = subprocess.run([sys.executable, "-m", "batchify", "hook", "--check"], cwd=repo / "models",
                           capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    # Outputs are never taken for sources.
    assert not list(repo.rglob("*_batched_batched.py"))


def test_hook_verify_checks_configured_targets(tmp_path) -> None:
    repo = tmp_path / "proj"
    (repo / "models").mkdir(parents=True)
    shutil.copy(EXAMPLES / "rate_rnn.py", repo / "models" / "rnn.py")
    shutil.copy(EXAMPLES / "lif_population.py", repo / "models" / "lif.py")
    (repo / "pyproject.toml").write_text(PYPROJECT + '''
[tool.batchify.verify."models/rnn.py::RateRNN"]
init = [3, 8, 2]
inputs = { x = { shape = [3] } }
steps = 5
''')
    run = subprocess.run([sys.executable, "-m", "batchify", "hook", "--verify", "models/rnn.py", "models/lif.py"],
                         cwd=repo, capture_output=True, text=True)
    assert run.returncode == 1  # two outputs were created
    assert re.search(r"RateRNN +update +4 +5 +ok .* PASS", run.stdout), run.stdout
    assert "models/lif.py: no [tool.batchify.verify] table; not verified" in run.stderr
    again = subprocess.run([sys.executable, "-m", "batchify", "hook", "--verify", "models/rnn.py"], cwd=repo,
                           capture_output=True, text=True)
    assert again.returncode == 0, again.stdout + again.stderr


def test_plain_command_takes_options_from_the_configured_target() -> None:
    """`batchify SRC -o OUT` with no options uses the [tool.batchify] target for that pair."""
    run = subprocess.run([sys.executable, "-m", "batchify", "examples/spiking_classifier.py", "-o",
                          "examples/spiking_classifier_batched.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    other = subprocess.run([sys.executable, "-m", "batchify", "examples/spiking_classifier.py", "-o",
                            "examples/spiking_classifier_batched.py", "--check", "--shared", "i"], cwd=ROOT,
                           capture_output=True, text=True)
    assert other.returncode == 1 and "BFY008" in other.stderr  # explicit options win over the configuration
