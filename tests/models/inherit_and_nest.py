"""A model deriving from another model of the file, a NeuDyn with size, super() calls,
three levels of children, a network writing a child's input port."""

import brainpy as bp
import brainpy.math as bm


class Base(bp.DynamicalSystem):
    def __init__(self, n, tau=5.0):
        super().__init__()
        self.tau = tau
        self.v = bm.Variable(bm.zeros(n))

    def update(self, x):
        self.v.value = self.v + (x - self.v) / self.tau
        return self.v.value


class Derived(Base):
    def __init__(self, n, tau=5.0, k=0.3):
        super().__init__(n, tau)
        self.k = k
        self.u = bm.Variable(bm.zeros(n))

    def update(self, x):
        v = super().update(x)
        self.u += self.k * (v - self.u)
        return v - self.u


class Pop(bp.dyn.NeuDyn):
    def __init__(self, size, tau=4.0):
        super().__init__(size=size)
        self.tau = tau
        self.V = bm.Variable(bm.zeros(self.varshape))
        self.input = bm.Variable(bm.zeros(self.varshape))
        self.spike = bm.Variable(bm.zeros(self.varshape, dtype=bool))

    def update(self, x=None):
        if x is not None:
            self.input += x
        self.V.value = self.V + (-self.V + self.input) / self.tau
        self.spike.value = self.V > 1.0
        self.V.value = bm.where(self.spike, 0.0, self.V)
        self.input[:] = 0.0
        return self.spike.value


class Circuit(bp.DynSysGroup):
    def __init__(self, n_in, n_hid):
        super().__init__()
        self.front = Derived(n_in)
        self.a = Pop(n_in)
        self.b = Pop(n_hid)
        self.inner = Inner(n_hid)
        self.w_ab = bm.TrainVar(bm.random.uniform(0.0, 1.5, (n_in, n_hid)))

    def update(self, x):
        drive = self.front(x)
        self.a(drive * 4.0)
        self.b.input += self.a.spike @ self.w_ab
        self.b.update()
        out = self.inner.update(self.b.spike.astype(bm.float32))
        return out, self.b.V.value


class Inner(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.leaf = Base(n, tau=2.0)
        self.total = bm.Variable(bm.zeros(()))

    def update(self, s):
        y = self.leaf(s)
        self.total += y.sum()
        return y * self.total


class OldStyle(Base):
    """Old-style super() and the class's own name used inside its methods."""

    SCALE = 2.0

    def __init__(self, n):
        super(OldStyle, self).__init__(n, tau=3.0)

    def update(self, x):
        v = super(OldStyle, self).update(x * OldStyle.SCALE)
        if isinstance(self, OldStyle):
            return v + 1.0
        return v
