"""How to drive each bundled example: constructor arguments, stepping method, inputs.

Shared by the equivalence tests and the benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


@dataclass(frozen=True)
class Spec:
    stem: str  # examples/<stem>.py
    cls: str
    init: tuple
    method: str
    n_in: int
    scale: float = 1.0
    shared_time_index: bool = False  # first argument is the step index, shared by the batch
    shared: tuple[str, ...] = ()
    steps: int = 25

    @property
    def source(self) -> Path:
        return EXAMPLES / f"{self.stem}.py"

    @property
    def generated(self) -> Path:
        return EXAMPLES / f"{self.stem}_batched.py"

    def inputs(self, batch: int, seed: int = 0) -> np.ndarray:
        rng = np.random.default_rng(seed)
        return (rng.random((batch, self.steps, self.n_in)) * self.scale).astype(np.float32)


SPECS = [
    Spec("spiking_classifier", "SpikingClassifier", (64, 32, 10), "step_run", 64, scale=1.0,
         shared_time_index=True, shared=("i",)),
    Spec("lif_population", "LIFPopulation", (40,), "update", 40, scale=400.0, steps=60),
    Spec("rate_rnn", "RateRNN", (3, 16, 2), "update", 3, scale=2.0),
    Spec("two_layer_net", "TwoLayerNet", (5, 12, 3), "update", 5, scale=2.0),
    Spec("noisy_lif", "NoisyLIF", (6, 10), "update", 6, scale=3.0, steps=30),
]
