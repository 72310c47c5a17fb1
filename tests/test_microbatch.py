"""Issue 15: gradient accumulation over microbatches inside the harness's jitted train step.

A chunked train step (``Harness.microbatched_value_and_grad``: a ``lax.scan`` over chunks, each
through the generated ``value_and_grad``) must give the loss, gradient and updated weights of the
single vmap over the whole batch: for an explicit and an automatic chunk size, for a random model
(whose examples draw the same numbers chunked), for a ``LossHarness`` on the user's own loss (its
per-example losses and aux back in the batch's order), and on two devices with the batch sharded.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import brainpy.math as bm
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from batchify import runtime as bfy
from batchify import transform
from batchify.harness import HarnessOptions
from batchify.loader import load_generated

ROOT = Path(__file__).resolve().parent.parent
SNN = '''
import brainpy as bp
import brainpy.math as bm
import numpy as np


class SNN(bp.DynamicalSystem):
    def __init__(self, n_in, n_hidden, n_out, decay=0.9):
        super().__init__()
        self.n_hidden, self.n_out, self.decay = n_hidden, n_out, decay
        self.w_in = bm.TrainVar(bm.random.normal(0.0, 1.5 / np.sqrt(n_in), (n_in, n_hidden)))
        self.w_out = bm.TrainVar(bm.random.normal(0.0, 2.0 / np.sqrt(n_hidden), (n_hidden, n_out)))
        self.v1 = bm.Variable(bm.zeros(n_hidden))
        self.v2 = bm.Variable(bm.zeros(n_out))

    def reset_state(self, batch_size=None):
        self.v1.value = bm.zeros(self.n_hidden)
        self.v2.value = bm.zeros(self.n_out)

    def update(self, x):
        self.v1.value = self.decay * self.v1 + x @ self.w_in
        s1 = bm.surrogate.sigmoid(self.v1 - 1.0, alpha=4.0)
        self.v1.value = self.v1 * (1.0 - s1)
        self.v2.value = self.decay * self.v2 + s1 @ self.w_out
        s2 = bm.surrogate.sigmoid(self.v2 - 1.0, alpha=4.0)
        self.v2.value = self.v2 * (1.0 - s2)
        return s2
'''
B, T = 24, 12


def generated(tmp_path: Path, source: str, name: str, **options):
    path = tmp_path / f"{name}.py"
    path.write_text(transform(source.encode(), f"{name}_src.py", command="batchify", **options).text)
    return load_generated(path, name)


@pytest.fixture(scope="module")
def snn(tmp_path_factory):
    return generated(tmp_path_factory.mktemp("snn"), SNN, "microbatch_snn", harness=HarnessOptions(readout="sum"))


def spikes(batch, steps=T, n_in=16, seed=0):
    rng = np.random.default_rng(seed)
    xs = jnp.asarray((rng.random((batch, steps, n_in)) < 0.3).astype(np.float32) * 2.0)
    return xs, jnp.asarray(rng.integers(0, 5, batch).astype(np.int32))


def close(got, want, what):
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * max(float(np.abs(w).max()), 1e-30), err_msg=what)


def one_step(harness, xs, ys, *key):
    params = harness.model.params()
    new, _, loss = harness.train_step(params, harness.optimizer.init(params), xs, ys, *key)
    return new, loss


def assert_same_step(chunked, single, xs, ys, *key):
    """Chunked and single-vmap steps: the same mean loss, mean gradient and Adam-updated weights."""
    size = chunked.microbatch_size(xs, ys, None, *key)
    assert 1 < xs.shape[0] // size, f"the step must really be chunked (chunk {size} of {xs.shape[0]})"
    assert single.microbatch_size(xs, ys, None, *key) == xs.shape[0]
    params = single.model.params()
    loss, grads = jax.jit(single.value_and_grad)(params, xs, ys, *key)
    assert min(float(jnp.abs(g).max()) for g in jax.tree.leaves(grads)) > 1e-4, "a zero gradient proves nothing"
    got_loss, got_grads = jax.jit(chunked.microbatched_value_and_grad)(params, xs, ys, *key)
    close(got_loss, loss, "mean loss")
    close(got_grads, grads, "mean gradient")
    new, step_loss = one_step(chunked, xs, ys, *key)
    want, want_loss = one_step(single, xs, ys, *key)
    close(step_loss, want_loss, "train_step loss")
    close(new, want, "updated weights")
    moved = max(float(jnp.abs(a - b).max()) for a, b in zip(jax.tree.leaves(want), jax.tree.leaves(params)))
    assert moved > 1e-5, "the step must change the weights"


def test_an_explicit_chunk_size_gives_the_single_vmaps_step(snn) -> None:
    bm.random.seed(0)
    batched = snn.SNNBatched(16, 32, 5, batch_size=1)
    xs, ys = spikes(B)
    chunked = snn.SNNHarness(batched, microbatch=6)
    assert chunked.microbatch_size(xs, ys) == 6
    assert_same_step(chunked, snn.SNNHarness(batched, microbatch=0), xs, ys)


def test_the_automatic_chunk_size_gives_the_single_vmaps_step(snn, monkeypatch) -> None:
    """A budget of 5 examples' residuals: the automatic rule picks 4 (the largest divisor of 24 up to 5)."""
    bm.random.seed(0)
    batched = snn.SNNBatched(16, 32, 5, batch_size=1)
    xs, ys = spikes(B)
    chunked = snn.SNNHarness(batched)
    monkeypatch.setattr(bfy, "CPU_MICROBATCH_BYTES", 5 * chunked.residual_bytes(xs, ys) + 1)
    assert chunked.microbatch_size(xs, ys) == 4
    assert_same_step(chunked, snn.SNNHarness(batched, microbatch=False), xs, ys)


