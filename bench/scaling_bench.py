"""How the transform's cost grows with the input, against a bare LibCST round trip of the same file.

    python bench/scaling_bench.py [--sizes 1000 10000 50000] [--kinds update classes methods]

For each kind of generated source and each size (in lines) it runs, as separate processes,
``batchify SRC -o OUT`` and ``python -c "libcst.parse_module(text).code"`` and prints CPU time
(user + system) and peak memory (max RSS) of each, their ratio, and how batchify's CPU time grows
from one size to the next, per doubling of the input.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

HEADER = "import brainpy as bp\nimport brainpy.math as bm\n\n"


def one_update(lines: int) -> str:
    """One model class whose update has about ``lines`` statements."""
    body = [f"        self.v{i % 8}.value = self.v{(i + 1) % 8} * 0.5 + x\n" for i in range(max(lines - 14, 1))]
    init = "".join(f"        self.v{k} = bm.Variable(bm.zeros(n))\n" for k in range(8))
    return (HEADER + "\nclass Big(bp.DynamicalSystem):\n    def __init__(self, n):\n        super().__init__()\n"
            + init + "\n    def update(self, x):\n" + "".join(body) + "        return self.v0.value\n")


def many_classes(lines: int) -> str:
    """Classes of about 100 lines each."""
    out = [HEADER]
    for c in range(max(lines // 100, 1)):
        out.append(f"\nclass M{c}(bp.DynamicalSystem):\n    def __init__(self, n):\n        super().__init__()\n"
                   f"        self.a = bm.Variable(bm.zeros(n))\n        self.b = bm.Variable(bm.zeros(n))\n\n"
                   "    def update(self, x):\n")
        out.extend("        self.a.value = self.b * 0.5 + x\n" if i % 2 else "        self.b.value = self.a + 1.0\n"
                   for i in range(92))
        out.append("        return self.a.value\n")
    return "".join(out)


def many_methods(lines: int) -> str:
    """One class with many small stateful methods (4 lines each)."""
    methods = "".join(f"\n    def step{m}(self, x):\n        self.a.value = self.a * 0.9 + x\n        return self.a.value\n"
                      for m in range(max(lines // 4, 1)))
    return (HEADER + "\nclass Wide(bp.DynamicalSystem):\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.a = bm.Variable(bm.zeros(n))\n" + methods)


KINDS = {"update": one_update, "classes": many_classes, "methods": many_methods}
ROUND_TRIP = "import sys, libcst; text = open(sys.argv[1]).read(); assert libcst.parse_module(text).code == text"


# Both run from bytecode, as installed packages do (see transform_bench.py).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

# Each measured process reports its own peak memory when it exits.
PEAK = ("import atexit, resource, sys; atexit.register(lambda: sys.stderr.write("
        "f'\\nPEAK {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n'))")


def measure(argv: list[str]) -> tuple[float, float]:
    """CPU seconds and peak MiB of one child process (``argv`` after the interpreter)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    code = argv[1] if argv[0] == "-c" else f"import runpy, sys; sys.argv = {['batchify', *argv[2:]]!r}; " \
        "runpy.run_module('batchify', run_name='__main__')"
    rest = argv[2:] if argv[0] == "-c" else []
    proc = subprocess.run([sys.executable, "-c", f"{PEAK}\n{code}", *rest], capture_output=True, text=True, env=ENV)
    if proc.returncode != 0:
        raise SystemExit(f"{argv}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    peak = int(proc.stderr.rsplit("PEAK ", 1)[1].split()[0])
    return cpu, peak / 1024.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000])
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=list(KINDS))
    args = parser.parse_args()
    print(f"{'kind':8} {'lines':>7} {'batchify s':>10} {'MiB':>7} {'libcst s':>9} {'MiB':>7} {'ratio':>6} {'x/doubling':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.kinds:
            previous = None
            for size in args.sizes:
                src = Path(tmp) / f"{kind}_{size}.py"
                src.write_text(KINDS[kind](size))
                lines = src.read_text().count("\n")
                ours, ours_mem = measure(["-m", "batchify", str(src), "-o", str(src.with_suffix(".out"))])
                base, base_mem = measure(["-c", ROUND_TRIP, str(src)])
                growth = ""
                if previous is not None:
                    doublings = math.log2(lines / previous[0])
                    growth = f"{(ours / previous[1]) ** (1 / doublings):.2f}"
                print(f"{kind:8} {lines:7d} {ours:10.2f} {ours_mem:7.0f} {base:9.2f} {base_mem:7.0f} "
                      f"{ours / base:6.2f} {growth:>10}", flush=True)
                previous = (lines, ours)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
