"""Models whose state exists only once reset_state() has run (issue 11, items 5 and 6)."""

import brainpy as bp
import brainpy.math as bm


class LateRNN(bp.DynamicalSystem):
    """__init__ never calls reset_state; its users do before running it."""

    def __init__(self, n, tau=5.0):
        super().__init__()
        self.n = n
        self.tau = tau
        self.w = bm.TrainVar(bm.random.normal(0.0, 0.3, (n, n)))

    def reset_state(self, batch_size=None):
        self.v = bp.init.variable_(bm.zeros, self.n, batch_size)
        self.r = bm.Variable(bm.random.uniform(0.0, 0.5, self.n))

    def update(self, x):
        self.v.value = self.v + (-self.v + self.r @ self.w + x) / self.tau
        self.r.value = bm.maximum(self.v, 0.0)
        return self.r.value


class Readout(bp.DynamicalSystem):
    """A model of the file holding one that leaves its state to reset_state()."""

    def __init__(self, n, m):
        super().__init__()
        self.rnn = LateRNN(n)
        self.w_out = bm.TrainVar(bm.ones((n, m)) * 0.2)
        self.acc = bm.Variable(bm.zeros(m))

    def update(self, x):
        r = self.rnn(x)
        self.acc.value = 0.9 * self.acc + r @ self.w_out
        return self.acc.value


class IPersistent(bp.dyn.IonChannel):
    """A persistent sodium-like channel whose gate is created in reset_state(V, batch_size)."""

    master_type = bp.dyn.HHTypedNeuron

    def __init__(self, size, g_max=0.5, E=50.0, method="exp_auto"):
        super().__init__(size)
        self.g_max = g_max
        self.E = E
        self.integral = bp.odeint(self.dp, method=method)

    def reset_state(self, V, batch_size=None):
        self.p = bp.init.variable_(bm.zeros, self.num, batch_size)

    def dp(self, p, t, V):
        return (1.0 / (1.0 + bm.exp(-(V + 40.0) / 5.0)) - p) / 2.0

    def update(self, V):
        self.p.value = self.integral(self.p.value, bp.share["t"], V, bp.share["dt"])

    def current(self, V):
        return self.g_max * self.p * (self.E - V)


class HHCell(bp.dyn.CondNeuGroupLTC):
    """A neuron deriving from a built-in: batched whole as library code."""

    def __init__(self, size):
        super().__init__(size, V_initializer=bp.init.Uniform(-70.0, -60.0))
        self.INa = bp.dyn.INa_HH1952(size)
        self.IK = bp.dyn.IK_HH1952(size)
        self.IL = bp.dyn.IL(size, E=-54.387, g_max=0.03)
        self.IP = IPersistent(size)
