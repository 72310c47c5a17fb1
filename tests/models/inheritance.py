"""Chains of model classes of the file, the ways BrainPy users extend a neuron: a base's method
reached past the class between (``super(Mid, self)``) or through its class (``Base.update(self, x)``),
a subclass of a base that draws random numbers, a base whose ``__init__`` calls ``reset_state``
overridden by its subclasses (one with an ``__init__`` of its own and a Variable more), and a
helper that only draws noise called in a statement that reads the state."""

import brainpy as bp
import brainpy.math as bm


class Leak(bp.DynamicalSystem):
    """The base of the chain: a leaky integrator."""

    def __init__(self, n):
        super().__init__()
        self.V = bm.Variable(bm.zeros(n))

    def update(self, x):
        self.V.value = self.V * 0.9 + x
        return self.V.value


class Gained(Leak):
    """Doubles its input, then runs its base's update."""

    def update(self, x):
        return super().update(2.0 * x)


class Bypass(Gained):
    """Reaches past its base with super(Gained, self): a bare super() would double the input."""

    def update(self, x):
        return super(Gained, self).update(x)  # Leak's update: Gained's gain skipped


class Explicit(Gained):
    """Calls two bases' updates through their classes, one of them past its direct base."""

    def update(self, x):
        return Leak.update(self, x) + Gained.update(self, 0.5 * x)


class NoisyLeak(bp.DynamicalSystem):
    """Draws from BrainPy's random stream in its update: every example its own noise."""

    def __init__(self, n):
        super().__init__()
        self.n = n
        self.V = bm.Variable(bm.zeros(n))

    def update(self, x):
        self.V.value = self.V * 0.9 + bm.random.normal(0.0, 0.1, self.n) + x
        return self.V.value


class ScaledNoisyLeak(NoisyLeak):
    """Draws nothing itself, but its update runs its base's, which does."""

    def __init__(self, n, gain=2.0):
        self.gain = gain
        super().__init__(n)

    def update(self, x):
        return super().update(x * self.gain)


class Resetting(bp.DynamicalSystem):
    """Creates its Variable in reset_state, which its __init__ calls."""

    def __init__(self, n):
        super().__init__()
        self.n = n
        self.reset_state()

    def reset_state(self, batch_size=None):
        self.V = bp.init.variable_(bm.zeros, self.n, batch_size)

    def update(self, x):
        self.V.value = self.V * 0.9 + x
        return self.V.value


class RandomStart(Resetting):
    """Overrides reset_state alone: the inherited __init__ runs this one, drawing a start."""

    def reset_state(self, batch_size=None):
        self.V = bp.init.variable_(bp.init.Uniform(-1.0, 1.0), self.n, batch_size)


class Adapting(Resetting):
    """An __init__ of its own, and a reset_state creating one Variable more after its base's."""

    def __init__(self, n, k=0.5):
        self.k = k
        super().__init__(n)

    def reset_state(self, batch_size=None):
        super().reset_state(batch_size)
        self.a = bp.init.variable_(bm.zeros, self.n, batch_size)

    def update(self, x):
        self.a.value = self.a * self.k + 0.1 * self.V
        return super().update(x - self.a)


class Jittered(bp.DynamicalSystem):
    """A helper that only draws, called in statements reading the Variable it never writes."""

    def __init__(self, n):
        super().__init__()
        self.n = n
        self.V = bm.Variable(bm.zeros(n))

    def noise(self):
        return bm.random.normal(0.0, 0.1, self.n)

    def update(self, x):
        self.V.value = self.V * 0.9 + x + self.noise()
        self.V += self.noise()
        return self.V.value
