"""Run batchify (and, where driving information is committed, batchify verify) over the public
corpus of real BrainPy model classes, and write docs/coverage.md.

It fetches nothing: SOURCES is a local folder holding each corpus repository checked out at the
listed commit, as SOURCES/<owner>/<name>/<path>. Notebooks are read as their code cells
concatenated in order (IPython magics and shell lines dropped), which is what the corpus's
line numbers count.

    python scripts/corpus_coverage.py --sources ~/corpus-checkouts [--corpus LIST.tsv]...

The lists default to the team's public list (shared/corpus/public.tsv) and our own wider list
(corpus/more.tsv). Verification runs with --strict: a check that could not have failed (no state
moved, every example alike, no spike, every gradient zero) is WEAK, not a pass.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIAGNOSTIC = re.compile(r"^.*?:(\d+):(\d+): (BFY\d{3}) (.*)$")


def notebook_code(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    lines = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = cell["source"]
        text = "".join(source) if isinstance(source, list) else source
        for line in text.splitlines():
            lines.append("" if line.lstrip().startswith(("%", "!")) else line)  # keep the line count
    return "\n".join(lines) + "\n"


def source_text(sources: Path, repo: str, path: str) -> str | None:
    owner_name = repo.split("@")[0]
    file = sources / owner_name / path
    if not file.is_file():
        return None
    return notebook_code(file) if file.suffix == ".ipynb" else file.read_text(encoding="utf-8", errors="replace")


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "batchify", *cmd], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=Path, required=True)
    parser.add_argument("--corpus", type=Path, action="append",
                        help="a list of classes (default: shared/corpus/public.tsv and corpus/more.tsv)")
    parser.add_argument("--drive", type=Path, default=ROOT / "corpus" / "drive.toml",
                        help="committed driving information: one [\"repo/path::Class\"] table each")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "coverage.md")
    args = parser.parse_args()
    drives = tomllib.loads(args.drive.read_text()) if args.drive.is_file() else {}
    lists = args.corpus or [ROOT.parent / "shared" / "corpus" / "public.tsv", ROOT / "corpus" / "more.tsv"]
    rows = [{**row, "list": path.name} for path in lists
            for row in csv.DictReader(path.open(encoding="utf-8"), delimiter="\t", quoting=csv.QUOTE_NONE)]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "pyproject.toml").write_text("")
        for i, row in enumerate(rows):
            key = f"{row['repo'].split('@')[0]}/{row['path']}::{row['class']}"
            text = source_text(args.sources, row["repo"], row["path"])
            drive = drives.get(key, {})
            entry = {"key": key, "class": row["class"], "list": row["list"], "transformed": False, "verified": None,
                     "verdict": "", "strength": None, "weak": [], "code": "", "message": "",
                     "runnable": drive.get("runnable", True), "reason": drive.get("reason", ""),
                     "notes": drive.get("notes", "")}
            if text is None:
                entry.update(code="-", message="source not found under --sources")
                results.append(entry)
                continue
            src = work / f"c{i:03d}.py"
            out = work / f"c{i:03d}_batched.py"
            src.write_text(text)
            flags = [w for name in drive.get("shared_names", []) for w in ("--shared", name)]
            t = run([src.name, "-o", out.name, "--class", row["class"], *flags], work)
            if t.returncode == 0:
                entry["transformed"] = True
            else:
                first = (t.stderr.strip().splitlines() or ["?"])[0]
                match = DIAGNOSTIC.match(first)
                entry.update(code=match.group(3) if match else "crash",
                             message=(f"line {match.group(1)}: {match.group(4)}" if match else first)[:300])
            if entry["transformed"] and entry["runnable"] and drive.get("verify"):
                v = run(["verify", src.name, out.name, "--class", row["class"], *drive["verify"], "--format", "json",
                         "--no-speed", "--strict"],
                        work)
                entry["verified"] = v.returncode == 0
                try:
                    cls = json.loads(v.stdout)["classes"][0]
                    entry.update(verdict=cls["verdict"], strength=cls["strength"], weak=cls["weak_reasons"])
                except (json.JSONDecodeError, KeyError, IndexError):
                    entry["verdict"] = "cannot run"
                if v.returncode != 0:
                    entry["message"] = ("; ".join(entry["weak"]) if entry["verdict"] == "WEAK"
                                        else verify_failure(v))[:300]
            results.append(entry)
            print(f"{key}: {'transformed' if entry['transformed'] else entry['code']}", flush=True)
    write_report(args.out, results)
    return 0


def verify_failure(v: subprocess.CompletedProcess) -> str:
    """The first failed check of a JSON verify report, or the diagnostic verify printed."""
    try:
        report = json.loads(v.stdout)
    except json.JSONDecodeError:
        try:  # `--format json` prints diagnostics as JSON on stderr too
            first = json.loads(v.stderr)["diagnostics"][0]
            return f"{first['code']} {first['message']}"
        except (json.JSONDecodeError, KeyError, IndexError):
            lines = v.stderr.strip().splitlines()
            return lines[-1] if lines else "verify failed"
    for cls in report["classes"]:
        for section in cls["sections"]:
            if not section["ok"]:
                first = section["mismatches"][0] if section["mismatches"] else {}
                return (f"{cls['verdict']}: {section['name']}: {first.get('quantity', '')} "
                        f"max abs error {first.get('max_abs', float('nan')):.3g}")
    return "verify failed"


def covered(strength: dict | None) -> str:
    if not strength:
        return ""
    parts = [f"state {strength['moved']}/{strength['state_leaves']}" if strength["state_leaves"] else "no state",
             "differ" if strength["examples_differ"] else "alike"]
    if strength["spikes"] is not None:
        parts.append(f"{strength['spikes']} spikes")
    if strength["weights"]:
        g = strength["weights_with_gradient"]
        parts.append(f"grad {g}/{strength['weights']}" if g is not None else "grad not run")
    return ", ".join(parts)


def summary(results: list[dict], title: str) -> list[str]:
    runnable = [r for r in results if r["runnable"]]
    total = len(runnable)
    transformed = sum(r["transformed"] for r in runnable)
    passed = [r for r in runnable if r["verdict"] == "PASS"]
    weak = [r for r in runnable if r["verdict"] == "WEAK"]
    checked = passed + weak
    moving = [r for r in checked if r["strength"]["examples_differ"] and r["strength"]["moved"]]
    with_weights = [r for r in checked if r["strength"]["weights"]]
    grads = [r for r in with_weights if r["strength"]["weights_with_gradient"]]
    return [
        f"**{title}**: {len(results)} classes, of which {total} run on current BrainPy as originals; "
        f"transformed {transformed} ({transformed / max(total, 1):.0%}); "
        f"full PASS {len(passed)} ({len(passed) / max(total, 1):.0%}), WEAK {len(weak)}; of the {len(checked)} "
        f"that verify, {len(moving)} ({len(moving) / max(len(checked), 1):.0%}) have examples that differ and a "
        f"state that changes, and {len(grads)} of the {len(with_weights)} with weights have non-zero gradients "
        "checked.",
    ]


def write_report(out: Path, results: list[dict]) -> None:
    codes = Counter(r["code"] for r in results if not r["transformed"])
    lines = [
        "# Coverage on the corpus",
        "",
        "Written by `scripts/corpus_coverage.py` over the classes of `shared/corpus/public.tsv` (the",
        "team's list) and `corpus/more.tsv` (ours): real BrainPy models from BrainPy's docs, examples",
        "and tests and third-party projects, driven by `corpus/drive.toml`. Verification ran with",
        "`--strict`: outputs and every state at every step, examples starting from perturbed states,",
        "gradients of every weight; **WEAK** is a check that passed but could not have failed (no",
        "state moved, every example alike, no spike, every gradient zero, a choice of the model's",
        "own code taken one way only). *covered*: state Variables",
        "that changed / all, whether examples differ, spikes seen, weights with a non-zero gradient / all.",
        "",
        *summary(results, "Both lists"),
        "",
        *summary([r for r in results if r["list"] == "public.tsv"], "public.tsv"),
        "",
        *summary([r for r in results if r["list"] != "public.tsv"], "more.tsv"),
        "",
        "- diagnostics, by code: " + ", ".join(f"{c} × {n}" for c, n in codes.most_common()),
        "",
        "| list | class | runs on BrainPy 2.9 | transformed | verified | covered | diagnostic, failure or weakness |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        verified_cell = "-" if r["verified"] is None else (r["verdict"] or ("yes" if r["verified"] else "NO"))
        diag = f"{r['code']} {r['message']}".strip()
        if r["runnable"] and r["verdict"] != "PASS" and not diag:  # not verified: our notes say why
            diag = r.get("notes", "")
        diag = diag.replace("|", "\\|")
        runs = "yes" if r["runnable"] else f"no: {r['reason']}".replace("|", "\\|")
        lines.append(f"| {r['list']} | `{r['key']}` | {runs} | {'yes' if r['transformed'] else 'no'} | "
                     f"{verified_cell} | {covered(r['strength'])} | {diag} |")
    out.write_text("\n".join(lines) + "\n")
    (out.with_suffix(".json")).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
