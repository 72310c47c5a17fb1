"""Issue 16, must-show 2: a fit stopped after k epochs and resumed from its checkpoint ends where an
uninterrupted run ends, for a deterministic and for a random model; a checkpoint of another model
says which weight does not fit; the per-epoch history is written as CSV or JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import brainpy.math as bm
import jax
import numpy as np
import pytest
from example_specs import EXAMPLES, ROOT, SPECS

from batchify import runtime
from batchify.loader import load_generated, load_models

FLAGS = {"two_layer_net": ["--readout", "mean"], "noisy_lif": ["--readout", "sum"]}  # deterministic, random
BATCH, STEPS, N = 4, 8, 16


def harness_module(stem: str, tmp_path: Path):
    out = tmp_path / f"{stem}_ckpt.py"
    subprocess.run([sys.executable, "-m", "batchify", str(EXAMPLES / f"{stem}.py"), "-o", str(out), "--harness",
                    *FLAGS[stem]], check=True, cwd=ROOT)
    return load_generated(out, f"ckpt_{stem}_{tmp_path.name}")


def fresh(stem: str, module):
    spec = next(s for s in SPECS if s.stem == stem)
    original = getattr(load_models(spec.source, f"ckpt_orig_{stem}"), spec.cls)
    bm.random.seed(0)
    batched = getattr(module, f"{spec.cls}Batched").from_model(original(*spec.init), BATCH)
    harness = getattr(module, f"{spec.cls}Harness")(batched, steps=STEPS)
    rng = np.random.default_rng(1)
    xs = (rng.random((N, STEPS, spec.n_in)) * spec.scale).astype(np.float32)
    ys = rng.integers(0, 2, N).astype(np.int32)
    return harness, xs, ys


def leaves(params):
    return [np.asarray(leaf) for leaf in jax.tree.leaves(params)]


@pytest.mark.parametrize("stem", sorted(FLAGS))
def test_a_stopped_and_resumed_fit_ends_where_an_uninterrupted_one_ends(stem, tmp_path) -> None:
    module = harness_module(stem, tmp_path)
    harness, xs, ys = fresh(stem, module)
    assert harness.random == (stem == "noisy_lif")
    straight, history = harness.fit(xs, ys, epochs=4, batch_size=BATCH, progress=False, seed=3)
    harness, _, _ = fresh(stem, module)
    folder = tmp_path / "ckpt"
    harness.fit(xs, ys, epochs=2, batch_size=BATCH, progress=False, seed=3, checkpoint=folder)  # stopped
    harness, _, _ = fresh(stem, module)  # a new process would start from scratch like this
    resumed, resumed_history = harness.fit(xs, ys, epochs=4, batch_size=BATCH, progress=False, seed=3,
                                           checkpoint=folder, history_file=tmp_path / "history.json")
    for want, got in zip(leaves(straight), leaves(resumed)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert not np.allclose(leaves(straight)[0], leaves(fresh(stem, module)[0].model.params())[0])  # it trained
    np.testing.assert_allclose(resumed_history["loss"], history["loss"], rtol=1e-6)
    assert json.loads((tmp_path / "history.json").read_text())["loss"] == resumed_history["loss"]


def test_a_checkpoint_of_another_model_says_which_weight_does_not_fit(tmp_path) -> None:
    module = harness_module("two_layer_net", tmp_path)
    harness, xs, ys = fresh("two_layer_net", module)
    harness.fit(xs, ys, epochs=1, batch_size=BATCH, progress=False, checkpoint=tmp_path / "ckpt")
    other = harness_module("noisy_lif", tmp_path)
    harness, xs, ys = fresh("noisy_lif", other)
    with pytest.raises(ValueError, match=r"is of another model: weight '"):
        harness.fit(xs, ys, epochs=2, batch_size=BATCH, progress=False, checkpoint=tmp_path / "ckpt")


def test_history_as_csv(tmp_path) -> None:
    history = {"loss": [1.0, 0.5], "eval_loss": [], "eval_accuracy": []}
    runtime.write_history(tmp_path / "h.csv", history)
    assert (tmp_path / "h.csv").read_text() == "epoch,loss\n1,1.0\n2,0.5\n"


def test_a_save_cut_short_leaves_the_previous_checkpoint_usable(tmp_path) -> None:
    """Orbax writes a step into a temporary folder and renames it when complete: a process killed
    while saving epoch 3 leaves such a folder behind, and the next fit resumes from epoch 2."""
    module = harness_module("two_layer_net", tmp_path)
    harness, xs, ys = fresh("two_layer_net", module)
    folder = tmp_path / "ckpt"
    harness.fit(xs, ys, epochs=2, batch_size=BATCH, progress=False, checkpoint=folder)
    (folder / "3.orbax-checkpoint-tmp-1234567").mkdir()  # what a kill during the third save leaves
    (folder / "3.orbax-checkpoint-tmp-1234567" / "partial").write_bytes(b"\0" * 10)
    assert runtime.Checkpoints(folder).latest() == 2
    harness, _, _ = fresh("two_layer_net", module)
    params, history = harness.fit(xs, ys, epochs=3, batch_size=BATCH, progress=False, checkpoint=folder)
    assert len(history["loss"]) == 3 and runtime.Checkpoints(folder).latest() == 3
