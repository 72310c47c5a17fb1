"""A model's own bm.random.RandomState (one stream per example) and a bm.LengthDelay, both
held as library code, next to a draw from BrainPy's global stream."""

import brainpy as bp
import brainpy.math as bm


class NoisyDelayLine(bp.DynamicalSystem):
    def __init__(self, n, delay_steps=3, seed=1):
        super().__init__()
        self.x = bm.Variable(bm.zeros(n))
        self.rng = bm.random.RandomState(seed)
        self.delay = bm.LengthDelay(self.x, delay_steps)  # the delay's target is this class's x
        self.delay_steps = delay_steps

    def update(self, inp):
        past = self.delay(self.delay_steps)
        noise = self.rng.normal(0.0, 0.1, self.x.shape)
        jitter = bm.random.uniform(-0.05, 0.05, self.x.shape)
        self.x.value = 0.8 * self.x + 0.5 * past + inp + noise + jitter
        self.delay.update(self.x.value)
        return self.x.value
