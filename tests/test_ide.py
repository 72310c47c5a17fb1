"""What IDEs read: the documented VS Code matcher and PyCharm filter on real diagnostics, the JSON schema."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
from example_specs import ROOT
from test_cli import BAD_SOURCES

DOCS = ROOT / "docs"
CASES = ["syntax-error", "weight-written", "unknown-variable", "builtin-wired-to-own-model", "import-clash"]

# IntelliJ's RegexpFilter macros (com.intellij.execution.filters.RegexpFilter).
PYCHARM_MACROS = {
    "$FILE_PATH$": r"((?:[A-Za-z]:|/)[0-9 a-z_A-Z\-\\./]+)",
    "$LINE$": r"([0-9]+)",
    "$COLUMN$": r"([0-9]+)",
}


def diagnostics_for(tmp_path: Path, *extra: str) -> list[tuple[str, dict]]:
    """(text line, JSON record) for each bad source, from two runs of the real CLI."""
    out = []
    for case in CASES:
        src = tmp_path / f"{case.replace('-', '_')}.py"
        src.write_text(BAD_SOURCES[case][0])
        text = subprocess.run([sys.executable, "-m", "batchify", str(src), *extra], capture_output=True, text=True)
        js = subprocess.run([sys.executable, "-m", "batchify", str(src), "--format", "json", *extra],
                            capture_output=True, text=True)
        (line,) = text.stderr.strip().splitlines()
        (record,) = json.loads(js.stderr)["diagnostics"]
        out.append((line, record))
    return out


def vscode_matchers() -> list[dict]:
    doc = (DOCS / "ide.md").read_text()
    block = re.search(r"```json\n(.*?)```", doc, re.S).group(1)
    tasks = json.loads(block)["tasks"]
    return [t["problemMatcher"]["pattern"] for t in tasks]


def test_vscode_problem_matcher_reads_real_diagnostics(tmp_path: Path) -> None:
    matchers = vscode_matchers()
    assert len(matchers) == 2
    for pattern in matchers:
        regex = re.compile(pattern["regexp"])
        for line, record in diagnostics_for(tmp_path):
            match = regex.match(line)
            assert match, line
            assert match.group(pattern["file"]) == record["path"]
            assert int(match.group(pattern["line"])) == record["line"]
            assert int(match.group(pattern["column"])) == record["column"]
            assert match.group(pattern["code"]) == record["code"]
            assert match.group(pattern["message"]) == record["message"]


def test_pycharm_output_filter_reads_real_diagnostics(tmp_path: Path) -> None:
    doc = (DOCS / "ide.md").read_text()
    filter_text = re.search(r"Output filters\*: `([^`]+)`", doc).group(1)
    assert filter_text == "$FILE_PATH$:$LINE$:$COLUMN$"
    regex = re.escape(filter_text)
    for macro, group in PYCHARM_MACROS.items():
        regex = regex.replace(re.escape(macro), group)
    compiled = re.compile(regex)
    for line, record in diagnostics_for(tmp_path, "--absolute-paths"):
        match = compiled.search(line)
        assert match, line
        assert Path(match.group(1)).is_absolute() and Path(match.group(1)) == Path(record["path"])
        assert (int(match.group(2)), int(match.group(3))) == (record["line"], record["column"])


def test_json_diagnostics_follow_the_documented_schema(tmp_path: Path) -> None:
    schema = json.loads((DOCS / "diagnostics.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    src = tmp_path / "two.py"
    src.write_text(BAD_SOURCES["weight-written"][0] + "\n    def more(self):\n        self.w -= self.v.sum()\n")
    result = subprocess.run([sys.executable, "-m", "batchify", str(src), "--format", "json"], capture_output=True,
                            text=True)
    payload = json.loads(result.stderr)
    jsonschema.validate(payload, schema)
    assert len(payload["diagnostics"]) == 2 and result.stdout == ""
    for _, record in diagnostics_for(tmp_path):
        jsonschema.validate({"version": 1, "diagnostics": [record]}, schema)
    usage = subprocess.run([sys.executable, "-m", "batchify", str(src), "--no-such-flag", "--format=json"],
                           capture_output=True, text=True)
    assert usage.returncode == 2
    jsonschema.validate(json.loads(usage.stderr), schema)
    # The schema rejects what it should.
    bad = {"version": 1, "diagnostics": [{**payload["diagnostics"][0], "line": 0}]}
    try:
        jsonschema.validate(bad, schema)
    except jsonschema.ValidationError:
        pass
    else:
        raise AssertionError("line 0 should be rejected")


def test_stdin_error_writes_nothing_to_stdout(tmp_path: Path) -> None:
    bad = subprocess.run([sys.executable, "-m", "batchify", "-", "--stdin-filename", "models/net.py"],
                         input=BAD_SOURCES["weight-written"][0], capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr.startswith("models/net.py:16:9: BFY201")
