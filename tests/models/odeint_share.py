"""The BrainPy tutorial style: an integrator built with bp.odeint in __init__, the clock
read with bp.share.load, refractoriness through the time of the last spike."""

import brainpy as bp
import brainpy.math as bm


class LIF(bp.dyn.NeuDyn):
    def __init__(self, size, V_rest=0.0, V_reset=-5.0, V_th=20.0, R=1.0, tau=10.0, t_ref=5.0, **kwargs):
        super().__init__(size=size, **kwargs)
        self.V_rest = V_rest
        self.V_reset = V_reset
        self.V_th = V_th
        self.R = R
        self.tau = tau
        self.t_ref = t_ref
        self.V = bm.Variable(bm.zeros(self.num) + V_rest)
        self.input = bm.Variable(bm.zeros(self.num))
        self.t_last_spike = bm.Variable(bm.ones(self.num) * -1e7)
        self.refractory = bm.Variable(bm.zeros(self.num, dtype=bool))
        self.spike = bm.Variable(bm.zeros(self.num, dtype=bool))
        self.integral = bp.odeint(f=self.derivative, method="exp_auto")

    def derivative(self, V, t, Iext):
        return (-V + self.V_rest + self.R * Iext) / self.tau

    def update(self, x=None):
        t = bp.share.load("t")
        dt = bp.share.load("dt")
        if x is not None:
            self.input += x
        V = self.integral(self.V, t, self.input, dt=dt)
        refractory = (t - self.t_last_spike) <= self.t_ref
        V = bm.where(refractory, self.V, V)
        spike = self.V_th <= V
        self.spike.value = spike
        self.t_last_spike.value = bm.where(spike, t, self.t_last_spike)
        self.V.value = bm.where(spike, self.V_reset, V)
        self.refractory.value = bm.logical_or(refractory, spike)
        self.input[:] = 0.0
        return spike
