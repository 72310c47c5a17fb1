"""Models that need more than positional inputs to be driven (issue 12: driving what real models need)."""

import brainpy as bp
import brainpy.math as bm


class PortNeuron(bp.DynamicalSystem):
    """An input port: the caller writes self.input before each step; update clears it."""

    def __init__(self, n, tau=10.0):
        super().__init__()
        self.tau = tau
        self.w = bm.TrainVar(bm.ones(n) * 0.5)
        self.V = bm.Variable(bm.zeros(n))
        self.input = bm.Variable(bm.zeros(n))

    def update(self):
        self.V.value = self.V + (-self.V + self.w * self.input) / self.tau
        self.input.value = bm.zeros_like(self.input)
        return self.V.value


class NamedInput(bp.DynamicalSystem):
    """Only the second argument carries the drive: reached by name."""

    def __init__(self, n):
        super().__init__()
        self.w = bm.TrainVar(bm.ones(n) * 0.3)
        self.V = bm.Variable(bm.zeros(n))

    def update(self, x=None, I_ext=None):
        drive = 0.0 if x is None else x
        if I_ext is not None:
            drive = drive + I_ext
        self.V.value = 0.9 * self.V + self.w * drive
        return self.V.value


class FitOnly(bp.DynamicalSystem):
    """Reads bp.share's `fit` flag and the global computing mode, as training-aware layers do."""

    def __init__(self, n):
        super().__init__()
        assert isinstance(self.mode, bm.TrainingMode), "built outside bm.training_environment()"
        self.w = bm.TrainVar(bm.ones(n) * 0.2)
        self.h = bm.Variable(bm.zeros(n))

    def update(self, x):
        gain = 2.0 if bp.share.load("fit") else 1.0
        self.h.value = bm.tanh(0.5 * self.h + gain * self.w * x)
        return self.h.value
