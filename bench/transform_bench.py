"""batchify's cost against a bare LibCST round trip of the same file, measured in one run.

For each bundled example:
  command ratio   = `python -m batchify SRC -o OUT` wall time
                    / `python -c "parse_module(SRC).code"` wall time   (both whole processes)
  in-process ratio = batchify.transform(SRC) / libcst.parse_module(SRC).code   (both warm)
Whole processes run in turn (batchify, LibCST, batchify, ...), from bytecode as installed packages
are; the command ratio is the median of the pairs' ratios. Medians over --repeat runs.
Usage: python bench/transform_bench.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import libcst

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from batchify import transform  # noqa: E402

EXAMPLES = [p for p in sorted((ROOT / "examples").glob("*.py")) if not p.stem.endswith("_batched")]
BARE = "import libcst, sys; libcst.parse_module(open(sys.argv[1], encoding='utf-8').read()).code"


def options(path: Path) -> list[str]:
    """The options of the regeneration command in the committed output's header (after SRC -o OUT)."""
    header = (path.with_name(f"{path.stem}_batched.py")).read_text().splitlines()[1].split()
    return header[6:]


def transform_options(path: Path) -> dict:
    """The same options, as transform() keywords."""
    from batchify.cli import build_parser, harness_options

    args = build_parser().parse_args([str(path), *options(path)])
    return {"shared": args.shared, "harness": harness_options(args)}


# As installed packages run: from their bytecode (pip compiles it at install; a checkout writes it on
# the first run). With PYTHONDONTWRITEBYTECODE set, batchify would compile its sources every run
# while LibCST's are compiled: 50 ms of the difference that is not batchify's.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_once(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=ENV)
    return time.perf_counter() - start


def paired(cmd: list[str], bare: list[str], repeat: int) -> tuple[float, float, float]:
    """Median wall times of ``cmd`` and ``bare`` run in turn (A B A B ...), and the median of the
    ratios pair by pair: pairing keeps the ratio meaningful while the machine's speed drifts."""
    run_once(cmd), run_once(bare)  # warm-up: bytecode written, files in the page cache
    a, b = [], []
    for _ in range(repeat):
        a.append(run_once(cmd))
        b.append(run_once(bare))
    return statistics.median(a), statistics.median(b), statistics.median(x / y for x, y in zip(a, b))


def warm(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    print(f"{'example':24} {'lines':>5} {'batchify':>9} {'bare':>7} {'ratio':>6} | {'transform':>9} {'parse+code':>10} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for src in EXAMPLES:
            out = Path(tmp) / f"{src.stem}_batched.py"
            cmd = [sys.executable, "-m", "batchify", str(src), "-o", str(out), *options(src)]
            t_cmd, t_bare, ratio = paired(cmd, [sys.executable, "-c", BARE, str(src)], repeat)
            data = src.read_bytes()
            text = data.decode()
            t_tr = warm(lambda: transform(data, src.name, command="batchify", **transform_options(src)), repeat)
            t_cst = warm(lambda: libcst.parse_module(text).code, repeat)
            print(f"{src.stem:24} {text.count(chr(10)):5d} {t_cmd*1e3:7.0f}ms {t_bare*1e3:5.0f}ms {ratio:6.2f} | "
                  f"{t_tr*1e3:7.1f}ms {t_cst*1e3:8.1f}ms {t_tr/t_cst:6.2f}")


if __name__ == "__main__":
    main()
