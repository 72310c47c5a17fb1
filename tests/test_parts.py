"""Issue 15: on one CPU device, ``train_step`` runs a large batch as concurrent parts (threads).

Each part's mean loss and gradient is its own jitted execution on its own thread and one more
jitted call averages them: the step must be the one-execution step (loss, updated weights) for the
plain SNN chunked and unsplit, for a random model (each part's examples draw their whole-batch
keys), for a ``LossHarness``, for a model of BrainPy built-ins (library code, traced by two threads
at once), and inside the caller's own ``jax.jit``; the parts must really run on two threads.
"""

from __future__ import annotations

import threading
from pathlib import Path

import brainpy.math as bm
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from batchify import runtime as bfy
from batchify.harness import HarnessOptions

from test_microbatch import B, ROOT, SNN, close, generated, spikes


@pytest.fixture(scope="module")
def snn(tmp_path_factory):
    return generated(tmp_path_factory.mktemp("snn"), SNN, "parts_snn", harness=HarnessOptions(readout="sum"))


def step(harness, xs, ys, *key):
    params = harness.model.params()
    new, _, loss = harness.train_step(params, harness.optimizer.init(params), xs, ys, *key)
    return new, loss


def assert_same_step_in_parts(parted, single, xs, ys, *key, parts=2):
    """``parted`` runs ``parts`` parts, each on its own thread; ``single`` one execution: the same step."""
    assert parted.microbatch_plan(xs, ys, None, *key).parts == parts
    assert single.microbatch_plan(xs, ys, None, *key).parts == 1
    threads = set()
    run_part = parted._run_part

    def recorded(part, *args):
        threads.add((part, threading.current_thread().name))
        return run_part(part, *args)

    parted._run_part = recorded
    new, loss = step(parted, xs, ys, *key)
    want, want_loss = step(single, xs, ys, *key)
    assert len({name for _, name in threads}) == parts and {p for p, _ in threads} == set(range(parts)), threads
    close(loss, want_loss, "train_step loss")
    close(new, want, "updated weights")
    moved = max(float(jnp.abs(a - b).max()) for a, b in zip(jax.tree.leaves(want), jax.tree.leaves(single.model.params())))
    assert moved > 1e-5, "the step must change the weights"


def test_parts_give_the_one_execution_step(snn) -> None:
    bm.random.seed(0)
    batched = snn.SNNBatched(16, 32, 5, batch_size=1)
    xs, ys = spikes(B)
    single = snn.SNNHarness(batched, microbatch=0, threads=1)
    # Four chunks of 6, two parts of two chunks each; an unsplit batch, two blocks of 12.
    assert_same_step_in_parts(snn.SNNHarness(batched, microbatch=6, threads=2), single, xs, ys)
    assert_same_step_in_parts(snn.SNNHarness(batched, microbatch=0, threads=2), single, xs, ys)
    assert_same_step_in_parts(snn.SNNHarness(batched, microbatch=0, threads=3), single, xs, ys, parts=3)


def test_inside_the_callers_jit_the_step_is_one_program(snn) -> None:
    bm.random.seed(0)
    batched = snn.SNNBatched(16, 32, 5, batch_size=1)
    xs, ys = spikes(B)
    parted, single = snn.SNNHarness(batched, threads=2), snn.SNNHarness(batched, threads=1)
    params = batched.params()
    got = jax.jit(parted.train_step)(params, parted.optimizer.init(params), xs, ys)
    close(got, single.train_step(params, single.optimizer.init(params), xs, ys), "jitted step")


def test_a_random_models_parts_draw_the_numbers_of_the_whole_batch(tmp_path: Path) -> None:
    module = generated(tmp_path, (ROOT / "examples" / "noisy_lif.py").read_text(), "parts_noisy",
                       harness=HarnessOptions(readout="sum"))
    bm.random.seed(0)
    batched = module.NoisyLIFBatched(16, 5, batch_size=1)
    xs, ys = spikes(B)
    key = jax.random.PRNGKey(3)
    single = module.NoisyLIFHarness(batched, microbatch=0, threads=1)
    assert_same_step_in_parts(module.NoisyLIFHarness(batched, microbatch=4, threads=2), single, xs, ys, key)


