"""A network composed of two user-defined layers (a spiking hidden layer and a leaky
readout), each a model of its own, written for ONE example.

Batch it with:  batchify examples/two_layer_net.py -o examples/two_layer_net_batched.py
"""

import brainpy as bp
import brainpy.math as bm

DECAY = 0.8


class DenseLIF(bp.DynamicalSystem):
    def __init__(self, n_in, n_out, v_th=1.0):
        super().__init__()
        self.n_out = n_out
        self.v_th = v_th
        self.w = bm.TrainVar(bm.random.uniform(-1.0, 1.0, (n_in, n_out)) / n_in**0.5)
        self.v = bm.Variable(bm.zeros(n_out))

    def reset_state(self, batch_size=None):
        self.v.value = bm.zeros(self.n_out)

    def update(self, x):
        self.v.value = DECAY * self.v + x @ self.w
        spike = bm.surrogate.arctan(self.v - self.v_th)
        self.v -= spike * self.v_th  # soft reset
        return spike


class LeakyReadout(bp.DynamicalSystem):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.w = bm.TrainVar(bm.random.normal(0.0, 1.0 / n_in**0.5, (n_in, n_out)))
        self.b = bm.TrainVar(bm.zeros(n_out))
        self.y = bm.Variable(bm.zeros(n_out))

    def reset_state(self, batch_size=None):
        self.y.value = bm.zeros_like(self.y.value)

    def update(self, s):
        self.y.value = DECAY * self.y + s @ self.w + self.b
        return self.y.value


class TwoLayerNet(bp.DynSysGroup):
    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        self.hidden = DenseLIF(n_in, n_hidden)
        self.readout = LeakyReadout(n_hidden, n_out)
        self.steps = bm.Variable(bm.zeros((), dtype=bm.int32))

    def reset_state(self, batch_size=None):
        self.hidden.reset_state(batch_size)
        self.readout.reset_state(batch_size)
        self.steps.value = bm.zeros((), dtype=bm.int32)

    def update(self, x):
        y = self.readout(self.hidden(x))
        self.steps += 1
        return y, self.hidden.v.mean()
