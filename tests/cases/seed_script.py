"""A script written as in the seed question (issue 14): a module-level model and optimizer, a
module-level step_run that shows the stimulus inside a time window with bm.where, and a loss_fun
for ONE example (reset_state, bm.for_loop over functools.partial(step_run, ...), bp.losses.nll_loss,
labels shaped [1]) returning (loss, acc). Its training code runs only as a script."""

import functools

import brainpy as bp
import brainpy.math as bm
import numpy as np

cfg = {"stim_start_timepoint": 2, "stim_end_timepoint": 10, "total_timepoint": 12}
blank_img = bm.zeros(12)


class RateSNN(bp.DynamicalSystem):
    def __init__(self, n_in, n_hidden, n_out, tau=4.0):
        super().__init__()
        self.n_hidden, self.n_out = n_hidden, n_out
        self.decay = float(np.exp(-1.0 / tau))
        self.w1 = bm.TrainVar(bm.random.normal(0.0, 2.0 / np.sqrt(n_in), (n_in, n_hidden)))
        self.w2 = bm.TrainVar(bm.random.normal(0.0, 2.0 / np.sqrt(n_hidden), (n_hidden, n_out)))
        self.v1 = bm.Variable(bm.zeros(n_hidden))
        self.v2 = bm.Variable(bm.zeros(n_out))

    def reset_state(self, batch_size=None):
        self.v1.value = bm.zeros(self.n_hidden)
        self.v2.value = bm.zeros(self.n_out)

    def step_run(self, i, x):
        self.v1.value = self.decay * self.v1 + x @ self.w1
        s1 = bm.surrogate.sigmoid(self.v1 - 1.0, alpha=4.0)
        self.v1.value = self.v1 * (1.0 - s1)
        self.v2.value = self.decay * self.v2 + s1 @ self.w2
        s2 = bm.surrogate.sigmoid(self.v2 - 1.0, alpha=4.0)
        self.v2.value = self.v2 * (1.0 - s2)
        return s2


bm.random.seed(3)
model = RateSNN(12, 20, 4)
opt = bp.optim.Adam(lr=2e-2, train_vars=model.train_vars().unique())


def step_run(i, x_single):
    x = bm.where(bm.logical_and(cfg["stim_start_timepoint"] <= i, i < cfg["stim_end_timepoint"]), x_single,
                 blank_img)
    return model.step_run(i, x)


def loss_fun(x_single, y_single):
    model.reset_state()
    indices = np.arange(cfg["total_timepoint"])
    spike_out = bm.for_loop(functools.partial(step_run, x_single=x_single), indices)
    frate_out = bm.sum(spike_out, axis=0) + 1.0
    predicts = bm.log(frate_out / bm.sum(frate_out)).unsqueeze(0)
    loss = bp.losses.nll_loss(predicts, y_single)  # current BrainPy negates (the seed's did not)
    acc = bm.mean(predicts.argmax(-1) == y_single)
    return loss, acc


def accuracy_of(predicted, labels):
    """Drives no model: copied unchanged."""
    return float(np.mean(np.asarray(predicted) == np.asarray(labels)))


if __name__ == "__main__":
    grad_f = bm.grad(loss_fun, grad_vars=model.train_vars().unique(), has_aux=True, return_value=True)
    print(grad_f(np.ones(12, np.float32), np.array([1])))
