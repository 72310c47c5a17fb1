"""The generated harness's train step side by side with hand-written JAX, hand-batched BrainPy and the user's loop.

One SNN (64 inputs, H hidden LIF units, 10 outputs, surrogate spikes), a sequence input ``x[t]`` per
example (T steps), the sum of output spikes as the prediction, softmax cross-entropy, one SGD step:

- ``harness``: the ``train_step`` of the harness batchify generates for the single-example class,
  with its automatic microbatching (a large batch is split into chunks whose gradients a
  ``lax.scan`` accumulates inside the jitted step; the chunk size is printed);
  On one CPU device a large batch also runs as concurrent parts, one thread and one jitted
  execution each (``Harness(threads=None)``; the parts are printed);
- ``harness, threads=1``: the same harness as one execution (no parts);
- ``harness, microbatch=0``: the same harness never splitting the batch (one vmap over all of it,
  in parts where the automatic rule makes them);
- ``harness, unroll=True``: the same harness with its rollout's scan fully unrolled (opt-in),
  chunked by the unrolled rule (about 96 KiB of residuals per step);
- ``pure JAX``: the same model written directly in JAX, independently of the generated code,
  ``jit(value_and_grad(mean(vmap(loss))))`` with a ``lax.scan`` over the inputs;
- ``hand-batched BrainPy``: the same SNN written by hand for BrainPy's ``BatchingMode`` (Variables
  with a leading batch axis, ``batch_axis=0``, weights shared), trained with BrainPy's own tools:
  ``bm.for_loop`` over time, ``bm.grad`` of the batch mean, ``bp.optim.SGD``, all in one ``bm.jit``;
- ``per-example loop``: what a BrainPy user does without batchify, a Python loop over the examples
  of the batch through a jitted ``bm.grad`` of the original model, gradients averaged;
- ``harness, every core`` (only with ``--cores N``): the same harness sharding each batch over N XLA
  host devices (``XLA_FLAGS=--xla_force_host_platform_device_count=N``, set here before JAX starts),
  as ``fit`` does over ``jax.devices()``: a ``shard_map``, each device its own block of the batch,
  one gradient mean per step. Every other variant runs on one device. Compare a ``--cores`` run's
  per-example loop with a plain run's before reading its ratios: forcing host devices can slow
  single-device work in the same process (on the day of the README's table it did not: the loop
  cost 0.43-0.45 ms per example in both runs).
- ``parts, no collective`` and ``one part alone`` (only with ``--cores N``): the ceiling of data
  parallelism on this machine. Each device runs the one-device step on its own part of the batch
  (B/N examples), all dispatched together, with no gradient mean between them; and one such part
  on its own. Their ratio is what running N devices at once costs each of them (shared cores,
  memory bandwidth); the loop over the parts is the best any data-parallel step could do.

All the mean gradients are checked to agree first (1e-5 relative). Rounds are interleaved (every
variant once per round, each sample at least ~50 ms of back-to-back calls), so machine load hits all
alike (``--busy N`` adds N busy processes); a ratio is the median over rounds of that round's
ratio, and the harness's time the median of its samples.
Usage: python bench/side_by_side.py [--batches 1,8,64,256,1024] [--steps 50] [--cores N] [--busy N]
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


def _cores() -> int:
    """``--cores N`` (read before JAX starts: the host device count is fixed when it does)."""
    if "--cores" in sys.argv[1:-1]:
        return int(sys.argv[sys.argv.index("--cores") + 1])
    return 1


CORES = _cores()
if CORES > 1 and "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={CORES}").strip()

import brainpy as bp
import brainpy.math as bm
import jax
import jax.numpy as jnp
import numpy as np
import optax

from batchify import transform
from batchify.harness import HarnessOptions
from batchify.loader import load_generated, load_models

SOURCE = '''
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
LR = 1e-2


def surrogate_spike(v):
    """bm.surrogate.sigmoid(v, alpha=4): a Heaviside step forward, sigmoid'(4v) * 4 backward."""
    @jax.custom_jvp
    def spike(v):
        return (v >= 0).astype(v.dtype)

    @spike.defjvp
    def _(primals, tangents):
        (v,), (dv,) = primals, tangents
        sig = jax.nn.sigmoid(4.0 * v)
        return spike(v), dv * 4.0 * sig * (1.0 - sig)

    return spike(v)


