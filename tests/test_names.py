"""BrainPy names however they are spelled: ``names.canonical`` against BrainPy itself.

BrainPy exports many classes from several modules (``bp.Projection`` is ``bp.dyn.Projection``);
batchify's tables list one spelling each. These tests hold the alias table to the installed
BrainPy and check the general rule: every spelling of one BrainPy object is recognised alike.
"""

from __future__ import annotations

import collections
import importlib
import inspect
from pathlib import Path

import pytest

from batchify import names, transform

HERE = Path(__file__).resolve().parent

# BrainPy's public namespaces a model imports from.
NAMESPACES = (
    "brainpy", "brainpy.dyn", "brainpy.dnn", "brainpy.dynsys", "brainpy.layers", "brainpy.neurons",
    "brainpy.synapses", "brainpy.rates", "brainpy.channels", "brainpy.synouts", "brainpy.synplast",
    "brainpy.math", "brainpy.math.object_transform", "brainpy.math.delayvars", "brainpy.initialize",
    "brainpy.integrators", "brainpy.integrators.ode", "brainpy.integrators.sde", "brainpy.helpers",
    "brainpy.connect", "brainpy.optim", "brainpy.mixin",
)


def resolve(qualified: str):
    """The object a dotted name stands for, as ``from a.b import c`` finds it (an attribute before a
    submodule of the same name: ``brainpy.math.object_transform.jit`` is the function)."""
    parts = qualified.split(".")
    value = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], start=2):
        try:
            value = getattr(value, part)
        except AttributeError:
            value = importlib.import_module(".".join(parts[:i]))
    return value


def recognised_as(qualified: str) -> tuple:
    """Every table a name is looked up in, for its canonical spelling."""
    q = names.canonical(qualified)
    return (q in names.MODEL_BASES, names.is_library(q), q in names.STATE_VARIABLES, q in names.PARAM_VARIABLES,
            q in names.STATE_FACTORIES, q in names.UNSUPPORTED_VARIABLES, q in names.VARIABLE_CONTAINERS,
            q in names.CONTROL_FLOW, q in names.SDE_INTEGRATORS, names.random_sampler(q), q in names.GLOBAL_KEY,
            q in names.MATRIX_PRODUCTS, q in names.KEPT_DECORATORS, q in names.DROPPED_DECORATORS,
            q in names.ENVIRONMENT_SETTERS, q in names.DETERMINISTIC_INITIALIZERS)


def spellings() -> dict[int, set[str]]:
    """``id(object) -> its public names`` over BrainPy's namespaces."""
    found = collections.defaultdict(set)
    for module_name in NAMESPACES:
        module = importlib.import_module(module_name)
        for name in dir(module):
            value = getattr(module, name)
            if not name.startswith("_") and (inspect.isclass(value) or callable(value)):
                found[id(value)].add(f"{module_name}.{name}")
    return found


@pytest.mark.parametrize("alias", sorted(names.NAME_ALIASES))
def test_every_alias_is_the_object_it_stands_for(alias: str) -> None:
    assert resolve(alias) is resolve(names.NAME_ALIASES[alias])


def test_module_aliases_are_the_same_module() -> None:
    for module, listed in names.MODULE_ALIASES:
        assert importlib.import_module(module.rstrip(".")) is resolve(listed.rstrip("."))


def test_every_spelling_of_a_brainpy_name_is_recognised_alike() -> None:
    """The general rule: two public names of one BrainPy object never classify differently (on main,
    ``brainpy.Projection`` was nothing while ``brainpy.dyn.Projection`` was library code, and
    ``brainpy.math.object_transform.TrainVar`` was no weight)."""
    differing = []
    for spelled in spellings().values():
        kinds = {q: recognised_as(q) for q in sorted(spelled)}
        if len(set(kinds.values())) > 1:
            differing.append(sorted(kinds.items()))
    assert not differing, differing


def test_canonical_leaves_other_names_alone() -> None:
    assert names.canonical("numpy.dot") == "numpy.dot"
    assert names.canonical("brainpy.math.Variable") == "brainpy.math.Variable"
    assert names.canonical("brainpy.initialize.variable_") == "brainpy.init.variable_"


def test_projection_classes_and_respelled_weights_are_batched() -> None:
    """A class derived from ``bp.Projection`` runs as library code, one example at a time, and a
    ``TrainVar`` imported from ``brainpy.math.object_transform`` is a weight. On main the network
    called ``self.E2E()`` unbatched (verify: FAIL, state diverging from step 1) and ``ReadoutParams``
    was empty: a harness would have trained no weight."""
    source = HERE / "models" / "projections.py"
    text = transform(source.read_bytes(), "projections.py", command="batchify").text
    body = text[text.index("class EINetBatched"):]
    for child in ("E2E", "E2I", "I2E", "I2I"):
        assert f"state, _ = self.library.call(params, state, self.{child})" in body
        assert f"        self.{child}()\n" not in body
    assert 'builtins=("E", "I", "E2E", "E2I", "I2E", "I2I")' in body
    readout = text[text.index("class ReadoutParams"):text.index("class ReadoutState")]
    assert "    w: jax.Array" in readout
