"""What the names of a module stand for: one pass over its scopes.

It answers the two questions analysis asks, as LibCST's ScopeProvider answers them:

- the qualified names of an expression (``bm.Variable`` -> ``brainpy.math.Variable`` after
  ``import brainpy.math as bm``; ``print`` -> ``builtins.print``), asked only of the nodes a rule
  looks at;
- which module-level bindings each top-level statement's code refers to (what the generated
  module must copy).

LibCST's provider (with the ExpressionContextProvider it needs) visits every node of the module,
whitespace included, through its visitor dispatch: 40 % of a small file's transform and 4 s of a
10,000-line one. This pass walks only the nodes that can bind or read a name (cstwalk's walk
leaves formatting out) with the same scoping rules: function, lambda and comprehension scopes,
class bodies invisible from the functions inside them, ``global``/``nonlocal``, dotted imports
(``import a.b`` binds ``a`` and ``a.b``), a comprehension's first iterable read outside it, and at
module level only the bindings of earlier statements. String annotations are not parsed for names.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import QualifiedName, QualifiedNameSource

from batchify.cstwalk import child_fields, is_node

BUILTINS = frozenset(dir(builtins))
COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


class Scope:
    __slots__ = ("kind", "name", "parent", "bindings", "globals", "nonlocals")

    def __init__(self, kind: str, name: str | None, parent: Scope | None):
        self.kind, self.name, self.parent = kind, name, parent  # kind: module, class, function, comprehension
        self.bindings: dict[str, list[Binding]] = {}
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()

    def lookup(self, name: str) -> list[Binding]:
        """The bindings ``name`` read here refers to ([] for a builtin or an unbound name)."""
        scope: Scope | None = self
        first = True
        while scope is not None:
            if scope.kind == "class" and not first:
                scope = scope.parent  # a class body's names are not visible in the functions inside it
                continue
            if name in scope.globals:
                return scope.module().bindings.get(name, [])
            if name in scope.bindings and name not in scope.nonlocals:
                return scope.bindings[name]
            scope, first = scope.parent, False
        return []

    def module(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope

    def prefix(self) -> str:
        """How LibCST qualifies a name bound here: ``f.<locals>``, ``Foo``, ``<comprehension>``."""
        if self.parent is None:
            return ""
        own = ([self.name] if self.kind == "class" else [self.name, "<locals>"] if self.kind == "function"
               else ["<comprehension>"])
        return ".".join(p for p in (self.parent.prefix(), *own) if p)

    def target(self, name: str) -> Scope:
        """Where an assignment of ``name`` here binds (``global``/``nonlocal`` move it)."""
        if name in self.globals:
            return self.module()
        if name in self.nonlocals and self.parent is not None:
            scope = self.parent
            while scope.kind == "class" and scope.parent is not None:
                scope = scope.parent
            return scope.target(name)
        return self


class Binding:
    __slots__ = ("name", "node", "scope", "statement", "index")

    def __init__(self, name: str, node: cst.CSTNode, scope: Scope, statement: int):
        # node: the Import/ImportFrom, the FunctionDef/ClassDef, or the bound Name (or Param)
        self.name, self.node, self.scope, self.statement = name, node, scope, statement

    def qualified_names(self, full_name: str) -> set[QualifiedName]:
        if type(self.node) in (cst.Import, cst.ImportFrom):
            return _imported(self.node, full_name)
        prefix = self.scope.prefix()
        return {QualifiedName(f"{prefix}.{full_name}" if prefix else full_name, QualifiedNameSource.LOCAL)}


def _imported(node: cst.Import | cst.ImportFrom, full_name: str) -> set[QualifiedName]:
    """LibCST's ImportAssignment.get_qualified_names_for."""
    module = ""
    if type(node) is cst.ImportFrom:
        module = (get_full_name_for_node(node.module) or "") if node.module else ""
        if node.relative:
            module = "." * len(node.relative) + module
    out: set[QualifiedName] = set()
    if type(node.names) is cst.ImportStar:
        return out
    for alias in node.names:
        dotted = get_full_name_for_node(alias.name)
        if not dotted:
            continue
        parts = dotted.split(".")
        for real_name in (".".join(parts[:i]) for i in range(len(parts), 0, -1)):
            as_name = real_name
            if module.endswith("."):
                real_name = f"{module}{real_name}"
            elif module:
                real_name = f"{module}.{real_name}"
            if alias.asname is not None:
                as_name = alias.evaluated_alias or as_name
            if full_name.startswith(as_name):
                rest = full_name.split(as_name, 1)[1]
                if rest and not rest.startswith("."):
                    continue
                rest = rest.lstrip(".")
                out.add(QualifiedName(f"{real_name}.{rest}" if rest else real_name, QualifiedNameSource.IMPORT))
                break
    return out