def test_the_automatic_rule_splits_large_batches_only(snn) -> None:
    """The issue's SNN 64-256-10 at T = 50: rolled (the default), a batch is split into chunks of
    8 MiB of residuals (64 examples; 16 at T = 200; 16 MiB without remat); fully unrolled
    (``unroll=True``) into chunks of about 96 KiB of residuals per step (32 examples, the fastest
    measured unrolled on 2 cores); a batch with no divisor near the target is not split."""
    bm.random.seed(0)
    harness = snn.SNNHarness(snn.SNNBatched(64, 256, 10, batch_size=1))
    per_example = harness.residual_bytes(*spikes(2, 50, 64))
    assert 80_000 < per_example < 200_000, per_example  # T = 50 steps of H = 256 floats, about two of them kept
    unremat = snn.SNNHarness(harness.model, remat=False).residual_bytes(*spikes(2, 50, 64))
    assert unremat > 1.5 * per_example, (unremat, per_example)  # remat keeps the matrix products only
    assert 1.6 < harness.residual_bytes(*spikes(2, 100, 64)) / per_example < 2.4  # twice the steps, twice the residuals

    def plan(batch, steps=50, harness=harness):
        return tuple(harness.microbatch_plan(jnp.zeros((batch, steps, 64)), jnp.zeros(batch, jnp.int32)))[:2]

    assert [plan(b) for b in (1, 8, 16, 64)] == [(1, 1), (8, 1), (16, 1), (64, 1)]  # not split
    assert [plan(b) for b in (96, 256, 1024)] == [(48, 1), (64, 1), (64, 1)]  # 2, 4 and 16 chunks, rolled
    assert plan(1021) == (1021, 1)  # a prime: chunks of one example would be slower than one vmap
    assert [plan(b, 200) for b in (8, 64, 256)] == [(8, 1), (16, 1), (16, 1)]  # four times the steps: 8 MiB chunks
    unrematerialised = snn.SNNHarness(harness.model, remat=False)
    assert [plan(b, harness=unrematerialised) for b in (64, 256)] == [(64, 1), (64, 1)]  # 16 MiB chunks
    assert [plan(b, harness=snn.SNNHarness(harness.model, unroll=1)) for b in (96, 1024)] == [(48, 1), (64, 1)]
    unrolled = snn.SNNHarness(harness.model, unroll=True)
    assert [plan(b, harness=unrolled) for b in (8, 32)] == [(8, 50), (32, 50)]
    assert [plan(b, harness=unrolled) for b in (64, 96, 256, 1024)] == [(32, 50)] * 4  # the unrolled budget
    assert plan(1021, harness=unrolled) == (1021, 50)
    assert plan(256, 200, harness=unrolled) == (32, 200)  # a budget per step: the chunk of T = 50
    assert plan(1024, harness=snn.SNNHarness(harness.model, microbatch=0)) == (1024, 1)
    assert plan(1024, harness=snn.SNNHarness(harness.model, microbatch=0, unroll=5)) == (1024, 5)
    assert harness.microbatch_size(jnp.zeros((256, 50, 64)), jnp.zeros(256, jnp.int32)) == 64


