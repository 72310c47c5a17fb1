"""BrainPy built-in children held as library code: layers, neurons, a projection, a delay,
Poisson input, BrainPy's `>>` call, a built-in's Variable read and written from outside, a child's built-ins
read by its parent."""

import brainpy as bp
import brainpy.math as bm


class DenseLif(bp.DynamicalSystem):
    def __init__(self, n_in, n):
        super().__init__()
        self.fc = bp.dnn.Dense(n_in, n, mode=bm.TrainingMode())
        self.lif = bp.dyn.LifRef(n, V_th=-50.0, V_initializer=bp.init.Normal(-55.0, 2.0))
        self.trace = bm.Variable(bm.zeros(n))

    def update(self, x):
        current = bm.asarray(x) >> self.fc  # a numpy array would apply >> elementwise
        spike = self.lif(current * 20.0)
        self.lif.V.value += 0.1 * self.trace  # a built-in's Variable written from outside
        self.trace.value = 0.9 * self.trace + spike
        return self.lif.V.value, self.trace.value.sum()


class PoissonNet(bp.DynSysGroup):
    def __init__(self, n_in, n):
        super().__init__()
        self.noise = bp.dyn.PoissonGroup(n_in, freqs=200.0)
        self.post = bp.dyn.Lif(n, V_rest=-60.0, V_th=-50.0, V_reset=-60.0, tau=10.0)
        self.proj = bp.dyn.HalfProjAlignPostMg(
            comm=bp.dnn.Linear(n_in, n, bp.init.Uniform(0.0, 3.0)),
            syn=bp.dyn.Expon.desc(n, tau=5.0),
            out=bp.dyn.CUBA.desc(),
            post=self.post,
        )
        self.delay = bp.VarDelay(self.post.spike, entries={"out": 1.0})

    def update(self):
        self.proj(self.noise())
        self.delay(self.post())
        return self.post.V.value, self.delay.at("out")


class GroupNet(bp.DynSysGroup):
    """Built-ins only and no update of its own: BrainPy's group update runs them."""

    def __init__(self, ne=8, ni=4):
        super().__init__()
        self.inp = bp.dyn.PoissonGroup(ne, freqs=300.0)
        self.E = bp.dyn.LifRef(ne, V_rest=-60.0, V_th=-50.0, V_reset=-60.0, tau=20.0, tau_ref=5.0,
                               V_initializer=bp.init.Normal(-55.0, 2.0))
        self.I = bp.dyn.LifRef(ni, V_rest=-60.0, V_th=-50.0, V_reset=-60.0, tau=20.0, tau_ref=5.0)
        self.in2E = bp.dyn.FullProjAlignPostMg(pre=self.inp, delay=None,
                                               comm=bp.dnn.Linear(ne, ne, bp.init.Constant(5.0)),
                                               syn=bp.dyn.Expon.desc(ne, tau=5.0), out=bp.dyn.CUBA.desc(),
                                               post=self.E)
        self.E2I = bp.dyn.FullProjAlignPostMg(pre=self.E, delay=None,
                                              comm=bp.dnn.Linear(ne, ni, bp.init.Constant(2.0)),
                                              syn=bp.dyn.Expon.desc(ni, tau=5.0), out=bp.dyn.CUBA.desc(),
                                              post=self.I)


class Stack(bp.DynamicalSystem):
    """Layers of the file holding built-ins, and a parent reading them as monitors
    (``self.l1.lif.V``, a child's built-in), read before and after the layers step."""

    def __init__(self, n_in, n):
        super().__init__()
        self.l1 = DenseLif(n_in, n)
        self.l2 = DenseLif(n, n)
        self.rate = bm.Variable(bm.zeros(n))

    def update(self, x):
        before = self.l1.lif.V.value
        v1, _ = self.l1(x)
        self.l2(self.l1.lif.spike.value)
        self.rate.value = 0.9 * self.rate + 0.1 * self.l2.lif.spike
        return self.l1.lif.V - before, self.rate.value
