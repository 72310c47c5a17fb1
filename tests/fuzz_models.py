"""A seeded generator of single-example BrainPy model sources, for the transform's fuzz test.

Two kinds of input: classes grown from the constructs batchify supports (Variables, weights, a
child, aliases, in-place methods, indexed writes, configuration branches, loops, helpers) and
mutations of the bundled examples (lines dropped, duplicated or swapped, a CRLF line, a U+2028 or
form feed in a comment or string, an NFKC spelling of a name, a deep expression, a side effect).
Nothing here imports jax or brainpy: the sources are only transformed.
"""

from __future__ import annotations

import random
from pathlib import Path

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.py"))
EXAMPLES = [p for p in EXAMPLES if not p.stem.endswith("_batched")]

HEADER = """import brainpy as bp
import brainpy.math as bm
import jax.numpy as jnp

GAIN = 0.5


def scaled(v, k):
    return v * k


def bump(var, amount):
    var += amount
"""

CHILD = """

class Child{k}(bp.DynamicalSystem):
    def __init__(self, n):
        super().__init__()
        self.c = bm.Variable(bm.zeros(n))

    def update(self, x):
        self.c.value = 0.5 * self.c + x
        return self.c.value
"""


class ModelGrower:
    """One random model class, statement by statement, from the supported constructs."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.states = [f"s{i}" for i in range(rng.randint(1, 3))]
        self.weights = [f"w{i}" for i in range(rng.randint(0, 2))]
        self.child = rng.random() < 0.3

    def expr(self, depth: int = 0) -> str:
        r = self.rng
        leaves = ["x", *(f"self.{s}" for s in self.states), *(f"self.{s}.value" for s in self.states), "GAIN"]
        if depth > 2 or r.random() < 0.3:
            return r.choice(leaves)
        a, b = self.expr(depth + 1), self.expr(depth + 1)
        forms = [f"({a} + {b})", f"({a} * 0.5)", f"bm.tanh({a})", f"bm.where({a} > 0, {b}, 0.0)",
                 f"scaled({a}, 2.0)", f"jnp.clip({a}, -1.0, 1.0)", f"-{a}"]
        if self.weights:
            forms.append(f"({a} @ self.{r.choice(self.weights)})")
        return r.choice(forms)

    def statement(self, depth: int = 0) -> list[str]:
        r = self.rng
        s = r.choice(self.states)
        e = self.expr()
        choices = [
            [f"self.{s}.value = {e}"],
            [f"self.{s} += {e}"],
            [f"self.{s}[0] = {e}[0]"],
            [f"self.{s}.update({e})"],
            [f"v_{s} = self.{s}", f"v_{s} += {e}"],
            [f"tmp = {e}", f"self.{s}.value = tmp * 0.9"],
            [f"self.{s}.fill(0.1)"],
            [f"getattr(self, '{s}').value = {e}"],
            [f"a_, b_ = self.{s}, {e}", "a_ += b_"],
            [f"bump(self.{s}, {e})"],  # refused: a helper changing its argument
            [f"print({e})"],  # refused: a side effect per step
            [f"items = [self.{s}]"],  # refused: a Variable in a container
        ]
        if self.child:
            choices.append([f"out_c = self.child({e})", f"self.{s}.value = out_c"])
        if depth < 2:
            body = self.statement(depth + 1)
            choices.append(["if self.flag:", *("    " + b for b in body)])
            choices.append(["for k in range(2):", *("    " + b for b in body)])
        return r.choice(choices)

    def source(self, name: str = "Grown") -> str:
        r = self.rng
        init = ["super().__init__()", "self.flag = True"]
        init += [f"self.{w} = bm.TrainVar(bm.random.normal(0.0, 0.3, (n, n)))" for w in self.weights]
        init += [f"self.{s} = bm.Variable(bm.zeros(n))" for s in self.states]
        if self.child:
            init.append("self.child = Child0(n)")
        body: list[str] = []
        for _ in range(r.randint(1, 5)):
            body += self.statement()
        body.append(f"return {self.expr()}")
        reset = [f"self.{s}.value = bm.zeros_like(self.{s}.value)" for s in self.states]
        text = HEADER + (CHILD.format(k=0) if self.child else "")
        text += f"\n\nclass {name}(bp.DynamicalSystem):\n    def __init__(self, n):\n"
        text += "".join(f"        {line}\n" for line in init)
        text += "\n    def reset_state(self, batch_size=None):\n" + "".join(f"        {line}\n" for line in reset)
        text += "\n    def update(self, x):\n" + "".join(f"        {line}\n" for line in body)
        return text


def mutate(text: str, rng: random.Random) -> str:
    """One random mutation of a real model source."""
    lines = text.split("\n")
    kind = rng.choice(["drop", "duplicate", "swap", "crlf", "separator", "nfkc", "deep", "side_effect",
                       "indent", "tabs"])
    i = rng.randrange(len(lines))
    j = rng.randrange(len(lines))
    if kind == "drop":
        del lines[i]
    elif kind == "duplicate":
        lines.insert(i, lines[i])
    elif kind == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "crlf":
        lines[i] = lines[i] + "\r"
    elif kind == "separator":
        lines[i] = lines[i] + rng.choice(["  # a \u2028 separator", "  # a \x0c feed", "  # \u2029"])
    elif kind == "nfkc":
        return text.replace("self.V", "self.\uff36", 1).replace("self.h", "self.\uff48", 1)
    elif kind == "deep":
        depth = rng.choice([50, 150, 260, 600])
        lines.insert(i, " " * 8 + "deep = " + " + ".join(["1.0"] * depth))
    elif kind == "side_effect":
        lines.insert(i, " " * 8 + rng.choice(["print('step')", "bm.random.seed(1)", "CALLS.append(1)"]))
    elif kind == "indent":
        lines[i] = "    " + lines[i]
    elif kind == "tabs":
        lines[i] = lines[i].replace("    ", "\t", 1)
    return "\n".join(lines)


def inputs(seed: int, count: int):
    """``count`` sources, ``(name, text)``: grown classes and mutated examples, half each."""
    rng = random.Random(seed)
    originals = [p.read_text() for p in EXAMPLES]
    for k in range(count):
        if k % 2 == 0:
            yield f"grown-{seed}-{k}", ModelGrower(rng).source()
        else:
            text = rng.choice(originals)
            for _ in range(rng.randint(1, 3)):
                text = mutate(text, rng)
            yield f"mutated-{seed}-{k}", text