def test_unroll_must_be_none_true_or_a_positive_int(snn) -> None:
    model = snn.SNNBatched(16, 32, 5, batch_size=1)
    for bad in (0, -2, 1.5, "full"):
        with pytest.raises(ValueError, match="unroll must be None"):
            snn.SNNHarness(model, unroll=bad)


def scan_unrolls(function, *args):
    """The ``unroll`` of every scan in ``function``'s jaxpr, nested ones included."""
    found = []

    def visit(jaxpr):
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "scan":
                found.append(eqn.params["unroll"])
            for value in eqn.params.values():
                for sub in value if isinstance(value, (tuple, list)) else (value,):
                    if hasattr(sub, "jaxpr"):
                        visit(sub.jaxpr if hasattr(sub.jaxpr, "eqns") else sub.jaxpr.jaxpr)
                    elif hasattr(sub, "eqns"):
                        visit(sub)

    visit(jax.make_jaxpr(function)(*args).jaxpr)
    return found


def test_the_unrolled_chunked_step_gives_the_rolled_single_vmaps_step(snn) -> None:
    """Unrolling changes how XLA runs the rollout, not what it computes: the unrolled, chunked train
    step gives the loss, gradient and weights of one rolled vmap over the whole batch, and its jaxpr
    really has the rollout's scan unrolled over all T steps (the rolled one: unroll 1)."""
    bm.random.seed(0)
    batched = snn.SNNBatched(16, 32, 5, batch_size=1)
    xs, ys = spikes(B)
    unrolled = snn.SNNHarness(batched, microbatch=6, unroll=True)
    rolled = snn.SNNHarness(batched, microbatch=0, unroll=1)
    params = batched.params()
    assert T in scan_unrolls(unrolled.microbatched_value_and_grad, params, xs, ys)
    assert set(scan_unrolls(rolled.microbatched_value_and_grad, params, xs, ys)) == {1}
    assert_same_step(unrolled, rolled, xs, ys)


def test_the_rollout_is_rolled_unless_unrolling_is_asked_for(snn) -> None:
    """The default rollout is rolled in the train step, ``per_example_grads`` and ``predict`` alike
    (an unrolled one was 1.2-1.8x slower whenever another process kept a core busy); ``unroll=True``
    unrolls all of them over the T steps."""
    bm.random.seed(0)
    batched = snn.SNNBatched(64, 256, 10, batch_size=1)
    xs, ys = spikes(32, 20, 64)
    params = batched.params()
    for unroll, want in ((None, {1}), (True, {20})):
        harness = snn.SNNHarness(batched, unroll=unroll)
        assert harness.microbatch_plan(xs, ys)[:2] == (32, max(want))
        assert set(scan_unrolls(harness.microbatched_value_and_grad, params, xs, ys)) == want
        assert set(scan_unrolls(harness.per_example_grads, params, xs, ys)) == want
        assert set(scan_unrolls(jax.vmap(harness.predict, in_axes=(None, 0)), params, xs)) == want


def test_an_explicit_chunk_size_must_divide_the_batch(snn) -> None:
    bm.random.seed(0)
    harness = snn.SNNHarness(snn.SNNBatched(16, 32, 5, batch_size=1), microbatch=5)
    xs, ys = spikes(B)
    with pytest.raises(ValueError, match="microbatch=5 must divide the batch size 24"):
        harness.train_step(harness.model.params(), harness.optimizer.init(harness.model.params()), xs, ys)
    with pytest.raises(ValueError, match="microbatch must be None"):
        snn.SNNHarness(harness.model, microbatch=-1)


def test_a_random_models_chunks_draw_the_numbers_of_the_whole_batch(tmp_path) -> None:
    """``noisy_lif`` (input dropout, membrane noise, random reset): example ``i`` draws from
    ``fold_in(key, i)`` chunked or not, so the chunked step equals the unchunked one."""
    module = generated(tmp_path, (ROOT / "examples" / "noisy_lif.py").read_text(), "microbatch_noisy",
                       harness=HarnessOptions(readout="sum"))
    bm.random.seed(0)
    batched = module.NoisyLIFBatched(16, 5, batch_size=1)
    xs, ys = spikes(B)
    key = jax.random.PRNGKey(3)
    single = module.NoisyLIFHarness(batched, microbatch=0)
    assert_same_step(module.NoisyLIFHarness(batched, microbatch=8), single, xs, ys, key)
    # The noise matters: another key gives another gradient, so equal keys were needed above.
    _, here = single.value_and_grad(batched.params(), xs, ys, key)
    _, there = single.value_and_grad(batched.params(), xs, ys, jax.random.PRNGKey(4))
    assert float(jnp.abs(here.w - there.w).max()) > 1e-3 * float(jnp.abs(here.w).max())


