"""Issues 11 and 20: a seeded fuzz run of the transform over grown and mutated models.

Every input ends in valid output (it compiles, every name it reads is bound, a second run gives
the same bytes) or in BFY diagnostics; never a traceback, a hang, or an internal error (BFY900).
``BATCHIFY_FUZZ_N=5000 pytest tests/test_fuzz.py`` runs a longer campaign.
"""

from __future__ import annotations

import os
import time

import pytest
from fuzz_models import inputs

from batchify import transform
from batchify.diagnostics import BatchifyError

COUNT = int(os.environ.get("BATCHIFY_FUZZ_N", "160"))
SEED = int(os.environ.get("BATCHIFY_FUZZ_SEED", "20261201"))


def run_one(text: str) -> tuple[str, object]:
    try:
        return "output", transform(text.encode(), "model.py", command="batchify model.py -o out.py").text
    except BatchifyError as exc:
        return "diagnostics", exc.diagnostics


def test_every_input_ends_in_valid_output_or_a_diagnostic() -> None:
    outcomes = {"output": 0, "diagnostics": 0}
    problems = []
    slowest = 0.0
    for name, text in inputs(SEED, COUNT):
        start = time.perf_counter()
        try:
            kind, value = run_one(text)
        except Exception as exc:  # noqa: BLE001 - what the test is for
            problems.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        elapsed = time.perf_counter() - start
        slowest = max(slowest, elapsed)
        if elapsed > 5.0:
            problems.append(f"{name}: took {elapsed:.1f} s")
        outcomes[kind] += 1
        if kind == "diagnostics":
            internal = [d for d in value if d.code == "BFY900"]
            if internal:
                problems.append(f"{name}: {internal[0].format()}")
            continue
        compile(value, name, "exec")
        again = run_one(text)
        if again != (kind, value):
            problems.append(f"{name}: a second run differs")
    print(f"fuzz: {COUNT} inputs, {outcomes['output']} outputs, {outcomes['diagnostics']} refused, "
          f"slowest {slowest:.2f} s")
    assert not problems, "\n".join(problems[:20])
    assert outcomes["output"] > COUNT // 10 and outcomes["diagnostics"] > COUNT // 10  # both paths exercised


@pytest.mark.parametrize("seed", range(3))
def test_the_generator_is_deterministic(seed: int) -> None:
    assert list(inputs(seed, 6)) == list(inputs(seed, 6))
