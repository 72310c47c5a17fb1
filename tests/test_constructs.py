"""Equivalence on models written to exercise each supported construct (tests/models/)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import brainpy.math as bm
import numpy as np
import pytest

from batchify.equivalence import Arg, check_equivalence
from batchify.loader import load_generated, load_models

MODELS = Path(__file__).resolve().parent / "models"

CASES = {
    # id: (file, class, constructor args, method, per-example input sizes, extra shared args)
    "cell": ("aliases_and_helpers", "Cell", (6,), "update", [6], ()),
    "cell-plain": ("aliases_and_helpers", "Cell", (6, "plain"), "update", [6], ()),
    "cell-gain": ("aliases_and_helpers", "Cell", (6,), "update", [6, None], (0.7,)),
    "derived": ("inherit_and_nest", "Derived", (4,), "update", [4], ()),
    "pop": ("inherit_and_nest", "Pop", (5,), "update", [5], ()),
    "circuit": ("inherit_and_nest", "Circuit", (4, 6), "update", [4], ()),
}


def generate(stem: str, tmp_path: Path) -> Path:
    out = tmp_path / f"{stem}_batched.py"
    subprocess.run([sys.executable, "-m", "batchify", str(MODELS / f"{stem}.py"), "-o", str(out)],
                   check=True, capture_output=True)
    return out


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("driver", ["eager", "for_loop"])
def test_construct_equivalence(case: str, driver: str, tmp_path: Path) -> None:
    stem, cls, init, method, sizes, scalars = CASES[case]
    original = getattr(load_models(MODELS / f"{stem}.py", f"orig_{stem}_{case}"), cls)
    batched = getattr(load_generated(generate(stem, tmp_path), f"gen_{stem}_{case}_{driver}"), f"{cls}Batched")
    rng = np.random.default_rng(1)
    steps, batch = 20, 4
    args = []
    scalar_iter = iter(scalars)
    for size in sizes:
        if size is None:
            value = next(scalar_iter)
            args.append(Arg(shared=lambda t, v=value: v))
        else:
            args.append(Arg(per_example=(rng.random((batch, steps, size)) * 3.0 - 0.5).astype(np.float32)))
    bm.random.seed(0)
    model = original(*init)
    report = check_equivalence(model, batched, method, args, batch=batch, steps=steps, driver=driver)
    assert report.ok, "\n".join(map(str, report.mismatches))
