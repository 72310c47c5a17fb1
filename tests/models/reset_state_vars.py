"""Variables created in reset_state, which __init__ calls with the model's mode (the style of
BrainPy's own neurons), one drawn from a random initializer; a class deriving from a built-in,
held as a child; an unused *args in the stepping method."""

import brainpy as bp
import brainpy.math as bm


class AdaptiveLif(bp.dyn.Lif):
    """A built-in neuron with one extra line of its own: its Variables are BrainPy's."""

    def update(self, x=None):
        return super().update(x * 1.5)


class IF(bp.DynamicalSystem):
    def __init__(self, n, v_th=0.5):
        super().__init__()
        self.n = n
        self.v_th = v_th
        self.w = bm.TrainVar(bm.random.normal(0.0, 0.5, (n, n)))
        self.reset_state(self.mode)

    def reset_state(self, batch_size=1):
        self.V = bp.init.variable_(bp.init.Uniform(0.0, 0.5), self.n, batch_size)
        self.spike = bp.init.variable_(bm.zeros, self.n, batch_size)
        self.count = bm.Variable(bm.zeros(()))

    def update(self, x, *args):
        mem = self.V + (x @ self.w - self.V) * 0.3
        self.spike.value = bm.surrogate.sigmoid(mem - self.v_th)
        self.V.value = (1.0 - self.spike) * mem
        self.count += self.spike.sum()
        return self.spike.value


class Mixed(bp.DynSysGroup):
    def __init__(self, n, seed=None):
        super().__init__()
        self.seed = seed  # the model's own seed: the batch's seed is batch_seed
        self.cell = IF(n)
        self.neuron = AdaptiveLif(n, V_th=-55.0)

    def update(self, x):
        s = self.cell(x)
        self.neuron(s * 30.0)
        return self.neuron.V.value
