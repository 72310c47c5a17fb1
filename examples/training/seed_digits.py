"""The seed question's own training code, written for ONE example and batched as it is.

A module-level model, the user's own ``bp.optim.Adam`` on ``model.train_vars().unique()``, a
module-level ``step_run(i, x_single)`` that shows the stimulus only inside a time window, and a
``loss_fun(x_single, y_single)`` that resets the model, runs ``bm.for_loop`` over time, turns firing
rates into log-probabilities and returns ``(loss, acc)``: the code of the question that started
batchify (``../shared/seeds/``), on scikit-learn's bundled 8x8 digits.

batchify batches ``loss_fun`` (and the ``step_run`` it drives) alongside the class:

    batchify examples/training/seed_digits.py -o examples/training/seed_digits_batched.py --function loss_fun

and the training loop below changes two lines of the seed's: ``grad_f`` is the generated batched
gradient instead of ``jax.vmap(bm.grad(loss_fun, ...))``, and its gradient is already the batch's mean.

    python examples/training/seed_digits.py [--epochs 30] [--batch-size 64]
"""

import functools

import brainpy as bp
import brainpy.math as bm
import numpy as np

cfg = {"stim_start_timepoint": 2, "stim_end_timepoint": 18, "total_timepoint": 25}
blank_img = bm.zeros(64)


class SNN(bp.DynamicalSystem):
    """Two LIF layers with surrogate spikes, for one example."""

    def __init__(self, n_in, n_hidden, n_out, tau=8.0, v_th=1.0):
        super().__init__()
        self.n_hidden = n_hidden
        self.n_out = n_out
        self.decay = float(np.exp(-1.0 / tau))
        self.v_th = v_th
        self.w_in = bm.TrainVar(bm.random.normal(0.0, 1.5 / np.sqrt(n_in), (n_in, n_hidden)))
        self.w_out = bm.TrainVar(bm.random.normal(0.0, 2.0 / np.sqrt(n_hidden), (n_hidden, n_out)))
        self.v_hidden = bm.Variable(bm.zeros(n_hidden))
        self.v_out = bm.Variable(bm.zeros(n_out))

    def reset_state(self, batch_size=None):
        self.v_hidden.value = bm.zeros(self.n_hidden)
        self.v_out.value = bm.zeros(self.n_out)

    def lif(self, v, current):
        v = self.decay * v + current
        spike = bm.surrogate.sigmoid(v - self.v_th, alpha=4.0)
        return v * (1.0 - spike), spike

    def step_run(self, i, x):
        self.v_hidden.value, hidden = self.lif(self.v_hidden, x @ self.w_in)
        self.v_out.value, out = self.lif(self.v_out, hidden @ self.w_out)
        return out


bm.random.seed(0)
model = SNN(64, 128, 10)

# define the optimizer we need
opt = bp.optim.Adam(lr=5e-3, train_vars=model.train_vars().unique())


def step_run(i, x_single):
    """Inputs: x_single: [64]"""
    x = bm.where(bm.logical_and(cfg["stim_start_timepoint"] <= i, i < cfg["stim_end_timepoint"]), x_single, blank_img)
    out = model.step_run(i, x)  # [n_neuron]
    return out


def loss_fun(x_single, y_single):
    """Inputs: x_single: [64], y_single: [1]"""
    model.reset_state()
    indices = np.arange(cfg["total_timepoint"])  # sequence length
    spike_out = bm.for_loop(functools.partial(step_run, x_single=x_single), indices)  # [length, n_neuron]
    frate_out = bm.sum(spike_out, axis=0) + 1.0  # [n_neuron], smoothed: a silent class is not log(0)
    predicts = bm.log(frate_out / bm.sum(frate_out)).unsqueeze(0)  # log-probabilities, [1, n_neuron]
    loss = bp.losses.nll_loss(predicts, y_single)  # current BrainPy negates (the seed's did not)
    acc = bm.mean(predicts.argmax(-1) == y_single)
    return loss, acc


if __name__ == "__main__":
    import argparse
    import sys
    import time
    from pathlib import Path

    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from seed_digits_batched import SNNBatched

    parser = argparse.ArgumentParser(description="the seed's training code on minibatches of digits")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    digits = load_digits()
    xs = (digits.data / 16.0).astype(np.float32)
    ys = digits.target.astype(np.int32)[:, None]  # [n, 1]: one label [1] per example, as in the seed
    x_train, x_test, y_train, y_test = train_test_split(xs, ys, test_size=0.25, random_state=0, stratify=ys)

    batched = SNNBatched.from_model(model, batch_size=args.batch_size)  # shares model's TrainVars
    # The seed's grad_f = jax.vmap(bm.grad(loss_fun, ...)): the batch's mean gradient, keyed like
    # model.train_vars().unique() for the user's own optimizer, and each example's (loss, acc).
    grad_f = functools.partial(batched.loss_fun_grad, train_vars=model.train_vars().unique())

    @bm.jit
    def train(x_batch, y_batch):
        grads, losses, acces = grad_f(x_batch, y_batch)  # mean gradient, [batch], [batch]
        opt.update(grads)
        return losses.mean(), acces.mean()

    @bm.jit
    def evaluate(x_batch, y_batch):
        losses, acces = batched.loss_fun(x_batch, y_batch)
        return losses.mean(), acces.mean()

    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for epoch in range(args.epochs):
        order = rng.permutation(len(x_train))
        for b in range(len(x_train) // args.batch_size):
            idx = order[b * args.batch_size:(b + 1) * args.batch_size]
            loss, acc = train(x_train[idx], y_train[idx])
    seconds = time.perf_counter() - start
    batched.reset_state(batch_size=len(x_test))
    test_loss, test_acc = evaluate(x_test, y_test)
    print(f"test accuracy {float(test_acc):.3f}, test loss {float(test_loss):.3f}, "
          f"{args.epochs} epochs in {seconds:.1f} s ({len(x_train)} training, {len(x_test)} test digits)")