def test_a_loss_harness_chunked_gives_the_whole_batchs_losses_aux_and_gradient(tmp_path) -> None:
    """The seed script's own ``loss_fun`` returning ``(loss, acc)``: mean loss, each example's loss
    and accuracy in the batch's order, the gradient and the updated weights equal the single vmap's."""
    module = generated(tmp_path, (ROOT / "tests" / "cases" / "seed_script.py").read_text(), "microbatch_seed",
                       functions=["loss_fun"], harness=HarnessOptions())
    bm.random.seed(0)
    batched = module.RateSNNBatched(12, 20, 4, batch_size=1)
    chunked, single = module.RateSNNHarness(batched, microbatch=3), module.RateSNNHarness(batched, microbatch=0)
    rng = np.random.default_rng(1)
    xs = jnp.asarray((rng.random((B, 12)) * 1.5).astype(np.float32))
    ys = jnp.asarray(rng.integers(0, 4, (B, 1)).astype(np.int32))
    params = batched.params()
    (loss, (losses, accs)), grads = jax.jit(single.value_and_grad)(params, xs, ys)
    (got_loss, (got_losses, got_accs)), got_grads = jax.jit(chunked.microbatched_value_and_grad)(params, xs, ys)
    assert got_losses.shape == (B,) and len(set(np.round(np.asarray(losses), 4))) > 2  # different, so order counts
    close(got_loss, loss, "mean loss")
    close(got_losses, losses, "each example's loss")
    close(got_accs, accs, "each example's accuracy")
    close(got_grads, grads, "mean gradient")
    assert float(jnp.abs(grads.w1).max()) > 1e-4
    new, step_loss = one_step(chunked, xs, ys)
    want, want_loss = one_step(single, xs, ys)
    close(step_loss, want_loss, "train_step loss")
    close(new, want, "updated weights")


