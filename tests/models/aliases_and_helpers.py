"""Import aliases, helper methods calling each other, tuple unpacking into Variables,
every augmented operator, indexed writes, ``.update()``, attribute rebinding,
early returns on static configuration, a dict result and default arguments."""

import brainpy
import brainpy.math as bpm
from brainpy.math import TrainVar, Variable
import jax.numpy as jnp

GAIN = 0.5


def clip(x, lo=-3.0, hi=3.0):
    return jnp.clip(x, lo, hi)


class Cell(brainpy.DynamicalSystem):
    def __init__(self, n, mode_name="leaky"):
        super().__init__()
        self.n = n
        self.mode_name = mode_name
        self.w = TrainVar(bpm.random.normal(0.0, 0.3, (n, n)))
        self.b = brainpy.math.Parameter(bpm.zeros(n))
        self.a = Variable(bpm.zeros(n))
        self.c = brainpy.math.Variable(bpm.ones(n), dtype=bpm.float32)
        self.count = Variable(bpm.zeros(n, dtype=bpm.int32))
        self.last = bpm.Variable(bpm.zeros(n, dtype=bool))
        self.z = Variable(n)  # from a size: zeros

    def reset_state(self, batch_size=None):
        self.z.value = bpm.zeros(self.n)

    def drive(self, x):
        """Reads state and weights, writes nothing."""
        return clip(x @ self.w + self.b + GAIN * self.c)

    def _integrate(self, x):
        self.a.value, self.c.value = 0.9 * self.a + self.drive(x), self.c * 0.99
        return self.a.value

    def update(self, x, gain=1.0):
        a = self._integrate(x * gain)
        self.a -= 0.1 * a
        self.a *= 1.01
        self.c /= 1.0 + 0.01 * jnp.abs(a)
        self.c **= 1.0
        self.count += (a > 0).astype(bpm.int32)
        self.count[0] = 7
        self.c[1:3] += 0.5
        self.last.update(a > 0.2)
        self.z += self.last
        if self.mode_name == "plain":
            return a
        self.a = bpm.tanh(self.a)
        return {"a": self.a.value, "mean": self.c.mean()}