def pure_jax_step(decay):
    def loss(params, x, y):
        def step(carry, x_t):
            v1, v2 = carry
            v1 = decay * v1 + x_t @ params["w_in"]
            s1 = surrogate_spike(v1 - 1.0)
            v1 = v1 * (1.0 - s1)
            v2 = decay * v2 + s1 @ params["w_out"]
            s2 = surrogate_spike(v2 - 1.0)
            return (v1, v2 * (1.0 - s2)), s2

        h, o = params["w_in"].shape[1], params["w_out"].shape[1]
        _, outs = jax.lax.scan(step, (jnp.zeros(h), jnp.zeros(o)), x)
        return optax.softmax_cross_entropy_with_integer_labels(outs.sum(0), y)

    @jax.jit
    def train_step(params, xs, ys):
        value, grads = jax.value_and_grad(lambda p: jnp.mean(jax.vmap(loss, in_axes=(None, 0, 0))(p, xs, ys)))(params)
        return jax.tree.map(lambda p, g: p - LR * g, params, grads), value, grads

    return train_step


class HandBatchedSNN(bp.DynamicalSystem):
    """The SNN written by hand for a batch, as BrainPy's BatchingMode has it: state Variables with a
    leading batch axis (``batch_axis=0``), weights shared by every example."""

    def __init__(self, w_in, w_out, batch_size, decay=0.9):
        super().__init__(mode=bm.BatchingMode(batch_size))
        self.n_hidden, self.n_out, self.decay = w_in.shape[1], w_out.shape[1], decay
        self.w_in = bm.TrainVar(w_in)
        self.w_out = bm.TrainVar(w_out)
        self.v1 = bm.Variable(bm.zeros((batch_size, self.n_hidden)), batch_axis=0)
        self.v2 = bm.Variable(bm.zeros((batch_size, self.n_out)), batch_axis=0)

    def reset_state(self, batch_size):
        self.v1.value = bm.zeros((batch_size, self.n_hidden))
        self.v2.value = bm.zeros((batch_size, self.n_out))

    def update(self, x):  # x: [B, n_in], one time step of every example
        self.v1.value = self.decay * self.v1 + x @ self.w_in
        s1 = bm.surrogate.sigmoid(self.v1 - 1.0, alpha=4.0)
        self.v1.value = self.v1 * (1.0 - s1)
        self.v2.value = self.decay * self.v2 + s1 @ self.w_out
        s2 = bm.surrogate.sigmoid(self.v2 - 1.0, alpha=4.0)
        self.v2.value = self.v2 * (1.0 - s2)
        return s2


def hand_batched_brainpy(w_in, w_out, batch):
    """``(grad, step)``: the batch mean's ``bm.grad`` and a ``bm.jit`` SGD step of ``HandBatchedSNN``."""
    net = HandBatchedSNN(w_in, w_out, batch)
    weights = {"w_in": net.w_in, "w_out": net.w_out}

    def loss(xs, ys):
        net.reset_state(xs.shape[0])
        outs = bm.for_loop(net.update, bm.swapaxes(xs, 0, 1))  # over time: [T, B, 10]
        return bm.mean(optax.softmax_cross_entropy_with_integer_labels(bm.as_jax(outs.sum(0)), ys))

    grad = bm.grad(loss, grad_vars=weights, return_value=True)
    optimizer = bp.optim.SGD(lr=LR, train_vars=weights)

    @bm.jit
    def step(xs, ys):
        grads, value = grad(xs, ys)
        optimizer.update(grads)
        return value

    return bm.jit(grad), step


def check(name, got, want):
    for key in ("w_in", "w_out"):
        w = np.asarray(getattr(want, key))
        np.testing.assert_allclose(np.asarray(got[key]), w, rtol=1e-5, atol=1e-6 * float(np.abs(w).max()),
                                   err_msg=f"{name}: {key}")


