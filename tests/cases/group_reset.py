"""A group of built-ins (issue 10): LifRef neurons and a projection, reset through BrainPy."""

import brainpy as bp


class TwoPop(bp.DynSysGroup):
    def __init__(self, n=6):
        super().__init__()
        self.E = bp.dyn.LifRef(n, V_rest=-60.0, V_th=-50.0, V_reset=-60.0, tau=5.0, tau_ref=2.0,
                               V_initializer=bp.init.Constant(-58.0))
        self.I = bp.dyn.LifRef(n, V_rest=-60.0, V_th=-50.0, V_reset=-60.0, tau=5.0, tau_ref=2.0,
                               V_initializer=bp.init.Constant(-57.0))
        self.E2I = bp.dyn.FullProjAlignPostMg(pre=self.E, delay=None, comm=bp.dnn.Linear(n, n, bp.init.Constant(3.0)),
                                              syn=bp.dyn.Expon.desc(n, tau=5.0), out=bp.dyn.CUBA.desc(), post=self.I)

    def update(self, x):
        self.E2I()
        self.E(x)
        self.I()
        return self.I.V.value
