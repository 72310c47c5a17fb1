"""The BrainPy names batchify recognises, by fully qualified name.

Import aliases (``import brainpy.math as bm``, ``from brainpy.math import Variable``,
``bp.math.Variable``) are resolved by LibCST's QualifiedNameProvider before these
tables are consulted, so each entry is written once, in its canonical spelling.
"""

from __future__ import annotations

# Variables that get a leading batch axis.
STATE_VARIABLES = frozenset({"brainpy.math.Variable"})

# Variables that stay shared across the batch: the weights.
PARAM_VARIABLES = frozenset({"brainpy.math.TrainVar", "brainpy.math.Parameter"})

# Containers and constructors of Variables that the core does not batch yet.
UNSUPPORTED_VARIABLES = frozenset(
    {
        "brainpy.math.VarList",
        "brainpy.math.VarDict",
        "brainpy.math.LengthDelay",
        "brainpy.math.TimeDelay",
        "brainpy.VarDelay",
        "brainpy.dyn.VarDelay",
        "brainpy.math.random.RandomState",
        "brainpy.math.RandomState",
        "brainpy.init.variable_",
        "brainpy.init.variable",
        "brainpy.initialize.variable_",
        "brainpy.initialize.variable",
        "brainpy.math.variable_",
        "brainpy.math.NodeList",
        "brainpy.math.NodeDict",
        "brainpy.Sequential",
    }
)

# Base classes that make a class a model and add no state of their own.
MODEL_BASES = frozenset(
    {
        "brainpy.DynamicalSystem",
        "brainpy.DynamicalSystemNS",
        "brainpy.DynSysGroup",
        "brainpy.Network",
        "brainpy.NeuGroup",
        "brainpy.NeuGroupNS",
        "brainpy.Dynamic",
        "brainpy.dyn.NeuDyn",
        "brainpy.dyn.SynDyn",
        "brainpy.dyn.Dynamic",
        "brainpy.dyn.DynamicalSystem",
        "brainpy.dnn.Layer",
        "brainpy.layers.Layer",
        "brainpy.dynsys.DynamicalSystem",
        "brainpy.dynsys.DynSysGroup",
        "brainpy.dynsys.Network",
    }
)

# Modules whose classes are BrainPy built-in models (neurons, synapses, layers).
BUILTIN_MODEL_PREFIXES = (
    "brainpy.dyn.",
    "brainpy.dnn.",
    "brainpy.layers.",
    "brainpy.neurons.",
    "brainpy.synapses.",
    "brainpy.rates.",
    "brainpy.channels.",
    "brainpy.experimental.",
)

# Random draws: each example would need its own stream.
RANDOM_PREFIXES = ("brainpy.math.random.", "jax.random.", "numpy.random.")


def is_builtin_model(qualified: str) -> bool:
    last = qualified.rsplit(".", 1)[-1]
    return (
        qualified not in MODEL_BASES
        and qualified.startswith(BUILTIN_MODEL_PREFIXES)
        and last[:1].isupper()
    )
