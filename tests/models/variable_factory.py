"""State created with bp.init.variable_ (the BrainPy docs' style), in __init__ and in reset_state."""

import brainpy as bp
import brainpy.math as bm


class Integrator(bp.dyn.NeuDyn):
    def __init__(self, size, tau=5.0):
        super().__init__(size=size)
        self.tau = tau
        self.V = bp.init.variable_(bm.zeros, self.varshape, self.mode)
        self.trace = bp.init.variable_(bp.init.Constant(0.5), self.varshape)
        self.w = bm.TrainVar(bm.ones(self.varshape))

    def reset_state(self, batch_size=None):
        self.V = bp.init.variable_(bm.zeros, self.varshape, batch_size)
        self.trace.value = bp.init.variable_(bp.init.Constant(0.5), self.varshape, batch_size)

    def update(self, x):
        self.V.value = self.V + (x * self.w - self.V) / self.tau
        self.trace.value = 0.9 * self.trace + 0.1 * self.V
        return self.V.value * self.trace
