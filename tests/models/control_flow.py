"""BrainPy control flow whose closures change state: bm.for_loop over a stateful method and over
a nested function, bm.cond with one stateful branch; a Python `if` on static configuration."""

import brainpy as bp
import brainpy.math as bm


class LoopedRNN(bp.DynamicalSystem):
    def __init__(self, n_in, n, clip=True):
        super().__init__()
        self.clip = clip
        self.w_in = bm.TrainVar(bm.random.normal(0.0, 0.5, (n_in, n)))
        self.w_rec = bm.TrainVar(bm.random.normal(0.0, 0.3, (n, n)))
        self.h = bm.Variable(bm.zeros(n))
        self.steps = bm.Variable(bm.zeros((), dtype=bm.int32))

    def step(self, x):
        self.h.value = bm.tanh(x @ self.w_in + self.h @ self.w_rec)
        self.steps += 1
        return self.h.value

    def update(self, xs):
        hs = bm.for_loop(self.step, xs)
        return hs.sum(0)

    def gated(self, xs, gate):
        def body(x, g):
            h = self.step(x * g)
            if self.clip:  # static configuration: kept
                h = bm.clip(h, -0.5, 0.5)
            return h.mean()

        means = bm.for_loop(body, (xs, gate))
        bm.cond(means.sum() > 0.0, self.halve, lambda: None)
        return means

    def halve(self):
        self.h.value = self.h * 0.5

    def constrain(self):
        """Only weights change (between training steps): kept as it is, on the shared TrainVars."""
        self.w_rec.value = bm.clip(self.w_rec, -0.5, 0.5)


class Settling(bp.DynamicalSystem):
    """bm.while_loop whose body changes state and whose test reads it; bm.ifelse with a stateful branch."""

    def __init__(self, n):
        super().__init__()
        self.v = bm.Variable(bm.zeros(n))
        self.iterations = bm.Variable(bm.zeros((), dtype=bm.int32))

    def update(self, x):
        def relax(k, gain):
            self.v.value = 0.5 * self.v + gain * x
            self.iterations += 1
            return k + 1, gain * 0.9

        def unsettled(k, gain):
            return (k < 20) & (bm.abs(self.v - 2.0 * x).max() > 0.05)

        steps, _ = bm.while_loop(relax, unsettled, (0, 1.0))
        level = bm.ifelse([x.sum() > 2.0, x.sum() > 1.0], [self.clip_high, lambda: 1.0, lambda: 0.0])
        return steps, level

    def clip_high(self):
        self.v.value = bm.minimum(self.v, 1.5)
        return 2.0


class TraceBank(bp.DynamicalSystem):
    """Per-example state held in a bm.VarList and a bm.VarDict, read, written and iterated."""

    def __init__(self, n, taus=(2.0, 5.0, 10.0)):
        super().__init__()
        self.taus = taus
        self.traces = bm.VarList([bm.Variable(bm.zeros(n)) for _ in taus])
        self.stats = bm.VarDict({"peak": bm.Variable(bm.zeros(n)), "count": bm.Variable(bm.zeros(()))})

    def update(self, x):
        for i, tau in enumerate(self.taus):
            self.traces[i].value = self.traces[i] + (x - self.traces[i].value) / tau
        self.stats["peak"] = bm.maximum(self.stats["peak"], self.traces[0].value)
        self.stats["count"] += 1.0
        return sum(trace for trace in self.traces)
