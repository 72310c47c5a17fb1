"""Models written as plain BrainPyObjects (Variables and an update method, no DynamicalSystem), one
stepped by calling it (its own ``__call__``), held by a DynamicalSystem."""

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


class Accumulator(bp.BrainPyObject):
    """A BrainPyObject stepped by calling it: its own ``__call__`` is its stepping method."""

    def __init__(self, n):
        super().__init__()
        self.total = bm.Variable(bm.zeros(n))

    def __call__(self, x):
        self.total.value = 0.5 * self.total + x
        return self.total.value


class Smoothed(bp.DynamicalSystem):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.trace = LinearTrace(n_in, n_out)
        self.acc = Accumulator(n_out)

    def update(self, x):
        return self.acc(self.trace.update(x))
