"""A population of leaky integrate-and-fire neurons with an absolute refractory period,
written for ONE example: ``V`` has shape ``[n]``. Input current arrives through an
input port (``self.input``) that is cleared after every step, as BrainPy models do.

Batch it with:  batchify examples/lif_population.py -o examples/lif_population_batched.py
"""

import brainpy as bp
import brainpy.math as bm


class LIFPopulation(bp.DynamicalSystem):
    def __init__(self, size, V_rest=0.0, V_reset=-5.0, V_th=20.0, R=1.0, tau=10.0, tau_ref=2.0, dt=0.1):
        super().__init__()
        self.size = size
        self.V_rest = V_rest
        self.V_reset = V_reset
        self.V_th = V_th
        self.R = R
        self.tau = tau
        self.tau_ref = tau_ref
        self.dt = dt

        self.V = bm.Variable(bm.ones(size) * V_rest)
        self.input = bm.Variable(bm.zeros(size))
        self.refractory_left = bm.Variable(bm.zeros(size))
        self.spike = bm.Variable(bm.zeros(size, dtype=bool))
        self.n_spikes = bm.Variable(bm.zeros((), dtype=bm.int32))

    def reset_state(self, batch_size=None):
        self.V.value = bm.ones(self.size) * self.V_rest
        self.input.value = bm.zeros(self.size)
        self.refractory_left.value = bm.zeros(self.size)
        self.spike.value = bm.zeros(self.size, dtype=bool)
        self.n_spikes.value = bm.zeros((), dtype=bm.int32)

    def derivative(self, V, I):
        return (-(V - self.V_rest) + self.R * I) / self.tau

    def update(self, x):
        self.input += x
        refractory = self.refractory_left > 0.0
        V = self.V + self.derivative(self.V, self.input) * self.dt
        V = bm.where(refractory, self.V.value, V)
        spike = V >= self.V_th
        self.spike.update(spike)
        self.V.value = bm.where(spike, self.V_reset, V)
        self.refractory_left.value = bm.where(spike, self.tau_ref, bm.maximum(self.refractory_left - self.dt, 0.0))
        self.n_spikes += spike.sum()
        self.input[:] = 0.0
        return self.spike.value
