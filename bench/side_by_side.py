"""The generated harness's train step side by side with hand-written JAX and with the user's loop.

One SNN (64 inputs, H hidden LIF units, 10 outputs, surrogate spikes), a sequence input ``x[t]`` per
example (T steps), the sum of output spikes as the prediction, softmax cross-entropy, one SGD step:

- ``harness``: the ``train_step`` of the harness batchify generates for the single-example class;
- ``pure JAX``: the same model written directly in JAX, independently of the generated code,
  ``jit(value_and_grad(mean(vmap(loss))))`` with a ``lax.scan`` over the inputs;
- ``per-example loop``: what a BrainPy user does without batchify, a Python loop over the examples
  of the batch through a jitted ``bm.grad`` of the original model, gradients averaged.

The three mean gradients are checked to agree first (1e-5 relative). Times are medians of
interleaved rounds (every variant once per round), so machine load hits all alike; the table gives
ratios to the harness. Usage: python bench/side_by_side.py [--batches 1,8,64,256,1024] [--steps 50]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

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


def timed(function, *args):
    start = time.perf_counter()
    jax.block_until_ready(function(*args))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="1,8,64,256,1024")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--loop-limit", type=int, default=256, help="largest batch the per-example loop runs")
    args = parser.parse_args()
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
        harness = generated.SNNHarness(batched, optax.sgd(LR))
        params = batched.params()
        opt_state = harness.optimizer.init(params)
        rng = np.random.default_rng(batch)
        xs = jnp.asarray((rng.random((batch, args.steps, 64)) < 0.2).astype(np.float32) * 1.5)
        ys = jnp.asarray(rng.integers(0, 10, batch).astype(np.int32))
        pure_params = {"w_in": params.w_in, "w_out": params.w_out}
        # The same mean gradient, first.
        _, want = harness.value_and_grad(params, xs, ys)
        _, _, got = pure(pure_params, xs, ys)
        for name in ("w_in", "w_out"):
            np.testing.assert_allclose(np.asarray(got[name]), np.asarray(getattr(want, name)), rtol=1e-5,
                                       atol=1e-6 * float(jnp.abs(getattr(want, name)).max()))
        weights = {"w_in": model.w_in, "w_out": model.w_out}

        def user_loss(x, y):
            model.reset_state()
            outs = bm.for_loop(model.update, x)
            return optax.softmax_cross_entropy_with_integer_labels(outs.sum(0), y)

        user_grad = bm.jit(bm.grad(user_loss, grad_vars=weights))

        def user_loop():
            grads = [user_grad(xs[e], ys[e]) for e in range(batch)]
            mean = {k: sum(g[k] for g in grads) / batch for k in weights}
            for k, v in weights.items():
                v.value = v.value - LR * mean[k]
            return mean

        variants = {"harness": lambda: harness.train_step(params, opt_state, xs, ys),
                    "pure JAX": lambda: pure(pure_params, xs, ys)}
        if batch <= args.loop_limit:
            variants["per-example loop"] = user_loop
        for run in variants.values():  # compile
            timed(run)
        times = {name: [] for name in variants}
        for _ in range(args.rounds):  # interleaved rounds
            for name, run in variants.items():
                times[name].append(timed(run))
        median = {name: statistics.median(t) for name, t in times.items()}
        rows.append((batch, median))
        print(f"B={batch:5d}  harness {median['harness'] * 1e3:8.2f} ms  "
              + "  ".join(f"{n} {median[n] / median['harness']:.2f}x" for n in median if n != "harness"), flush=True)
    print("\n| B | harness train_step | pure JAX single vmap (time / harness) | per-example loop (time / harness) |")
    print("|---|---|---|---|")
    for batch, median in rows:
        loop = f"{median['per-example loop'] / median['harness']:.1f}x" if "per-example loop" in median else "-"
        print(f"| {batch} | {median['harness'] * 1e3:.2f} ms | {median['pure JAX'] / median['harness']:.2f}x | {loop} |")


if __name__ == "__main__":
    main()