def _dotted_prefixes(dotted: str) -> Iterator[str]:
    """``a.b.c`` -> ``a.b.c``, ``a.b``, ``a``."""
    while True:
        yield dotted
        cut = dotted.rfind(".")
        if cut < 0:
            return
        dotted = dotted[:cut]


class Names:
    """The scopes of ``module``: ``qualified_names(node)`` and ``global_references()``."""

    def __init__(self, module: cst.Module):
        self.global_scope = Scope("module", None, None)
        self.scope_of: dict[cst.CSTNode, Scope] = {}
        self.bound_by: dict[cst.CSTNode, Binding] = {}  # the node a binding records -> the binding
        # Reads of a name: (the Name, or the Attribute a dotted import names; its scope; its statement).
        self.reads: list[tuple[cst.CSTNode, str, Scope, int]] = []
        for index, statement in enumerate(module.body):
            self._walk(statement, index)

    # -- one pass ----------------------------------------------------------------------------
    def _bind(self, name: str, node: cst.CSTNode, scope: Scope, statement: int) -> None:
        scope = scope.target(name)
        binding = Binding(name, node, scope, statement)
        scope.bindings.setdefault(name, []).append(binding)
        self.bound_by.setdefault(node, binding)

    def _walk(self, root: cst.CSTNode, statement: int) -> None:
        # (node, scope, store): store marks an assignment target
        stack: list[tuple[cst.CSTNode, Scope, bool]] = [(root, self.global_scope, False)]
        scope_of, bind = self.scope_of, self._bind
        while stack:
            node, scope, store = stack.pop()
            scope_of[node] = scope
            kind = type(node)
            if kind is cst.Name:
                if store:
                    bind(node.value, node, scope, statement)
                else:
                    self.reads.append((node, node.value, scope, statement))
                continue
            later: list[tuple[cst.CSTNode, Scope, bool]] = []  # visited in this order
            if kind is cst.Attribute:
                if store:  # `a.b = ...` binds nothing; `a` is read
                    later.append((node.value, scope, False))
                else:
                    head = node
                    while type(head) is cst.Attribute:
                        head = head.value
                    if type(head) is cst.Name:  # `a.b.c`: a read of `a`, or of `a.b` where an import binds it
                        self.reads.append((node, get_full_name_for_node(node) or head.value, scope, statement))
                        scope_of[head] = scope
                        inner = node.value  # (an attribute's own name has no scope, as in LibCST)
                        while type(inner) is cst.Attribute:
                            scope_of[inner] = scope
                            inner = inner.value
                        continue
                    later.append((node.value, scope, False))
            elif kind in (cst.Import, cst.ImportFrom):
                if type(node.names) is not cst.ImportStar:
                    for alias in node.names:
                        scope_of[alias] = scope
                        if alias.asname is not None:
                            bind(alias.asname.name.value, node, scope, statement)
                        else:
                            for dotted in _dotted_prefixes(get_full_name_for_node(alias.name) or ""):
                                bind(dotted, node, scope, statement)
                continue
            elif kind is cst.FunctionDef or kind is cst.Lambda:
                inner = Scope("function", node.name.value if kind is cst.FunctionDef else None, scope)
                if kind is cst.FunctionDef:
                    bind(node.name.value, node, scope, statement)
                    scope_of[node.name] = scope
                    later.extend((d, scope, False) for d in node.decorators)
                    if node.returns is not None:
                        later.append((node.returns, scope, False))
                params = node.params
                for param in (*params.posonly_params, *params.params, *params.kwonly_params,
                              *(p for p in (params.star_arg, params.star_kwarg) if type(p) is cst.Param)):
                    bind(param.name.value, param, inner, statement)
                    scope_of[param] = scope_of[param.name] = inner
                    later.extend((v, scope, False) for v in (param.default, param.annotation) if v is not None)
                later.append((node.body, inner, False))
            elif kind is cst.ClassDef:
                bind(node.name.value, node, scope, statement)
                scope_of[node.name] = scope
                later.extend((d, scope, False) for d in node.decorators)
                later.extend((b.value, scope, False) for b in (*node.bases, *node.keywords))
                later.append((node.body, Scope("class", node.name.value, scope), False))
            elif kind is cst.TypeAlias:  # `type Arr = bm.Array` (Python 3.12) binds Arr
                bind(node.name.value, node, scope, statement)
                scope_of[node.name] = scope
                later.append((node.value, scope, False))
            elif kind in COMPREHENSIONS:
                for_in = node.for_in
                later.append((for_in.iter, scope, False))
                inner = Scope("comprehension", None, scope)
                while for_in is not None:
                    scope_of[for_in] = inner
                    later.append((for_in.target, inner, True))
                    if for_in is not node.for_in:
                        later.append((for_in.iter, inner, False))
                    later.extend((c, inner, False) for c in for_in.ifs)
                    for_in = for_in.inner_for_in
                later.extend((e, inner, False) for e in ((node.key, node.value) if kind is cst.DictComp
                                                          else (node.elt,)))
            elif kind is cst.Global or kind is cst.Nonlocal:
                (scope.globals if kind is cst.Global else scope.nonlocals).update(n.name.value for n in node.names)
                continue
            elif kind is cst.Arg:
                later.append((node.value, scope, False))
            elif kind is cst.Assign:
                later.extend((t.target, scope, True) for t in node.targets)
                later.append((node.value, scope, False))
            elif kind is cst.AnnAssign or kind is cst.AugAssign:
                later.append((node.target, scope, True))
                if kind is cst.AnnAssign:
                    later.append((node.annotation, scope, False))
                if node.value is not None:
                    later.append((node.value, scope, False))
            elif kind is cst.For:
                later.append((node.target, scope, True))
                later.extend((v, scope, False) for v in (node.iter, node.body, node.orelse) if v is not None)
            elif kind is cst.NamedExpr:
                target_scope = scope  # a walrus in a comprehension binds in the enclosing function
                while target_scope.kind == "comprehension" and target_scope.parent is not None:
                    target_scope = target_scope.parent
                later.append((node.target, target_scope, True))
                later.append((node.value, scope, False))
            elif kind is cst.AsName:  # `with ... as x`, `except E as x`
                later.append((node.name, scope, True))
            elif kind in (cst.MatchAs, cst.MatchStar):
                if node.name is not None:
                    later.append((node.name, scope, True))
                if kind is cst.MatchAs and node.pattern is not None:
                    later.append((node.pattern, scope, False))
            elif store and kind in (cst.Tuple, cst.List):
                later.extend((el.value, scope, True) for el in node.elements)
            elif store and kind is cst.StarredElement:
                later.append((node.value, scope, True))
            elif store and kind is cst.Subscript:
                later.append((node.value, scope, False))
                later.extend((s, scope, False) for s in node.slice)
            else:
                for field in child_fields(kind):
                    value = getattr(node, field)
                    if is_node(value):
                        later.append((value, scope, False))
                    elif type(value) is tuple or type(value) is list:
                        later.extend((v, scope, False) for v in value if is_node(v))
            stack.extend(reversed(later))

    # -- questions ---------------------------------------------------------------------------
    def qualified_names(self, node: cst.CSTNode) -> set[QualifiedName]:
        """LibCST's ``scope.get_qualified_names_for(node)``; empty for a node outside the module."""
        scope = self.scope_of.get(node)
        full_name = get_full_name_for_node(node)
        if scope is None or full_name is None:
            return set()
        own = self.bound_by.get(node)
        if own is not None and type(own.node) not in (cst.Import, cst.ImportFrom):
            return own.qualified_names(full_name)  # the name an assignment binds
        for prefix in _dotted_prefixes(full_name):
            found = scope.lookup(prefix)
            if found:
                out: set[QualifiedName] = set()
                for binding in found:
                    out |= binding.qualified_names(full_name)
                return out
        head = full_name.split(".", 1)[0]
        if head in BUILTINS:
            return {QualifiedName(f"builtins.{head}", QualifiedNameSource.BUILTIN)}
        return set()

    def __contains__(self, node: object) -> bool:
        return node in self.scope_of

    def global_references(self) -> Iterator[tuple[cst.CSTNode, str, Binding, int]]:
        """``(reading node, name, module-level binding, index of the reading top-level statement)``
        for every read of a module-level name (the node: the Name, or the part of an attribute chain
        a dotted import binds); a read at module level refers to the bindings of earlier statements."""
        for node, dotted, scope, statement in self.reads:
            for name in _dotted_prefixes(dotted):
                found = scope.lookup(name)
                if not found:
                    continue
                if type(node) is cst.Attribute:
                    for _ in range(dotted.count(".") - name.count(".")):
                        node = node.value
                for binding in found:
                    if binding.scope is self.global_scope and (
                            scope is not self.global_scope or binding.statement < statement):
                        yield node, name, binding, statement
                break
