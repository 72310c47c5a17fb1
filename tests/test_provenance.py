"""Issue 15, item 5: `batchify hook --check` knows an up-to-date output from its header (source
sha256, the command with every option, the generator's fingerprint, a hash of the output) without
transforming it, and still reports the output stale when any of those changed.

Before: every --check transformed every target (0.215 s CPU a file), and the header held no
fingerprint of the generator, so a changed template was found only by regenerating."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from batchify.provenance import generator_fingerprint, up_to_date, without_stamp

ROOT = Path(__file__).resolve().parent.parent
# The bundled examples without a shared time index (spiking_classifier needs --shared i).
SOURCES = [p for p in sorted((ROOT / "examples").glob("*.py"))
           if not p.stem.endswith("_batched") and p.stem != "spiking_classifier"]

PYPROJECT = """
[tool.batchify]

[[tool.batchify.targets]]
source = "models/*.py"
output = "models/*_batched.py"
shared = {shared}
"""


def run(repo: Path, *args: str, python: list[str] | None = None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([*(python or [sys.executable]), "-m", "batchify", *args], cwd=repo, capture_output=True,
                          text=True, timeout=600, env=env)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "models").mkdir()
    (tmp_path / "pyproject.toml").write_text(PYPROJECT.format(shared="[]"))
    for i in range(20):
        shutil.copy(SOURCES[i % len(SOURCES)], tmp_path / "models" / f"m{i:02d}.py")
    created = run(tmp_path, "hook")
    assert created.returncode == 1 and len(list((tmp_path / "models").glob("*_batched.py"))) == 20, created.stderr
    return tmp_path


def test_up_to_date_outputs_are_checked_from_their_headers_alone(repo: Path) -> None:
    for args in (["hook", "--check"], ["models/m00.py", "-o", "models/m00_batched.py", "--check"]):
        result = run(repo, *args, python=[sys.executable, "-X", "importtime"])
        assert result.returncode == 0, result.stderr
        imported = imported_modules(result.stderr)
        assert "batchify.cli" in imported, "-X importtime reported nothing to check"
        assert "libcst" not in imported and "jinja2" not in imported, f"{args}: an up-to-date check transformed"


def imported_modules(importtime: str) -> set[str]:
    """The modules ``python -X importtime`` reports (its last column, indented by depth)."""
    return {line.split("|")[-1].strip() for line in importtime.splitlines() if line.startswith("import time")}


@pytest.mark.parametrize("change,reason", [
    ("source", "its source changed"),
    ("options", "other options"),
    ("edit", "edited since it was generated"),
])
def test_what_the_header_records_makes_an_output_stale(repo: Path, change: str, reason: str) -> None:
    if change == "source":
        src = repo / "models" / "m03.py"
        src.write_text(src.read_text() + "\n# a comment\n")
    elif change == "options":
        (repo / "pyproject.toml").write_text(PYPROJECT.format(shared='["x"]'))
    else:
        out = repo / "models" / "m03_batched.py"
        text = out.read_text()
        assert "from batchify.runtime import" in text
        out.write_text(text.replace("from batchify.runtime import", "# Hand-edited.\nfrom batchify.runtime import", 1))
    result = run(repo, "hook", "--check")
    assert result.returncode == 1 and "BFY008" in result.stderr and reason in result.stderr, result.stderr


def test_a_changed_template_makes_every_output_stale(repo: Path, tmp_path_factory) -> None:
    """A copy of batchify whose template differs: its fingerprint differs, and it says so."""
    copy = tmp_path_factory.mktemp("changed-batchify")
    shutil.copytree(ROOT / "batchify", copy / "batchify", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "templates", copy / "templates")
    template = copy / "templates" / "module.py.jinja"
    template.write_text(template.read_text().replace("; do not edit.", "; do not edit by hand.", 1))
    env = {**__import__("os").environ, "PYTHONPATH": str(copy)}
    result = run(repo, "hook", "--check", env=env)
    assert result.returncode == 1 and result.stderr.count("BFY008") == 20, result.stderr
    assert "another batchify version (or a changed template)" in result.stderr


def test_the_stamp_is_part_of_the_output_and_checks_it(repo: Path) -> None:
    out = repo / "models" / "m00_batched.py"
    text = out.read_text()
    assert text.splitlines()[2].startswith(f"# Inputs: generator {generator_fingerprint()}, output ")
    source = (repo / "models" / "m00.py").read_bytes()
    command = text.splitlines()[1].removeprefix("# Regenerate: ")
    assert up_to_date(text, source, command)
    assert not up_to_date(text, source, command + " --class X")
    assert not up_to_date(text.replace("bfy.unwrap(state)", "state", 1), source, command)
    assert without_stamp(text).count("\n") == text.count("\n") - 1


def test_compiled_templates_are_kept_between_processes_and_change_nothing(tmp_path, monkeypatch) -> None:
    """Issue 15: the templates' compiled code is cached (Jinja's bytecode cache, keyed by each
    template's source checksum), unless Python itself is told to write no bytecode."""
    import jinja2

    from batchify import emit, transform

    source = (ROOT / "examples" / "rate_rnn.py").read_bytes()
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    assert emit.template_cache() is None
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE")
    cache = emit.template_cache()
    assert isinstance(cache, jinja2.FileSystemBytecodeCache)
    cache.directory = str(tmp_path)
    uncached = transform(source, "rate_rnn.py", command="batchify").text
    emit.environment.cache_clear()
    monkeypatch.setattr(emit, "template_cache", lambda: cache)
    try:
        first = transform(source, "rate_rnn.py", command="batchify").text  # compiles and stores
        assert any(tmp_path.glob("__jinja2_*.cache"))
        emit.environment.cache_clear()
        second = transform(source, "rate_rnn.py", command="batchify").text  # loads
    finally:
        emit.environment.cache_clear()
    assert first == second == uncached
