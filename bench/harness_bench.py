"""The generated harness against what the user had, in one run.

1. Speed at batch 64: the seed question's fallback (a Python loop over the examples of a batch,
   each through a jitted ``bm.grad`` of the single-example model, gradients averaged, then the
   optimizer) against the harness's jitted ``train_step`` (vmap of the pure step, one call).
   Both start from the same weights; their first-step gradients are compared.
2. Peak memory of the mean-gradient path (``value_and_grad``: grad of the vmapped mean) against the
   per-example path (``per_example_grads``: vmap of grad), from XLA's buffer assignment of the
   compiled functions, at a batch and width where the difference shows.

Usage: python bench/harness_bench.py [--batch 64] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import brainpy.math as bm
import jax
import jax.numpy as jnp
import numpy as np
import optax

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

from spiking_classifier import SpikingClassifier  # noqa: E402
from spiking_classifier_batched import SpikingClassifierBatched, SpikingClassifierHarness  # noqa: E402

STEPS = 25


def user_loop_setup(model):
    """The single-example training step the user could write: jitted bm.grad per example."""
    weights = model.train_vars(method="relative")
    names = sorted(weights)

    def loss(x, y):
        model.reset_state()
        counts = bm.for_loop(lambda i: model.step_run(i, x), jnp.arange(STEPS)).sum(0)
        return optax.softmax_cross_entropy_with_integer_labels(counts, y)

    grad = bm.jit(bm.grad(loss, grad_vars=[weights[n] for n in names]))
    return names, grad


def timed(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    xs = rng.random((args.batch, 64)).astype(np.float32)
    ys = rng.integers(0, 10, args.batch).astype(np.int32)

    bm.random.seed(0)
    model = SpikingClassifier(64, 128, 10)
    harness = SpikingClassifierHarness(SpikingClassifierBatched.from_model(model, args.batch), steps=STEPS)
    names, grad = user_loop_setup(model)
    params = harness.model.params()

    # First-step gradients: the loop over the original against the harness.
    loop_grads = [np.mean([np.asarray(grad(xs[e], ys[e])[i]) for e in range(args.batch)], axis=0)
                  for i in range(len(names))]
    _, harness_grads = jax.jit(harness.value_and_grad)(params, jnp.asarray(xs), jnp.asarray(ys))
    diff = max(float(np.abs(np.asarray(getattr(harness_grads, n)) - g).max()) for n, g in zip(names, loop_grads))
    print(f"first-step mean gradients, loop vs harness: max abs difference {diff:.2e}")

    optimizer = optax.adam(1e-3)
    opt_state = optimizer.init(params)

    def loop_step():
        per = [grad(xs[e], ys[e]) for e in range(args.batch)]
        mean = [sum(g[i] for g in per) / args.batch for i in range(len(names))]
        updates, _ = optimizer.update(type(params)(*mean), opt_state, params)
        jax.block_until_ready(optax.apply_updates(params, updates))

    def harness_step():
        jax.block_until_ready(harness.train_step(params, opt_state, jnp.asarray(xs), jnp.asarray(ys)))

    t_loop = timed(loop_step, args.repeat)
    t_harness = timed(harness_step, args.repeat)
    print(f"train step at batch {args.batch}: per-example loop {t_loop * 1e3:.1f} ms, "
          f"harness {t_harness * 1e3:.2f} ms, speed-up {t_loop / t_harness:.0f}x")

    # Peak memory: mean-gradient path against per-example path.
    batch, hidden = 256, 512
    bm.random.seed(0)
    wide = SpikingClassifier(64, hidden, 10)
    wide_harness = SpikingClassifierHarness(SpikingClassifierBatched.from_model(wide, batch), steps=STEPS)
    p = wide_harness.model.params()
    x = jnp.asarray(np.random.default_rng(1).random((batch, 64)).astype(np.float32))
    y = jnp.asarray(np.random.default_rng(2).integers(0, 10, batch).astype(np.int32))
    n_weights = sum(int(np.prod(a.shape)) for a in jax.tree.leaves(p))
    print(f"peak memory at batch {batch}, {n_weights} weights (XLA buffer assignment, arguments + outputs + temporaries):")
    for name, fn in (("value_and_grad (mean)", wide_harness.value_and_grad),
                     ("per_example_grads", wide_harness.per_example_grads)):
        stats = jax.jit(fn).lower(p, x, y).compile().memory_analysis()
        peak = stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes
        print(f"  {name:22} outputs {stats.output_size_in_bytes / 2**20:7.2f} MiB, "
              f"temporaries {stats.temp_size_in_bytes / 2**20:7.2f} MiB, peak {peak / 2**20:7.2f} MiB")


if __name__ == "__main__":
    main()
