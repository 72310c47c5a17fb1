"""A continuous-time rate RNN for ONE example, weights as TrainVars, returning a tuple
(readout, rates) every step; ``summary()`` returns a dict.

Batch it with:  batchify examples/rate_rnn.py -o examples/rate_rnn_batched.py
"""

import brainpy as bp
import brainpy.math as bm
import jax.numpy as jnp
from brainpy.math import TrainVar, Variable


class RateRNN(bp.DynamicalSystem):
    def __init__(self, n_in, n_rec, n_out, tau=5.0, dt=1.0, g=1.2):
        super().__init__()
        self.alpha = dt / tau
        self.w_in = TrainVar(bm.random.normal(0.0, 1.0 / n_in**0.5, (n_in, n_rec)))
        self.w_rec = TrainVar(bm.random.normal(0.0, g / n_rec**0.5, (n_rec, n_rec)))
        self.b_rec = TrainVar(bm.zeros(n_rec))
        self.w_out = TrainVar(bm.random.normal(0.0, 1.0 / n_rec**0.5, (n_rec, n_out)))
        self.h = Variable(bm.zeros(n_rec))
        self.r = Variable(bm.zeros(n_rec))

    def reset_state(self, batch_size=None):
        self.h.value = bm.zeros_like(self.h.value)
        self.r.value = bm.zeros_like(self.r.value)

    def update(self, x):
        self.h += self.alpha * (-self.h + x @ self.w_in + self.r @ self.w_rec + self.b_rec)
        self.r.value = bm.tanh(self.h)
        return self.r @ self.w_out, self.r.value

    def summary(self):
        return {"rate_mean": jnp.mean(self.r.value), "h_norm": jnp.linalg.norm(self.h.value)}
