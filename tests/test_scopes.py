"""The analysis's own passes over the tree (issues 15 and 19: the transform at the cost of a parse)
against the LibCST providers they replace: scopes.py against ScopeProvider/QualifiedNameProvider,
positions.py against PositionProvider, cstwalk.walk against the dataclass fields of every node."""

from __future__ import annotations

import bisect
import dataclasses
import textwrap
import typing
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import GlobalScope, MetadataWrapper, PositionProvider, QualifiedNameProvider, ScopeProvider

from batchify.cstwalk import FORMATTING, _node_types, child_fields, walk
from batchify.positions import Positions
from batchify.scopes import Names

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted([*ROOT.glob("examples/**/*.py"), *ROOT.glob("tests/models/*.py"), *ROOT.glob("tests/cases/*.py")])
NAMED = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Decorator)


def libcst_metadata(module: cst.Module):
    return MetadataWrapper(module, unsafe_skip_copy=True).resolve_many(
        [QualifiedNameProvider, ScopeProvider, PositionProvider])


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_qualified_names_and_positions_are_libcsts(path: Path) -> None:
    module = cst.parse_module(path.read_text(encoding="utf-8"))
    metadata = libcst_metadata(module)
    names, positions = Names(module), Positions(module)
    checked = 0
    for node, qualified in metadata[QualifiedNameProvider].items():
        if isinstance(node, NAMED):
            qualified = qualified() if callable(qualified) else qualified
            assert {q.name for q in names.qualified_names(node)} == {q.name for q in qualified}, (
                module.code_for_node(node))
            checked += 1
    assert checked > 50
    assert all(positions[node] == where for node, where in metadata[PositionProvider].items())


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_level_references_are_libcsts(path: Path) -> None:
    """Which top-level statement reads a name another binds: what the generated module copies.
    (LibCST puts a decorator in the statement before its function, by its positions: a decorated
    module-level function is left out of the comparison, and test_a_decorator_... checks it.)"""
    module = cst.parse_module(path.read_text(encoding="utf-8"))
    metadata = libcst_metadata(module)
    firsts = [metadata[PositionProvider][s].start.line for s in module.body]

    def top(node):
        return bisect.bisect_right(firsts, metadata[PositionProvider][node].start.line) - 1

    global_scope = next(s for s in metadata[ScopeProvider].values() if isinstance(s, GlobalScope))
    decorated = {i for i, s in enumerate(module.body) if getattr(s, "decorators", None)}
    theirs = {(top(access.node), top(ref.node), ref.name)
              for scope in {s for s in metadata[ScopeProvider].values() if s is not None}
              for access in scope.accesses for ref in access.referents
              if getattr(ref, "scope", None) is global_scope and hasattr(ref, "node")}
    ours = {(user, binding.statement, name) for _, name, binding, user in Names(module).global_references()}
    # Reads of a name bound earlier in the same statement copy nothing (LibCST counts them).
    theirs = {t for t in theirs if t[0] != t[1] and t[0] + 1 not in decorated}
    ours = {t for t in ours if t[0] != t[1] and t[0] not in decorated}
    assert ours, "every model file's classes read an import"
    assert ours == theirs


def qualified(source: str, target: str) -> set[str]:
    """The qualified names of the first node spelled ``target`` (a Name, Attribute or Call)."""
    module = cst.parse_module(textwrap.dedent(source))
    node = next(n for n in walk(module) if isinstance(n, NAMED[:3]) and module.code_for_node(n) == target)
    return {q.name for q in Names(module).qualified_names(node)}


def test_imports_locals_and_builtins() -> None:
    assert qualified("import brainpy.math as bm\nx = bm.Variable(1)\n", "bm.Variable") == {"brainpy.math.Variable"}
    assert qualified("from brainpy import math\nx = math.zeros(3)\n", "math.zeros") == {"brainpy.math.zeros"}
    assert qualified("import brainpy.math\nx = brainpy.math.ones(2)\n", "brainpy.math.ones") == {"brainpy.math.ones"}
    assert qualified("from . import layers as L\ny = L.Dense\n", "L.Dense") == {".layers.Dense"}
    assert qualified("print(1)\n", "print") == {"builtins.print"}
    # A local of the same name hides the import: not BrainPy's.
    assert qualified("import brainpy.math as bm\ndef f(bm):\n    return bm.Variable(1)\n",
                     "bm.Variable") == {"f.<locals>.bm.Variable"}