TWO_DEVICES = r'''
import os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
import brainpy.math as bm, jax, jax.numpy as jnp, numpy as np
sys.path.insert(0, sys.argv[1])
import test_microbatch as t
from batchify.loader import load_generated
from pathlib import Path

assert jax.device_count() == 2
module = t.generated(Path(sys.argv[2]), t.SNN, "microbatch_snn_2", harness=t.HarnessOptions(readout="sum"))
bm.random.seed(0)
batched = module.SNNBatched(16, 32, 5, batch_size=1)
chunked, single = module.SNNHarness(batched, microbatch=4), module.SNNHarness(batched, microbatch=0)
one = module.SNNHarness(batched, microbatch=0, devices=jax.devices()[:1])
assert chunked.mesh.devices.size == 2 and one.mesh.devices.size == 1
xs, ys = chunked.shard(t.spikes(t.B))
assert len(xs.sharding.device_set) == 2
t.assert_same_step(chunked, single, xs, ys)
t.assert_same_step(chunked, one, *t.spikes(t.B))  # sharded and chunked: what one device computes unsplit
# A random model: each device's examples draw their whole-batch keys (an offset per device), chunked or not.
noisy = t.generated(Path(sys.argv[2]), (t.ROOT / "examples" / "noisy_lif.py").read_text(), "microbatch_noisy_2",
                    harness=t.HarnessOptions(readout="sum"))
bm.random.seed(0)
noisy_batched = noisy.NoisyLIFBatched(16, 5, batch_size=1)
key = jax.random.PRNGKey(3)
noisy_one = noisy.NoisyLIFHarness(noisy_batched, microbatch=0, devices=jax.devices()[:1])
t.assert_same_step(noisy.NoisyLIFHarness(noisy_batched, microbatch=8), noisy_one, *t.spikes(t.B), key)
loss, grads = jax.jit(noisy_one.value_and_grad)(noisy_batched.params(), *t.spikes(t.B), key)
got_loss, got_grads = jax.jit(noisy.NoisyLIFHarness(noisy_batched, microbatch=0).microbatched_value_and_grad)(
    noisy_batched.params(), *t.spikes(t.B), key)  # sharded, unchunked
t.close(got_loss, loss, "sharded random model: mean loss")
t.close(got_grads, grads, "sharded random model: mean gradient")
# BrainPy's argument checks, traced unordered on the mesh, still run and raise.
from jax.sharding import PartitionSpec as P
def draws(p, key):
    return bm.random.bernoulli(p, key=key[0]).astype(jnp.float32)
with t.bfy._unordered_error_checks():
    checked = jax.jit(jax.shard_map(draws, mesh=chunked.mesh, in_specs=(P("batch"), P("batch")),
                                    out_specs=P("batch"), check_vma=False)).trace(
        jnp.full((2,), 0.5), jax.random.split(key, 2)).lower().compile()
checked(jnp.full((2,), 0.5), jax.random.split(key, 2)).block_until_ready()
try:
    checked(jnp.full((2,), 1.5), jax.random.split(key, 2)).block_until_ready()
    raise AssertionError("bernoulli(p=1.5) on two devices must raise BrainPy's check")
except Exception as e:
    assert "should be within [0, 1]" in str(e), str(e)[-500:]
# A LossHarness: each example's loss and aux come back in the batch's order from both devices.
seed = t.generated(Path(sys.argv[2]), (t.ROOT / "tests" / "cases" / "seed_script.py").read_text(), "microbatch_seed_2",
                   functions=["loss_fun"], harness=t.HarnessOptions())
bm.random.seed(0)
seed_batched = seed.RateSNNBatched(12, 20, 4, batch_size=1)
rng = np.random.default_rng(1)
sx = jnp.asarray((rng.random((t.B, 12)) * 1.5).astype(np.float32))
sy = jnp.asarray(rng.integers(0, 4, (t.B, 1)).astype(np.int32))
want = jax.jit(seed.RateSNNHarness(seed_batched, microbatch=0, devices=jax.devices()[:1]).value_and_grad)(
    seed_batched.params(), sx, sy)
got = jax.jit(seed.RateSNNHarness(seed_batched, microbatch=4).microbatched_value_and_grad)(seed_batched.params(), sx, sy)
assert len(set(np.round(np.asarray(want[0][1][0]), 4))) > 2  # different losses, so their order counts
t.close(got, want, "sharded LossHarness: mean loss, each example's loss and aux, gradient")
try:
    module.SNNHarness(batched, microbatch=3).microbatch_size(xs, ys)
    raise AssertionError("a chunk of 3 on 2 devices must be refused")
except ValueError as e:
    assert "multiple of the 2 devices" in str(e)
# An odd batch straight to train_step (fit checks its batch_size): batchify's message, not shard_map's.
odd_x, odd_y = t.spikes(t.B - 1)
auto = module.SNNHarness(batched)
for call in (lambda: auto.train_step(batched.params(), auto.optimizer.init(batched.params()), odd_x, odd_y),
             lambda: jax.jit(single.microbatched_value_and_grad)(batched.params(), odd_x, odd_y),
             lambda: single.shard((odd_x, odd_y))):
    try:
        call()
        raise AssertionError("an odd batch on 2 devices must be refused")
    except ValueError as e:
        assert f"batch of {t.B - 1} examples" in str(e) and "multiple of the 2 devices" in str(e), str(e)[-500:]
# Data-parallel: no device gathers another's inputs; the gradients are averaged, once per step.
params = batched.params()
hlo = jax.jit(chunked.train_step).lower(params, chunked.optimizer.init(params), xs, ys).compile().as_text()
assert "all-gather" not in hlo and "all-to-all" not in hlo, [l for l in hlo.splitlines() if "all-" in l][:5]
entry = hlo[hlo.index("ENTRY"):]
entry = entry[:entry.index("\n}")]
assert "all-reduce" in entry and hlo.count("all-reduce(") == entry.count("all-reduce("), "all-reduces inside a loop"
print("two devices: ok")
'''


