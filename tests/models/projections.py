"""BrainPy names spelled another way than batchify's tables list them: a network of BrainPy
neurons connected by projection classes of its own (``bp.Projection``, the way BrainPy's
documentation builds E/I networks), and a weight declared with ``TrainVar`` imported from
``brainpy.math.object_transform``."""

import brainpy as bp
import brainpy.math as bm
from brainpy.math.object_transform import TrainVar


class Exponential(bp.Projection):
    def __init__(self, pre, post, prob, g_max, tau, E):
        super().__init__()
        self.proj = bp.dyn.ProjAlignPostMg2(
            pre=pre,
            delay=None,
            comm=bp.dnn.CSRLinear(bp.conn.FixedProb(prob, pre=pre.num, post=post.num, seed=1), g_max),
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
        self.E2E = Exponential(self.E, self.E, 0.3, 0.6, 5.0, 0.0)
        self.E2I = Exponential(self.E, self.I, 0.3, 0.6, 5.0, 0.0)
        self.I2E = Exponential(self.I, self.E, 0.3, 6.7, 10.0, -80.0)
        self.I2I = Exponential(self.I, self.I, 0.3, 6.7, 10.0, -80.0)

    def update(self, inp):
        self.E2E()
        self.E2I()
        self.I2E()
        self.I2I()
        self.E(inp)
        self.I(inp)
        return self.E.spike.value


class Readout(bp.DynamicalSystem):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.w = TrainVar(bm.random.normal(0.0, 0.5, (n_in, n_out)))
        self.v = bm.Variable(bm.zeros(n_out))

    def update(self, x):
        self.v.value = 0.8 * self.v + x @ self.w
        return self.v.value
