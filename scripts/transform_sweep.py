"""Transform every corpus class (with its committed --shared names) and every corpus Python file
whole, and keep each output and diagnostic in OUT, for a before/after diff of a change:

    python scripts/transform_sweep.py --sources ~/corpus-checkouts OUT_BEFORE   # on main
    python scripts/transform_sweep.py --sources ~/corpus-checkouts OUT_AFTER    # with the change
    diff -r -q -I "# Inputs" -I "batchify-generated\\|generator" OUT_BEFORE OUT_AFTER

It runs no verification (scripts/corpus_coverage.py does), so it takes about a minute.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_coverage import ROOT, source_text  # noqa: E402


def transform(text: str, flags: list[str], out: Path, stem: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "pyproject.toml").write_text("")  # no [tool.batchify] of ours applies
        (work / "s.py").write_text(text, encoding="utf-8")
        p = subprocess.run([sys.executable, "-m", "batchify", "s.py", "-o", "o.py", *flags], cwd=work,
                           capture_output=True, text=True, timeout=600)
        (out / f"{stem}.err").write_text(f"{' '.join(flags)}\nrc={p.returncode}\n{p.stderr}")
        if (work / "o.py").is_file():
            (out / f"{stem}.py").write_text((work / "o.py").read_text(encoding="utf-8"), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--sources", type=Path, required=True)
    parser.add_argument("--corpus", type=Path, action="append")
    parser.add_argument("--drive", type=Path, default=ROOT / "corpus" / "drive.toml")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    drives = tomllib.loads(args.drive.read_text()) if args.drive.is_file() else {}
    lists = args.corpus or [ROOT.parent / "shared" / "corpus" / "public.tsv", ROOT / "corpus" / "more.tsv"]
    rows = [row for lst in lists
            for row in csv.DictReader(lst.open(encoding="utf-8"), delimiter="\t", quoting=csv.QUOTE_NONE)]
    files: dict[tuple[str, str], None] = {}
    for i, row in enumerate(rows):
        text = source_text(args.sources, row["repo"], row["path"])
        if text is None:
            continue
        key = f"{row['repo'].split('@')[0]}/{row['path']}::{row['class']}"
        flags = ["--class", row["class"]]
        flags += [w for name in drives.get(key, {}).get("shared_names", []) for w in ("--shared", name)]
        transform(text, flags, args.out, f"r{i:03d}")
        if row["path"].endswith(".py"):
            files[(row["repo"], row["path"])] = None
    for j, (repo, path) in enumerate(sorted(files)):
        transform(source_text(args.sources, repo, path), [], args.out, f"f{j:03d}")
    print(f"{len(rows)} rows, {len(files)} whole files -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
