"""A readout learned online by a rule outside update() (FORCE-style): batchify asks how the
batch learns it (BFY211); this golden declares it shared, updated by the batch mean."""

import brainpy as bp
import brainpy.math as bm


class Force(bp.DynamicalSystem):
    def __init__(self, n_in, n, n_out, lr=0.1):
        super().__init__()
        self.lr = lr
        self.w_in = bm.random.normal(0.0, 1.0, (n_in, n))
        self.h = bm.Variable(bm.zeros(n))
        self.w_out = bm.Variable(bm.zeros((n, n_out)))

    def update(self, x):
        self.h.value = bm.tanh(x @ self.w_in + 0.5 * self.h)
        return self.h @ self.w_out

    def learn(self, x, target):
        y = self.update(x)
        self.w_out += self.lr * bm.outer(self.h, target - y)
        return y
