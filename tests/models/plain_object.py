"""A model written as a plain BrainPyObject (Variables and an update method, no DynamicalSystem)."""

import brainpy as bp
import brainpy.math as bm


class LinearTrace(bp.BrainPyObject):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.w = bm.TrainVar(bm.random.normal(0.0, 0.5, (n_in, n_out)))
        self.trace = bm.Variable(bm.zeros(n_out))

    def update(self, x):
        self.trace.value = 0.9 * self.trace + x @ self.w
        return self.trace.value