def test_a_class_body_is_not_seen_from_its_methods() -> None:
    source = """
        import brainpy.math as bm
        class A:
            bm = None
            def f(self):
                return bm.zeros(3)
    """
    assert qualified(source, "bm.zeros") == {"brainpy.math.zeros"}


def test_global_and_comprehension_bindings() -> None:
    source = """
        import numpy as np
        def f():
            global np
            np = None
        def g(xs):
            return [np.abs(x) for x in xs]
    """
    module = cst.parse_module(textwrap.dedent(source))
    reads = {(user, binding.statement, name) for _, name, binding, user in Names(module).global_references()}
    # `np` is bound by the import and, through `global`, by f: g reads both statements.
    assert {(2, 0, "np"), (2, 1, "np")} <= reads
    assert not any(name == "x" for _, _, name in reads)


def test_a_decorator_is_read_by_its_own_statement() -> None:
    source = "import functools\n\n\n@functools.cache\ndef f():\n    return 1\n"
    module = cst.parse_module(source)
    assert {(user, b.statement, name) for _, name, b, user in Names(module).global_references()} == {
        (1, 0, "functools")}


def reference_walk(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        children = []
        for f in dataclasses.fields(current):
            value = getattr(current, f.name)
            if isinstance(value, cst.CSTNode):
                children.append(value)
            elif isinstance(value, (list, tuple)):
                children.extend(v for v in value if isinstance(v, cst.CSTNode))
        stack.extend(reversed(children))


@pytest.mark.parametrize("path", FILES[:12], ids=lambda p: str(p.relative_to(ROOT)))
def test_the_walk_is_every_node_but_formatting_in_order(path: Path) -> None:
    module = cst.parse_module(path.read_text(encoding="utf-8"))
    assert list(walk(module)) == [n for n in reference_walk(module) if not isinstance(n, FORMATTING)]


NODE_CLASSES = sorted((c for c in vars(cst).values() if isinstance(c, type) and issubclass(c, cst.CSTNode)
                       and dataclasses.is_dataclass(c) and not c.__abstractmethods__), key=lambda c: c.__name__)


@pytest.mark.parametrize("node_type", NODE_CLASSES, ids=lambda c: c.__name__)
def test_child_fields_read_every_annotation_as_typing_resolves_it(node_type: type) -> None:
    """child_fields reads annotations as objects, and resolves them only where one names a class by a
    string: on main a shortcut reading them all as objects missed ``Sequence["MatchCase"]``, and a
    method holding a ``match`` statement was not rewritten."""
    hints = typing.get_type_hints(node_type)
    expected = tuple(f.name for f in dataclasses.fields(node_type)
                     if not all(issubclass(t, FORMATTING) for t in _node_types(hints[f.name])))
    assert child_fields(node_type) == expected


def test_the_walk_reaches_into_match_statements() -> None:
    module = cst.parse_module("match x:\n    case 1:\n        y = f(a)\n    case _:\n        pass\n")
    names = [n.value for n in walk(module) if type(n) is cst.Name]
    assert names == ["x", "y", "f", "a"]


DECORATED_HELPER = '''
import functools

import brainpy as bp
import brainpy.math as bm

PLOT_WIDTH = 8


@functools.lru_cache(maxsize=None)
def decay_of(tau):
    return 1.0 - 1.0 / tau


class Leaky(bp.DynamicalSystem):
    def __init__(self, n, tau=10.0):
        super().__init__()
        self.tau = tau
        self.v = bm.Variable(bm.zeros(n))

    def update(self, x):
        self.v.value = self.v * decay_of(self.tau) + x
        return self.v.value
'''


def test_a_decorated_helper_brings_its_decorators_import() -> None:
    """The decorator's ``functools`` is read by the helper's statement. With LibCST's positions it
    was read by the statement before (``PLOT_WIDTH = 8``, not copied), and the transform ended in
    BFY900: "the generated module reads 'functools', which it never binds"."""
    from batchify import transform

    text = transform(DECORATED_HELPER.encode(), "leaky.py", command="batchify leaky.py").text
    assert "import functools\n" in text and "@functools.lru_cache" in text
    assert "PLOT_WIDTH" not in text
