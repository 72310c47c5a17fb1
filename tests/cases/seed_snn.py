"""A seed-style script (issue 10): a two-layer LIF classifier for ONE example, a stimulus window,
a module-level model and the user's own single-example training code, dt set at module level."""

import functools

import brainpy as bp
import brainpy.math as bm
import numpy as np

bm.set_dt(0.5)

cfg = dict(stim_start=2, stim_end=14, total=16)


class SeedSNN(bp.DynamicalSystem):
    def __init__(self, n_in, n_hidden, n_out, tau=2.0):
        super().__init__()
        self.n_hidden = n_hidden
        self.n_out = n_out
        self.tau = tau
        self.w1 = bm.TrainVar(bm.random.normal(0.0, 3.0 / np.sqrt(n_in), (n_in, n_hidden)))
        self.w2 = bm.TrainVar(bm.random.normal(0.0, 3.0 / np.sqrt(n_hidden), (n_hidden, n_out)))
        self.v1 = bm.Variable(bm.zeros(n_hidden))
        self.v2 = bm.Variable(bm.zeros(n_out))

    def reset_state(self, batch_size=None):
        self.v1.value = bm.zeros(self.n_hidden)
        self.v2.value = bm.zeros(self.n_out)

    def lif(self, v, current):
        v = v + bm.get_dt() / self.tau * (current - v)
        spike = bm.surrogate.sigmoid(v - 1.0, alpha=4.0)
        return v * (1.0 - spike), spike

    def step_run(self, i, x):
        x = bm.where(bm.logical_and(cfg["stim_start"] <= i, i < cfg["stim_end"]), x, 0.0)
        self.v1.value, hidden = self.lif(self.v1, x @ self.w1)
        self.v2.value, out = self.lif(self.v2, hidden @ self.w2)
        return out


model = SeedSNN(16, 24, 4)
opt = bp.optim.Adam(lr=1e-2, train_vars=model.train_vars().unique())


def step_run(i, x_single):
    return model.step_run(i, x_single)


def loss_fun(x_single, y_single):
    model.reset_state()
    spikes = bm.for_loop(functools.partial(step_run, x_single=x_single), np.arange(cfg["total"]))
    rate = bm.sum(spikes, axis=0) + 1e-6
    predicts = bm.log(rate / bm.sum(rate)).unsqueeze(0)
    loss = bp.losses.nll_loss(-predicts, y_single)
    return loss, bm.mean(predicts.argmax(-1) == y_single)