def timed(function, reps=1):
    """Seconds per call of ``function``, over ``reps`` calls back to back."""
    start = time.perf_counter()
    for _ in range(reps):
        jax.block_until_ready(function())
    return (time.perf_counter() - start) / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="1,8,64,256,1024")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--loop-limit", type=int, default=1024, help="largest batch the per-example loop runs")
    parser.add_argument("--cores", type=int, default=CORES, help="host devices for the every-core harness")
    parser.add_argument("--busy", type=int, default=0, help="processes kept busy (a Python spin loop each) "
                        "while the variants are timed: a machine that is doing something else too")
    args = parser.parse_args()
    # Started after JAX (never forked from it), stopped however the run ends.
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        run(args)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def run(args) -> None:
    folder = Path(tempfile.mkdtemp())
    (folder / "snn.py").write_text(SOURCE)
    text = transform(SOURCE.encode(), "snn.py", command="batchify", harness=HarnessOptions(readout="sum"))
    (folder / "snn_batched.py").write_text(text.text)
    original = load_models(folder / "snn.py").SNN
    generated = load_generated(folder / "snn_batched.py")
    pure = pure_jax_step(0.9)
    rows = []
    for batch in map(int, args.batches.split(",")):
        bm.random.seed(0)
        model = original(64, args.hidden, 10)
        batched = generated.SNNBatched.from_model(model, batch)
        one = jax.devices()[:1]
        harness = generated.SNNHarness(batched, optax.sgd(LR), devices=one)  # automatic microbatching
        single = generated.SNNHarness(batched, optax.sgd(LR), microbatch=0, devices=one)
        one_thread = generated.SNNHarness(batched, optax.sgd(LR), threads=1, devices=one)
        unrolled = generated.SNNHarness(batched, optax.sgd(LR), unroll=True, devices=one)
        spread = generated.SNNHarness(batched, optax.sgd(LR)) if len(jax.devices()) > 1 else None
        params = batched.params()
        opt_state = harness.optimizer.init(params)
        rng = np.random.default_rng(batch)
        xs = jnp.asarray((rng.random((batch, args.steps, 64)) < 0.2).astype(np.float32) * 1.5)
        ys = jnp.asarray(rng.integers(0, 10, batch).astype(np.int32))
        chunk, unroll, parts = harness.microbatch_plan(xs, ys)
        pure_params = {"w_in": params.w_in, "w_out": params.w_out}
        hand_grad, hand_step = hand_batched_brainpy(params.w_in, params.w_out, batch)
        weights = {"w_in": model.w_in, "w_out": model.w_out}

        def user_loss(x, y):
            model.reset_state()
            outs = bm.for_loop(model.update, x)
            return optax.softmax_cross_entropy_with_integer_labels(outs.sum(0), y)

        user_grad = bm.jit(bm.grad(user_loss, grad_vars=weights))

        def user_mean_grad():
            grads = [user_grad(xs[e], ys[e]) for e in range(batch)]
            return {k: sum(g[k] for g in grads) / batch for k in weights}

        def user_loop():
            mean = user_mean_grad()
            for k, v in weights.items():
                v.value = v.value - LR * mean[k]
            return mean

        run_loop = batch <= args.loop_limit
        # The same mean gradient, first: every variant against the harness's single vmap.
        _, want = jax.jit(single.value_and_grad)(params, xs, ys)
        check("harness (microbatched)", jax.jit(harness.microbatched_value_and_grad)(params, xs, ys)[1]._asdict(), want)
        check("harness, unroll=True", jax.jit(unrolled.microbatched_value_and_grad)(params, xs, ys)[1]._asdict(), want)
        for name, stepped in (("harness", harness), ("harness, threads=1", one_thread)):  # the step itself, in parts
            new = stepped.train_step(params, opt_state, xs, ys)[0]
            for key in ("w_in", "w_out"):
                np.testing.assert_allclose(np.asarray(getattr(new, key)),
                                           np.asarray(getattr(params, key) - LR * getattr(want, key)),
                                           rtol=1e-6, atol=1e-6, err_msg=f"{name} train_step: {key}")
        check("pure JAX", pure(pure_params, xs, ys)[2], want)
        check("hand-batched BrainPy", hand_grad(xs, ys)[0], want)
        if run_loop:
            check("per-example loop", user_mean_grad(), want)
        if spread is not None and batch % len(jax.devices()) == 0:
            spread_params = jax.device_put(params, spread.replicated)
            spread_opt = spread.optimizer.init(spread_params)
            spread_xs, spread_ys = spread.shard((xs, ys))
            check("harness, every core", jax.jit(spread.microbatched_value_and_grad)(
                spread_params, spread_xs, spread_ys)[1]._asdict(), want)
        else:
            spread = None
        # The ceiling of data parallelism on this machine: each device runs the one-device step on its
        # half of the batch, dispatched together, with no collective (nor a common update).
        halves = []
        if spread is not None:
            half = batch // len(jax.devices())
            for device, start in zip(jax.devices(), range(0, batch, half)):
                own = generated.SNNHarness(generated.SNNBatched.from_model(model, half), optax.sgd(LR), devices=[device])
                own_params = jax.device_put(params, device)
                halves.append((own, own_params, own.optimizer.init(own_params),
                               *jax.device_put((xs[start:start + half], ys[start:start + half]), device)))

        variants = {"harness": lambda: harness.train_step(params, opt_state, xs, ys),
                    "harness, threads=1": lambda: one_thread.train_step(params, opt_state, xs, ys),
                    "harness, microbatch=0": lambda: single.train_step(params, opt_state, xs, ys),
                    "harness, unroll=True": lambda: unrolled.train_step(params, opt_state, xs, ys),
                    "pure JAX": lambda: pure(pure_params, xs, ys),
                    "hand-batched BrainPy": lambda: hand_step(xs, ys)}
        if run_loop:
            variants["per-example loop"] = user_loop
        if spread is not None:
            variants["harness, every core"] = lambda: spread.train_step(spread_params, spread_opt, spread_xs, spread_ys)
            variants["parts, no collective"] = lambda: [own.train_step(*rest) for own, *rest in halves]
            variants["one part alone"] = lambda: halves[0][0].train_step(*halves[0][1:])
        for run in variants.values():  # compile
            timed(run)
        # Every sample lasts at least ~50 ms (one call, or as many as that takes for the harness), so a
        # sub-millisecond step is not timed by a single call's scheduling noise; the same for all variants.
        reps = max(1, round(0.05 / timed(variants["harness"], 3)))
        times = {name: [] for name in variants}
        for _ in range(args.rounds):  # interleaved rounds
            for name, run in variants.items():
                times[name].append(timed(run, reps))
        # Ratios are taken within each round, then their median: this machine's speed drifts between
        # rounds (a shared VM), and a ratio of two medians would mix a fast round's time with a slow one's.
        ratio = {(a, b): statistics.median(x / y for x, y in zip(times[a], times[b])) for a in times for b in times}
        rows.append((batch, chunk, unroll, parts, statistics.median(times["harness"]), ratio))
        print(f"B={batch:5d} chunk {chunk:4d} unroll {unroll:3d} parts {parts}  harness {statistics.median(times['harness']) * 1e3:8.2f} ms  "
              + "  ".join(f"{n} {ratio[n, 'harness']:.2f}x" for n in times if n != "harness"), flush=True)
    names = ["harness, threads=1", "harness, microbatch=0", "harness, unroll=True", "pure JAX", "hand-batched BrainPy", "per-example loop", "harness, every core"]
    print("\n| B | chunk (auto) | rollout (auto) | parts (auto) | harness train_step | "
          + " | ".join(f"{n} (time / harness)" for n in names) + " |")
    print("|---|---|---|---|---|" + "---|" * len(names))
    for batch, chunk, unroll, parts, harness_time, ratio in rows:
        cells = [f"{ratio[n, 'harness']:.2f}x" if (n, "harness") in ratio else "-" for n in names]
        shown = f"{chunk} ({batch // chunk} chunks)" if chunk < batch else f"{batch} (unsplit)"
        rollout = f"unrolled ({unroll} steps)" if unroll > 1 else "rolled"
        print(f"| {batch} | {shown} | {rollout} | {parts} | {harness_time * 1e3:.2f} ms | " + " | ".join(cells) + " |")
    both = ("per-example loop", "harness, every core")
    if any(both in ratio for *_, ratio in rows):
        print(f"\nper-example loop over the harness on every core ({len(jax.devices())} devices):")
        for batch, *_, ratio in rows:
            if both in ratio:
                print(f"  B = {batch}: {ratio[both]:.2f}x; the ceiling (each device the one-device step on its "
                      f"part, no collective): {ratio['per-example loop', 'parts, no collective']:.2f}x, those "
                      f"parts together taking {ratio['parts, no collective', 'one part alone']:.2f}x one part alone")

if __name__ == "__main__":
    main()
