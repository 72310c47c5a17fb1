"""Older and mode-aware BrainPy styles: update(self, tdi) reading the shared clock from its
argument, an input port cleared each step, a Variable named `state`, a stochastic integrator,
a branch on self.mode, a Variable created only when configured, a read-only step called
inside a jax.lax.scan closure, and the old update(self, tdi, x) of a model with a weight."""

import brainpy as bp
import brainpy.math as bm
import jax


CUBIC = 3.0  # a module global the derivative reads


class FHN(bp.DynamicalSystem):
    def __init__(self, n, a=0.7, b=0.8, tau=12.5):
        super().__init__()
        self.a, self.b, self.tau = a, b, tau
        self.v = bm.Variable(bm.zeros(n))
        self.w = bm.Variable(bm.zeros(n))
        self.input = bm.Variable(bm.zeros(n))  # an input port: written by callers, cleared each step
        self.integral = bp.odeint(bp.JointEq(self.dv, self.dw))

    def dv(self, v, t, w, Iext):
        return v - v**3 / CUBIC - w + Iext

    def dw(self, w, t, v):
        return (v + self.a - self.b * w) / self.tau

    def update(self, tdi, x=None):
        if x is not None:
            self.input += x
        v, w = self.integral(self.v, self.w, tdi.t, Iext=self.input, dt=tdi.dt)
        self.v.value = v
        self.w.value = w
        self.input[:] = 0.0
        return self.v.value


class NoisyUnit(bp.DynamicalSystem):
    def __init__(self, n, sigma=0.2, adaptive=True):
        super().__init__()
        self.state = bm.Variable(bm.zeros(n))  # named like the batched class's state(): kept in FooState
        if adaptive:
            self.threshold = bm.Variable(bm.ones(n))
        self.adaptive = adaptive
        self.integral = bp.sdeint(f=lambda x, t, I: -x + I, g=lambda x, t, I: sigma)

    def update(self, x):
        if isinstance(self.mode, bm.NonBatchingMode):  # one example's shapes, as in the original
            drive = x
        else:
            drive = x.mean(0)
        self.state.value = self.integral(self.state, bp.share.load("t"), drive, bp.share["dt"])
        if self.adaptive:
            self.threshold.value = 0.9 * self.threshold + 0.1 * bm.abs(self.state)
            return self.state > self.threshold
        return self.state.value


class ScanRNN(bp.DynamicalSystem):
    def __init__(self, n_in, n):
        super().__init__()
        self.w_in = bm.TrainVar(bm.random.normal(0.0, 0.5, (n_in, n)))
        self.w_rec = bm.TrainVar(bm.random.normal(0.0, 0.3, (n, n)))
        self.h = bm.Variable(bm.zeros(n))

    def step(self, x, h):
        return jax.numpy.tanh(x @ self.w_in.value + h @ self.w_rec.value)

    def update(self, xs):
        def body(h, x):
            h = self.step(x, h)  # reads weights only: called in place inside the closure
            return h, h

        h, hs = jax.lax.scan(body, self.h.value, xs)
        self.h.value = h
        return hs.mean(0)


class OldClock(bp.DynamicalSystem):
    """The older update(self, _t, _dt) signature: the clock arrives as arguments, shared by the batch."""

    def __init__(self, n, tau=5.0):
        super().__init__()
        self.tau = tau
        self.x = bm.Variable(bm.zeros(n))

    def update(self, _t, _dt, inp):
        self.x.value = self.x + _dt * (inp - self.x) / self.tau + 0.01 * _t
        return self.x.value


class OldLeaky(bp.DynamicalSystem):
    """The old update(self, tdi, x) with a weight: its gradient is checked through tdi too."""

    def __init__(self, n):
        super().__init__()
        self.W = bm.TrainVar(bm.ones((n, n)) * 0.1)
        self.V = bm.Variable(bm.zeros(n))

    def update(self, tdi, x):
        self.V.value = self.V + (-self.V + x @ self.W) * tdi.dt
        return self.V.value