def test_a_loss_harness_in_parts(tmp_path: Path) -> None:
    module = generated(tmp_path, (ROOT / "tests" / "cases" / "seed_script.py").read_text(), "parts_seed",
                       functions=["loss_fun"], harness=HarnessOptions())
    bm.random.seed(0)
    batched = module.RateSNNBatched(12, 20, 4, batch_size=1)
    rng = np.random.default_rng(1)
    xs = jnp.asarray((rng.random((B, 12)) * 1.5).astype(np.float32))
    ys = jnp.asarray(rng.integers(0, 4, (B, 1)).astype(np.int32))
    assert_same_step_in_parts(module.RateSNNHarness(batched, microbatch=3, threads=2),
                              module.RateSNNHarness(batched, microbatch=0, threads=1), xs, ys)


def test_built_ins_traced_by_two_threads_at_once(tmp_path: Path) -> None:
    """bp.dnn.Dense and bp.dyn.LifRef run as BrainPy's own code, which sets the model's Variables
    while it is traced: both parts are traced at once, on two threads, on the first call."""
    module = generated(tmp_path, (ROOT / "tests" / "models" / "builtin_children.py").read_text(), "parts_dense_lif",
                       classes=["DenseLif"], harness=HarnessOptions(steps=3, input="constant", readout="mean", loss="mse"))
    bm.random.seed(0)
    batched = module.DenseLifBatched(3, 5, batch_size=1)
    rng = np.random.default_rng(7)
    xs = jnp.asarray(rng.random((8, 3)).astype(np.float32))
    ys = jnp.asarray(rng.random((8, 5)).astype(np.float32) - 60.0)
    key = (jax.random.PRNGKey(0),) if module.DenseLifHarness.random else ()
    assert_same_step_in_parts(module.DenseLifHarness(batched, microbatch=0, threads=2),
                              module.DenseLifHarness(batched, microbatch=0, threads=1), xs, ys, *key)


def test_the_automatic_parts(snn, monkeypatch) -> None:
    """The issue's SNN 64-256-10 at T = 50: as many parts as usable cores, each a whole number of
    chunks of at least 2 MiB of residuals (18 examples); an unrolled rollout, ``threads=1`` or a
    batch too small for two parts: one."""
    bm.random.seed(0)
    harness = snn.SNNHarness(snn.SNNBatched(64, 256, 10, batch_size=1))
    per_example = harness.residual_bytes(*spikes(2, 50, 64))
    assert 17 < bfy.CPU_PART_BYTES / per_example < 18, per_example  # a part: 18 examples or more

    def parts(batch, harness=harness):
        return harness.microbatch_plan(jnp.zeros((batch, 50, 64)), jnp.zeros(batch, jnp.int32)).parts

    monkeypatch.setattr(bfy, "usable_cores", lambda: 2)
    assert [parts(b) for b in (1, 8, 16, 34, 36, 64, 96, 256, 1024, 1021)] == [1, 1, 1, 1, 2, 2, 2, 2, 2, 1]
    monkeypatch.setattr(bfy, "usable_cores", lambda: 4)
    assert [parts(b) for b in (36, 54, 64, 72, 96, 256, 1024)] == [2, 3, 2, 2, 2, 4, 4]  # 72, 96: two chunks
    monkeypatch.setattr(bfy, "usable_cores", lambda: 64)
    assert parts(1024) == bfy.CPU_MAX_PARTS  # 16 chunks: at most 8 parts
    assert parts(1024, snn.SNNHarness(harness.model, unroll=True)) == 1
    assert parts(1024, snn.SNNHarness(harness.model, threads=1)) == 1
    assert parts(8, snn.SNNHarness(harness.model, threads=2)) == 2  # asked for: whatever the size
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="threads must be None"):
            snn.SNNHarness(harness.model, threads=bad)
