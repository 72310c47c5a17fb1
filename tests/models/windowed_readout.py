"""A readout trained through functions of the module: a stimulus window, a readout and a loss."""

import brainpy as bp
import brainpy.math as bm
import jax.numpy as jnp

WINDOW = (2, 9)


def stimulus(t, x):
    """Show the input only inside WINDOW."""
    return jnp.where((t >= WINDOW[0]) & (t < WINDOW[1]), x, 0.0)


def late_mean(outputs):
    return jnp.mean(outputs[WINDOW[0]:], axis=0)


def hinge(pred, y):
    return jnp.sum(jnp.maximum(0.0, 1.0 - pred * y))


class Leaky(bp.DynamicalSystem):
    def __init__(self, n_in, n_out, decay=0.8):
        super().__init__()
        self.decay = decay
        self.w = bm.TrainVar(bm.random.normal(0.0, 0.5, (n_in, n_out)))
        self.v = bm.Variable(bm.zeros(n_out))

    def update(self, x):
        self.v.value = self.decay * self.v + x @ self.w
        return bm.tanh(self.v.value)
