"""Leaky integrate-and-fire neurons with noise, written for ONE example: input dropout
(a Bernoulli mask), white membrane noise, and a random initial potential on every reset,
all drawn from BrainPy's global random stream.

Batch it with:  batchify examples/noisy_lif.py -o examples/noisy_lif_batched.py
In the batched model every example draws from its own stream (see the README's seeding rule).
"""

import brainpy as bp
import brainpy.math as bm


class NoisyLIF(bp.DynamicalSystem):
    def __init__(self, n_in, n, sigma=0.3, p_drop=0.2, tau=10.0, dt=0.5):
        super().__init__()
        self.n = n
        self.sigma = sigma
        self.p_drop = p_drop
        self.tau = tau
        self.dt = dt
        self.w = bm.TrainVar(bm.random.normal(0.0, 2.0 / n_in**0.5, (n_in, n)))
        self.V = bm.Variable(bm.zeros(n))
        self.spike = bm.Variable(bm.zeros(n))

    def reset_state(self, batch_size=None):
        self.V.value = bm.random.uniform(0.0, 0.5, self.n)
        self.spike.value = bm.zeros(self.n)

    def update(self, x):
        keep = bm.random.bernoulli(1.0 - self.p_drop, x.shape)
        current = (x * keep / (1.0 - self.p_drop)) @ self.w
        noise = self.sigma * bm.sqrt(self.dt) * bm.random.normal(0.0, 1.0, self.n)
        self.V.value = self.V + self.dt / self.tau * (current - self.V) + noise
        spike = bm.surrogate.sigmoid(self.V - 1.0)
        self.V.value = self.V * (1.0 - spike)
        self.spike.value = spike
        return spike
