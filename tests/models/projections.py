"""Projections the way BrainPy's documentation builds E/I networks, and BrainPy names spelled
another way than batchify's tables list them.

- ``EINet``: BrainPy neurons connected by projection classes of the file (``bp.Projection``);
- ``COBA``: a neuron class of the file (reading its projections' currents with
  ``sum_current_inputs``, a trained bias) handed to those projections as their ``post``: it runs as
  library code with them;
- ``LayeredCOBA``: the same, with the projection's ``comm`` a layer class of the file
  (``MaskedLinear``) and the neuron holding a child model of the file (``Drive``): code copied as
  written builds those classes, so they are copied too;
- ``Readout``: a weight declared with ``TrainVar`` imported from ``brainpy.math.object_transform``.
"""

import brainpy as bp
import brainpy.math as bm
from brainpy.math.object_transform import TrainVar


class Exponential(bp.Projection):
    def __init__(self, pre, post, g_max, tau, E):
        super().__init__()
        self.proj = bp.dyn.ProjAlignPostMg2(
            pre=pre,
            delay=None,
            comm=bp.dnn.Linear(pre.num, post.num, bp.init.Uniform(0.0, g_max)),
            syn=bp.dyn.Expon.desc(post.num, tau=tau),
            out=bp.dyn.COBA.desc(E=E),
            post=post,
        )


class EINet(bp.DynSysGroup):
    def __init__(self, ne=24, ni=6):
        super().__init__()
        neuron = dict(V_rest=-60.0, V_th=-50.0, V_reset=-60.0, tau=20.0, tau_ref=5.0,
                      V_initializer=bp.init.Normal(-55.0, 2.0))
        self.E = bp.dyn.LifRef(ne, **neuron)
        self.I = bp.dyn.LifRef(ni, **neuron)
        self.E2E = Exponential(self.E, self.E, 0.2, 5.0, 0.0)
        self.E2I = Exponential(self.E, self.I, 0.2, 5.0, 0.0)
        self.I2E = Exponential(self.I, self.E, 2.0, 10.0, -80.0)
        self.I2I = Exponential(self.I, self.I, 2.0, 10.0, -80.0)

    def update(self, inp):
        self.E2E()
        self.E2I()
        self.I2E()
        self.I2I()
        self.E(inp)
        self.I(inp)
        return self.E.spike.value


class LIF(bp.dyn.NeuDyn):
    def __init__(self, size, tau=10.0):
        super().__init__(size=size)
        self.tau = tau
        self.bias = bm.TrainVar(bm.ones(self.num) * 2.0)
        self.V = bm.Variable(bm.random.uniform(-60.0, -52.0, self.num))
        self.spike = bm.Variable(bm.zeros(self.num))

    def update(self, inp):
        inp = self.sum_current_inputs(self.V.value, init=inp)  # the projections' currents
        V = self.V + (-self.V - 60.0 + inp + self.bias) / self.tau * bp.share["dt"]
        spike = bm.surrogate.sigmoid(V + 50.0)
        self.V.value = V - 10.0 * spike
        self.spike.value = spike
        return spike


class Synapse(bp.Projection):
    def __init__(self, n_pre, post: LIF, g_max, tau, E):
        super().__init__()
        self.proj = bp.dyn.HalfProjAlignPostMg(
            comm=bp.dnn.Linear(n_pre, post.num, bp.init.Uniform(0.0, g_max)),
            syn=bp.dyn.Expon.desc(post.num, tau=tau),
            out=bp.dyn.COBA.desc(E=E),
            post=post,
        )

    def update(self, spike):
        return self.proj(spike)


class COBA(bp.DynSysGroup):
    def __init__(self, n=16):
        super().__init__()
        self.N = LIF(n)
        self.E = Synapse(n, self.N, 0.3, 5.0, 0.0)
        self.I = Synapse(n, self.N, 1.0, 10.0, -80.0)

    def update(self, inp):
        self.E(self.N.spike.value)
        self.I(self.N.spike.value)
        return self.N(inp)


class Readout(bp.DynamicalSystem):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.w = TrainVar(bm.random.normal(0.0, 0.5, (n_in, n_out)))
        self.v = bm.Variable(bm.zeros(n_out))

    def update(self, x):
        self.v.value = 0.8 * self.v + x @ self.w
        return self.v.value


class MaskedLinear(bp.dnn.Layer):
    def __init__(self, n_pre, n_post, g_max):
        super().__init__()
        self.w = bm.random.uniform(0.0, g_max, (n_pre, n_post)) * (bm.random.rand(n_pre, n_post) < 0.5)

    def update(self, x):
        return x @ self.w


class MaskedSynapse(bp.Projection):
    def __init__(self, n_pre, post, g_max, tau, E):
        super().__init__()
        self.proj = bp.dyn.HalfProjAlignPostMg(
            comm=MaskedLinear(n_pre, post.num, g_max),
            syn=bp.dyn.Expon.desc(post.num, tau=tau),
            out=bp.dyn.COBA.desc(E=E),
            post=post,
        )

    def update(self, spike):
        return self.proj(spike)


class Drive(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.x = bm.Variable(bm.zeros(n))

    def update(self, inp):
        self.x.value = 0.8 * self.x + 0.2 * inp
        return self.x.value


class DrivenLIF(LIF):
    def __init__(self, size, tau=10.0):
        super().__init__(size, tau)
        self.drive = Drive(self.num)

    def update(self, inp):
        return super().update(self.drive(inp))


class LayeredCOBA(bp.DynSysGroup):
    def __init__(self, n=16):
        super().__init__()
        self.N = DrivenLIF(n)
        self.E = MaskedSynapse(n, self.N, 0.3, 5.0, 0.0)
        self.I = MaskedSynapse(n, self.N, 1.0, 10.0, -80.0)

    def update(self, inp):
        self.E(self.N.spike.value)
        self.I(self.N.spike.value)
        return self.N(inp)