def test_two_devices_chunk_the_sharded_batch(tmp_path) -> None:
    """Two forced host devices (a subprocess: the device count is fixed when jax starts): the chunked
    step equals the single vmap with the batch sharded, and no chunk gathers its inputs."""
    script = tmp_path / "two.py"
    script.write_text(TWO_DEVICES)
    result = subprocess.run([sys.executable, str(script), str(ROOT / "tests"), str(tmp_path)], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "two devices: ok" in result.stdout, (result.stdout + result.stderr)[-4000:]



def test_batched_grad_accumulates_microbatches_too(tmp_path) -> None:
    """``model.loss_fun_grad(xs, ys, microbatch=k)``: the gradient, losses, aux and the state left
    afterwards equal the single vmap's; a chunk that does not divide the batch is refused."""
    module = generated(tmp_path, (ROOT / "tests" / "cases" / "seed_script.py").read_text(), "microbatch_seed_grad",
                       functions=["loss_fun"])
    rng = np.random.default_rng(2)
    xs = (rng.random((B, 12)) * 1.5).astype(np.float32)
    ys = rng.integers(0, 4, (B, 1)).astype(np.int32)
    bm.random.seed(0)
    batched = module.RateSNNBatched(12, 20, 4, batch_size=B)
    want = batched.loss_fun_grad(xs, ys)
    want_state = batched.state()
    batched.reset_state()
    got = batched.loss_fun_grad(xs, ys, microbatch=4)
    assert len(set(np.round(np.asarray(want[1]), 4))) > 2  # different losses, so their order counts
    close(got, want, "grads, losses, accs")
    close(batched.state(), want_state, "the state after the loss")
    assert float(jnp.abs(want[0].w1).max()) > 1e-4
    with pytest.raises(ValueError, match="microbatch=5 must divide the batch size 24"):
        batched.loss_fun_grad(xs, ys, microbatch=5)


SHARED = '''
import brainpy as bp
import brainpy.math as bm


class Net(bp.DynamicalSystem):
    def __init__(self, n_in, n):
        super().__init__()
        self.w = bm.TrainVar(bm.random.normal(0.0, 1.0, (n_in, n)))
        self.h = bm.Variable(bm.zeros(n))
        self.trace = bm.Variable(bm.zeros(n))

    def update(self, x):
        self.h.value = bm.tanh(x @ self.w + 0.5 * self.h + 0.1 * self.trace)
        self.trace.value = 0.9 * self.trace + self.h
        return self.h


model = Net(3, 5)


def loss(x, y):
    model.update(x)
    out = model.update(x)
    return bp.losses.mean_squared_error(out, y), out
'''


def test_batched_grad_in_microbatches_with_a_variable_the_batch_shares(tmp_path) -> None:
    """``--shared trace=mean``: every chunk starts from the batch's one ``trace``, and the per-example
    updates of all chunks are reduced to one as the single vmap's are."""
    module = generated(tmp_path, SHARED, "microbatch_shared", functions=["loss"], shared=["trace=mean"])
    rng = np.random.default_rng(3)
    xs, ys = rng.random((B, 3)).astype(np.float32), rng.random((B, 5)).astype(np.float32)
    bm.random.seed(0)
    batched = module.NetBatched(3, 5, batch_size=B)
    batched.trace.value = jnp.linspace(0.0, 1.0, 5)
    assert batched.state_axes().trace is None
    start = batched.state()
    want = batched.loss_grad(xs, ys)
    want_state = batched.state()
    batched.set_state(start)
    got = batched.loss_grad(xs, ys, microbatch=6)
    close(got, want, "grads, losses, outputs")
    close(batched.state(), want_state, "the state after the loss, the shared trace reduced")
    assert float(jnp.abs(want_state.trace - start.trace).max()) > 1e-3  # the shared Variable did move


def test_the_rematerialised_rollout_gives_the_kept_rollouts_gradient(snn) -> None:
    """``remat=True`` (the default) recomputes each step's elementwise work in the backward pass: the
    same loss and gradient as keeping every residual, from a jaxpr that really holds the checkpoint."""
    bm.random.seed(0)
    batched = snn.SNNBatched(16, 32, 5, batch_size=1)
    xs, ys = spikes(B)
    remat, kept = snn.SNNHarness(batched, microbatch=0), snn.SNNHarness(batched, microbatch=0, remat=False)
    params = batched.params()
    assert "remat" in str(jax.make_jaxpr(remat.batch_loss)(params, xs, ys))
    assert "remat" not in str(jax.make_jaxpr(kept.batch_loss)(params, xs, ys))
    loss, grads = jax.jit(kept.value_and_grad)(params, xs, ys)
    assert min(float(jnp.abs(g).max()) for g in jax.tree.leaves(grads)) > 1e-4, "a zero gradient proves nothing"
    got_loss, got_grads = jax.jit(remat.value_and_grad)(params, xs, ys)
    close(got_loss, loss, "mean loss")
    close(got_grads, grads, "mean gradient")
