"""A spiking classifier written for ONE example, in the style of the BrainPy user
question that started batchify: ``step_run(i, x)`` with a time index, a stimulus
shown only inside a time window, surrogate-gradient spikes, and the single-example
training code at module level.

Batch it with:  batchify examples/spiking_classifier.py -o examples/spiking_classifier_batched.py --shared i
"""

import functools

import brainpy as bp
import brainpy.math as bm
import numpy as np

cfg = dict(stim_start_timepoint=2, stim_end_timepoint=18, total_timepoint=25)
STIM_START = cfg["stim_start_timepoint"]
STIM_END = cfg["stim_end_timepoint"]


def decay_factor(tau, dt=1.0):
    return float(np.exp(-dt / tau))


class SpikingClassifier(bp.DynamicalSystem):
    """Two LIF layers with surrogate spikes; the readout counts output spikes."""

    def __init__(self, n_in, n_hidden, n_out, tau=8.0, v_th=1.0):
        super().__init__()
        self.n_hidden = n_hidden
        self.n_out = n_out
        self.decay = decay_factor(tau)
        self.v_th = v_th
        self.w_in = bm.TrainVar(bm.random.normal(0.0, 1.5 / np.sqrt(n_in), (n_in, n_hidden)))
        self.w_out = bm.TrainVar(bm.random.normal(0.0, 2.0 / np.sqrt(n_hidden), (n_hidden, n_out)))
        self.v_hidden = bm.Variable(bm.zeros(n_hidden))
        self.v_out = bm.Variable(bm.zeros(n_out))
        self.spikes_seen = bm.Variable(bm.zeros(n_out, dtype=bm.int32))

    def reset_state(self, batch_size=None):
        self.v_hidden.value = bm.zeros(self.n_hidden)
        self.v_out.value = bm.zeros(self.n_out)
        self.spikes_seen.value = bm.zeros(self.n_out, dtype=bm.int32)

    def lif(self, v, current):
        v = self.decay * v + current
        spike = bm.surrogate.sigmoid(v - self.v_th, alpha=4.0)
        return v * (1.0 - spike), spike

    def step_run(self, i, x):
        # The stimulus is shown only inside [STIM_START, STIM_END).
        x = bm.where(bm.logical_and(STIM_START <= i, i < STIM_END), x, 0.0)
        self.v_hidden.value, hidden = self.lif(self.v_hidden, x @ self.w_in)
        self.v_out.value, out = self.lif(self.v_out, hidden @ self.w_out)
        self.spikes_seen += (out > 0.5).astype(bm.int32)
        return out


# ---- single-example training, as the user had it (runs at import time) ----
if __name__ == "__main__":  # kept runnable without slowing down `import`
    from sklearn.datasets import load_digits

    digits = load_digits()
    xs = digits.data.astype(np.float32) / 16.0
    ys = digits.target
    model = SpikingClassifier(64, 64, 10)
    opt = bp.optim.Adam(lr=1e-2, train_vars=model.train_vars().unique())

    def loss_fun(x_single, y_single):
        model.reset_state()
        spike_out = bm.for_loop(functools.partial(model.step_run, x=x_single), np.arange(cfg["total_timepoint"]))
        frate = bm.sum(spike_out, axis=0) + 1.0e-6
        predicts = bm.log(frate / bm.sum(frate))
        return -predicts[y_single]

    grad_f = bm.grad(loss_fun, grad_vars=model.train_vars().unique(), return_value=True)
    for k in range(20):
        grads, loss = grad_f(xs[k], ys[k])
        opt.update(grads)
        print(k, float(loss))
