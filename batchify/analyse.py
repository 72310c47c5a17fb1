"""Stage 2: read-only analysis of a parsed module into a :class:`ModuleIR`.

Import aliases and module-level dependencies are resolved by one pass over the module's scopes
(scopes.py), positions come from one code generation (positions.py); nothing here rewrites code.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping

import libcst as cst
from libcst.metadata import QualifiedName, QualifiedNameSource

from batchify import names
from batchify.aliases import Known, Normaliser, bound_names, module_lambdas, side_effects
from batchify.drivers import driver_methods, returns_aux
from batchify.cstwalk import Transformer, assigned, param_names, self_path, walk
from batchify.diagnostics import BatchifyError, Diagnostic
from batchify.ir import Child, Field, Method, ModelClass, ModuleIR
from batchify.positions import Positions
from batchify.scopes import Names

# Attributes and methods the generated batched class defines: a model's Variable of such a name is
# renamed on the batched class (`self.state_`), a method of such a name is refused (BFY010).
RESERVED = names.RESERVED


# Fields of the generated State besides the model's own: a Variable may not take these names.
STATE_RESERVED = frozenset({"rng_key", "library"})


class QualifiedNames(Mapping):
    """``node -> {QualifiedName}`` (scopes.py), asked when a rule needs it; a node normalisation
    makes (aliases.py) is named like the node it replaces."""

    def __init__(self, names: Names):
        self.names = names
        self.replaced: dict[cst.CSTNode, cst.CSTNode] = {}  # new node -> the original it replaces
        self.methods: dict[cst.CSTNode, QualifiedName] = {}  # `self.init_variable`: BrainPy's inherited method

    def __getitem__(self, key):
        key = self.replaced.get(key, key)
        if key in self.methods:
            return {self.methods[key]}
        found = self.names.qualified_names(key)
        # One spelling per BrainPy name (names.canonical): `bp.Projection` as `bp.dyn.Projection`.
        return {q if names.canonical(q.name) == q.name else QualifiedName(names.canonical(q.name), q.source)
                for q in found}

    def __contains__(self, key) -> bool:
        return key in self.replaced or key in self.methods or key in self.names

    def __iter__(self):
        return iter(self.names.scope_of)

    def __len__(self) -> int:
        return len(self.names.scope_of)


class Analysis:
    """Holds the metadata of one module and the diagnostics found so far."""

    def __init__(self, module: cst.Module, path: str):
        self.path = path
        self.module = module
        self.names = Names(module)
        self.qualified = QualifiedNames(self.names)
        # Positions of the source, and of the nodes normalisation makes (at the place they replace).
        self.positions = Positions(self.module)
        self.diagnostics: list[Diagnostic] = []
        # ids of the Variable constructions inside lambdas that only make one (name_factories)
        self.factory_bodies: set[int] = set()
        # module-level functions that make a Variable but are not factories (reported where assigned)
        self.variable_makers: set[str] = set()

    # -- helpers -----------------------------------------------------------
    def qualified_names(self, node: cst.CSTNode) -> set[str]:
        return {q.name for q in self.qualified.get(node, ())}

    def report(self, node: cst.CSTNode, code: str, message: str) -> None:
        pos = self.positions[node]
        self.diagnostics.append(
            Diagnostic(
                self.path, pos.start.line, pos.start.column + 1, code, message,
                pos.end.line, pos.end.column + 1,
            )
        )

    def inherit(self, new: cst.CSTNode, old: cst.CSTNode) -> None:
        """``new`` replaces ``old`` (aliases.py): it has ``old``'s position and qualified names."""
        self.positions.inherit(new, old)
        if old in self.qualified:
            self.qualified.replaced[new] = self.qualified.replaced.get(old, old)

    def diagnostic(self, node: cst.CSTNode, code: str, message: str) -> Diagnostic:
        self.report(node, code, message)
        return self.diagnostics.pop()


def is_super_call(func: cst.BaseExpression) -> bool:
    """``super().m``"""
    return (type(func) is cst.Attribute and type(func.value) is cst.Call
            and type(func.value.func) is cst.Name and func.value.func.value == "super")


def deterministic_initializer(call: cst.Call, qualified_names: Callable[[cst.CSTNode], set[str]]) -> bool:
    """``bp.init.variable_(bm.zeros, ...)``: its initializer draws no random numbers."""
    init = call.args[0].value if call.args else None
    if type(init) is cst.Call and "functools.partial" in qualified_names(init.func) and init.args:
        init = init.args[0].value  # `partial(bm.zeros, dtype=bool)`
    elif type(init) is cst.Call:
        init = init.func
    if type(init) in (cst.Integer, cst.Float):
        return True
    return init is not None and bool(qualified_names(init) & names.DETERMINISTIC_INITIALIZERS)


def is_none(node: cst.CSTNode | None) -> bool:
    return type(node) is cst.Name and node.value == "None"


def may_be_none(value: cst.BaseExpression | None) -> bool:
    """``None``, or ``A(n) if c else None``: an attribute that may hold nothing."""
    if type(value) is cst.IfExp:
        return may_be_none(value.body) or may_be_none(value.orelse)
    return is_none(value)


def element_pairs(target: cst.BaseExpression, value: cst.BaseExpression) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """``(target, value)`` pairs of an assignment: one, or each element of a tuple (or list) target
    with its own element of a tuple value of the same length (no starred element)."""
    kinds = (cst.Tuple, cst.List)
    if (type(target) in kinds and type(value) in kinds and len(target.elements) == len(value.elements)
            and all(type(e) is cst.Element for e in (*target.elements, *value.elements))):
        return [(t.value, v.value) for t, v in zip(target.elements, value.elements)]
    return [(target, value)]


def definitely_assigned(body, me: str, helpers: Mapping[str, cst.FunctionDef] | None = None) -> set[str]:
    """``self.NAME`` attributes assigned on every path through ``body`` (both arms of an if/else),
    other than with ``None`` (``self.b = None``, ``A(n) if c else None``: nothing there on that path),
    and by the construction helpers it calls as statements (``self._init_state(n)``)."""
    helpers = helpers or {}
    out: set[str] = set()
    for stmt in body:
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                called = own_call(small, me)
                if called in helpers:
                    helper = helpers[called]
                    out |= definitely_assigned(helper.body.body, self_name_of(helper) or "self",
                                               {k: v for k, v in helpers.items() if k != called})
                if type(small) in (cst.Assign, cst.AnnAssign) and may_be_none(small.value):
                    continue
                targets = [t.target for t in small.targets] if type(small) is cst.Assign else (
                    [small.target] if type(small) is cst.AnnAssign else [])
                for target in targets:
                    for element, _ in element_pairs(target, small.value) if small.value is not None else ():
                        path = self_path(element, me)
                        if path and len(path) == 1:
                            out.add(path[0])
        elif type(stmt) is cst.If:
            orelse = stmt.orelse
            other = (definitely_assigned([orelse], me, helpers) if type(orelse) is cst.If
                     else definitely_assigned(orelse.body.body, me, helpers) if type(orelse) is cst.Else else set())
            out |= definitely_assigned(stmt.body.body, me, helpers) & other
        elif type(stmt) is cst.With:
            out |= definitely_assigned(stmt.body.body, me, helpers)
    return out


def own_call(stmt: cst.CSTNode, me: str, supers: bool = False) -> str | None:
    """``m`` of a statement ``self.m(...)`` (and, with ``supers``, ``super().m(...)``)."""
    if type(stmt) is cst.Expr and type(stmt.value) is cst.Call:
        func = stmt.value.func
        if supers and type(func) is cst.Attribute and is_super_call(func):
            return func.attr.value
        path = self_path(func, me)
        return path[0] if path and len(path) == 1 else None
    return None


CONSTRUCTION_EXCLUDED = frozenset({"__init__", "reset_state", "update", "__call__"})


def builds_the_base(func: cst.FunctionDef) -> bool:
    """``reset_state`` or a constructor run from ``func`` (``self.reset_state(self.mode)``,
    ``super().__init__()``): the batched constructor rewrites those in ``__init__`` only."""
    return any(type(node) is cst.Name and node.value in ("reset_state", "__init__") for node in walk(func.body))


def construction_helpers(a: Analysis, cls: cst.ClassDef,
                         models: Mapping[str, cst.ClassDef]) -> dict[str, cst.FunctionDef]:
    """Methods that only construction runs (``self._init_weights(n)`` as a statement of an ``__init__``
    of the class or of a same-file base, or of another such method; an override calling
    ``super()._init_state(n)``), which nothing else in the file names: the Variables and children they
    create are built with the object, as ``__init__``'s own are. The class's own, in source order."""
    chain = [cls]
    while (base := model_base(a, chain[-1], models)) is not None and models[base] not in chain:
        chain.append(models[base])  # the class and its same-file bases: their constructors run for it
    defs: dict[str, list[cst.FunctionDef]] = {}
    for c in chain:
        for f in c.body.body:
            if type(f) is cst.FunctionDef:
                defs.setdefault(f.name.value, []).append(f)
    names: set[str] = set()
    todo = list(defs.get("__init__", ()))
    while todo:
        func = todo.pop(0)
        me = self_name_of(func) or "self"
        for node in walk(func.body):
            name = own_call(node, me, supers=func.name.value != "__init__")
            if (name in defs and name not in names and name not in CONSTRUCTION_EXCLUDED
                    and all(not f.decorators and self_name_of(f) and not builds_the_base(f) for f in defs[name])):
                names.add(name)
                todo += defs[name]
    if not names:
        return {}
    # Any other mention of such a method (a stepping method calling it, a callback, another class
    # of the file calling it) and it is not construction only; a subclass's override is its own.
    # ``self.NAME`` in a class unrelated to this one (neither a base nor a subclass) is that class's
    # own method of the same name, not this one.
    def related(other: cst.ClassDef) -> bool:
        line = [other]
        while (up := model_base(a, line[-1], models)) is not None and models[up] not in line:
            line.append(models[up])
        return cls in line or other in chain

    allowed: set[int] = set()
    for node in walk(a.module):
        if type(node) is cst.ClassDef and not related(node):
            for f in node.body.body:
                if type(f) is cst.FunctionDef and (me := self_name_of(f)):
                    allowed |= {id(n.attr) for n in walk(f.body) if type(n) is cst.Attribute
                                and type(n.value) is cst.Name and n.value.value == me and n.attr.value in names}
        if type(node) is cst.ClassDef:
            for f in node.body.body:
                if type(f) is not cst.FunctionDef or f.name.value not in names | {"__init__"}:
                    continue
                allowed.add(id(f.name))
                me = self_name_of(f) or "self"
                allowed |= {id(n.value.func.attr) for n in walk(f.body)
                            if own_call(n, me, supers=f.name.value != "__init__") in names}
    mentioned = {node.value for node in walk(a.module) if type(node) is cst.Name and id(node) not in allowed
                 and node.value in names}
    return {f.name.value: f for f in cls.body.body if type(f) is cst.FunctionDef
            and f.name.value in names - mentioned}


def calls_own(func: cst.FunctionDef, method: str) -> bool:
    """``self.<method>(...)`` as a statement of ``func``'s body."""
    me = self_name_of(func)
    for stmt in func.body.body:
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                if (type(small) is cst.Expr and type(small.value) is cst.Call
                        and self_path(small.value.func, me or "self") == [method]):
                    return True
    return False


def resets_at_init(init: cst.FunctionDef | None, calls_reset: bool, base: ModelClass | None) -> bool:
    """Whether constructing the class runs ``reset_state`` (this class's, the most derived one): its own
    ``__init__`` calls ``self.reset_state(...)``, or runs a base's ``__init__`` that does
    (``super().__init__(n)``); a class without an ``__init__`` of its own runs its base's."""
    if init is None:
        return base.init_resets if base is not None else True
    return calls_reset or (base is not None and base.init_resets and calls_super_init(init))


def calls_super_init(init: cst.FunctionDef) -> bool:
    """``super().__init__(...)``, ``super(Cls, self).__init__(...)`` or ``Base.__init__(self, ...)`` in ``init``."""
    return any(type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value == "__init__"
               and (is_super_call(n.func) or type(n.func.value) is cst.Name) for n in walk(init.body))


def explicit_base_calls(func: cst.FunctionDef, me: str, below: dict[str, str | None],
                        inherit: Callable[[cst.CSTNode, cst.CSTNode], None]) -> cst.FunctionDef:
    """``Base.update(self, x)``, a base's method called through its class, as ``super().update(x)``
    (``super(Mid, self).update(x)`` for a base further up, Mid the class just below it), the form
    the rules know. ``below``: each model base of the class -> the class below it, None for its own."""
    if not below or not any(type(n) is cst.Call and type(n.func) is cst.Attribute and type(n.func.value) is cst.Name
                            and n.func.value.value in below for n in walk(func.body)):
        return func  # the usual case: no base method called through its class
    new = func.visit(_BaseCallsAsSuper(me, below, inherit))
    inherit(new, func)
    return new


class _BaseCallsAsSuper(Transformer):
    """explicit_base_calls' rewrite."""

    def __init__(self, me: str, below: dict[str, str | None], inherit: Callable[[cst.CSTNode, cst.CSTNode], None]):
        super().__init__()
        self.me, self.below, self.inherit = me, below, inherit

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func, args = updated.func, updated.args
        if not (type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value in self.below
                and args and args[0].keyword is None and not args[0].star
                and type(args[0].value) is cst.Name and args[0].value.value == self.me):
            return updated
        named = self.below[func.value.value]
        zuper = cst.Call(cst.Name("super"),
                         [] if named is None else [cst.Arg(cst.Name(named)), cst.Arg(cst.Name(self.me))])
        new = updated.with_changes(func=func.with_changes(value=zuper),
                                   args=[a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args[1:]])
        self.inherit(new, original)
        self.inherit(new.func, original.func)
        return new


def self_name_of(func: cst.FunctionDef) -> str | None:
    params = [*func.params.posonly_params, *func.params.params]  # (`def update(self, x, /)`: self is positional-only)
    return params[0].name.value if params else None


def accessor_of(func: cst.FunctionDef) -> str | None:
    """``tau`` for ``@tau.setter`` (or ``.deleter``, ``.getter``) ``def tau(self, value)``: a part of the
    property ``tau``, not a method of its own (the class keeps one ``tau``, the property)."""
    for dec in func.decorators:
        d = dec.decorator
        if (type(d) is cst.Attribute and type(d.value) is cst.Name and d.value.value == func.name.value
                and d.attr.value in ("setter", "deleter", "getter")):
            return func.name.value
    return None


def method_kind(a: Analysis, func: cst.FunctionDef) -> str:
    kinds = {"staticmethod": "static", "classmethod": "class", "property": "property"}
    for dec in func.decorators:
        for qn in a.qualified_names(dec.decorator):
            if qn.startswith("builtins.") and qn[9:] in kinds:
                return kinds[qn[9:]]
        if type(dec.decorator) is cst.Name and dec.decorator.value in kinds:
            return kinds[dec.decorator.value]
    return "method"


STAR_IMPORTED = ("brainpy", "jax", "numpy")


def refuse_star_imports(a: Analysis) -> None:
    """``from brainpy.math import *``: batchify tells a Variable, a model base or a random draw by the
    name it was imported under, which a star import hides (BFY012, before anything misreads it)."""
    for stmt in a.module.body:
        for small in stmt.body if type(stmt) is cst.SimpleStatementLine else ():
            if type(small) is cst.ImportFrom and type(small.names) is cst.ImportStar and small.module is not None:
                module = cst.Module([]).code_for_node(small.module)
                if module.split(".")[0] in STAR_IMPORTED:
                    a.report(small, "BFY012", f"from {module} import * hides which names come from {module}, "
                             "and batchify tells a Variable, a model base or a random draw by its imported name: "
                             f"import the module (import {module} as ...) or the names you use "
                             f"(from {module} import ...)")
    if any(d.code == "BFY012" for d in a.diagnostics):
        raise BatchifyError(a.diagnostics)


def find_model_classes(a: Analysis) -> dict[str, cst.ClassDef]:
    top = [s for s in a.module.body if type(s) is cst.ClassDef]
    models: dict[str, cst.ClassDef] = {}
    changed = True
    while changed:  # a class is a model if a base is a BrainPy model base or a model of this file
        changed = False
        for cls in top:
            if cls.name.value in models:
                continue
            for base in cls.bases:
                qn = a.qualified_names(base.value)
                local = type(base.value) is cst.Name and base.value.value in models
                if qn & names.MODEL_BASES or local:
                    models[cls.name.value] = cls
                    changed = True
                    break
    # `class Test` twice (a notebook's cells): Python binds the last, code between them uses the first;
    # the batched module has one TestBatched, so which one is meant is the user's to say.
    for cls in top:
        first = models.get(cls.name.value)
        if first is not None and cls is not first:
            a.report(cls.name, "BFY014", f"class {cls.name.value} is defined again here (first at line "
                     f"{a.positions[first].start.line}): Python binds this one, code before it uses the first, "
                     f"and batchify batches one class per name; rename one of them")
    return models


def updateless(a: Analysis, node: cst.ClassDef) -> bool:
    """Whether a class's BrainPy model bases are all bp.BrainPyObject (no update of BrainPy's)."""
    found = {q for b in node.bases for q in a.qualified_names(b.value) if q in names.MODEL_BASES}
    return bool(found) and found <= names.UPDATELESS_BASES


def find_library_classes(a: Analysis, models: dict[str, cst.ClassDef]) -> dict[str, str]:
    """Classes of this file deriving from a concrete BrainPy built-in (``class COBA(bp.dyn.SynOut)``):
    their Variables are created by BrainPy, so an attribute holding one is library code too.
    ``name -> the built-in it derives from``."""
    top = [s for s in a.module.body if type(s) is cst.ClassDef and s.name.value not in models]
    found: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for cls in top:
            if cls.name.value in found:
                continue
            for base in cls.bases:
                qn = sorted(q for q in a.qualified_names(base.value) if names.is_library(q))
                if type(base.value) is cst.Name and base.value.value in found:
                    qn = [found[base.value.value]]
                if qn:
                    found[cls.name.value] = qn[0]
                    changed = True
                    break
    return found


def find_plain_stateful_classes(a: Analysis, models: dict[str, cst.ClassDef],
                                library_classes: dict[str, str]) -> set[str]:
    """Classes of this file that are neither models nor built-ins yet create Variables
    (``class Counter:`` holding ``self.total = bm.Variable(...)``): an instance held by a model is
    state batchify cannot batch. Whether a method of it writes one, analysis cannot always tell
    (``self.counter(x)``, ``self.counter.tick(x)``): it leaked a traced value into the Variable."""
    creators = names.STATE_VARIABLES | names.PARAM_VARIABLES | names.STATE_FACTORIES | set(names.VARIABLE_CONTAINERS)
    return {cls.name.value for cls in a.module.body
            if type(cls) is cst.ClassDef and cls.name.value not in models and cls.name.value not in library_classes
            and any(type(n) is cst.Call and a.qualified_names(n.func) & creators for n in walk(cls.body))}


def late_state(a: Analysis, name: str, classes: dict[str, cst.ClassDef], derived: dict[str, str]) -> list[str]:
    """Paths of the Variables a class batched whole gets only once reset: those its reset_state
    creates when its __init__ never calls it (``IP.p`` for ``self.IP = IPersistent(size)``, whose
    gate is created in ``reset_state(self, V, batch_size=None)``), as its users reset it before running."""
    funcs = {s.name.value: s for s in classes[name].body.body if type(s) is cst.FunctionDef}
    init, reset = funcs.get("__init__"), funcs.get("reset_state")
    paths = []
    if reset is not None and not (init is not None and calls_own(init, "reset_state")):
        me = self_name_of(reset) or "self"
        for node in walk(reset.body):
            if type(node) is cst.Assign and len(node.targets) == 1 and type(node.value) is cst.Call:
                path = self_path(node.targets[0].target, me)
                if path and len(path) == 1 and a.qualified_names(node.value.func) & (
                        names.STATE_VARIABLES | names.PARAM_VARIABLES | names.STATE_FACTORIES):
                    paths.append(path[0])
    if init is not None:  # built-ins of this file held by the class: `self.IP = IPersistent(size)`
        me = self_name_of(init) or "self"
        for node in walk(init.body):
            if (type(node) is cst.Assign and len(node.targets) == 1 and type(node.value) is cst.Call
                    and type(node.value.func) is cst.Name and node.value.func.value in derived
                    and node.value.func.value != name):
                path = self_path(node.targets[0].target, me)
                if path and len(path) == 1:
                    paths += [f"{path[0]}.{p}" for p in late_state(a, node.value.func.value, classes, derived)]
    return list(dict.fromkeys(paths))


def models_in_functions(a: Analysis) -> list[tuple[cst.FunctionDef, cst.ClassDef]]:
    """Model classes defined inside a module-level function (BrainPy's ei_nets.py example)."""
    return [(func, node) for func in a.module.body if type(func) is cst.FunctionDef for node in walk(func.body)
            if type(node) is cst.ClassDef and any(q in names.MODEL_BASES or names.is_library(q)
                                                  for b in node.bases for q in a.qualified_names(b.value))]


def describe(a: Analysis, cls: cst.ClassDef) -> str:
    """``Foo(bp.Base -> brainpy.Base)``: a class and its bases as written, with what they resolve to."""
    parts = []
    for base in cls.bases:
        written = cst.Module([]).code_for_node(base.value)
        resolved = sorted(a.qualified_names(base.value))
        parts.append(f"{written} -> {resolved[0]}" if resolved and resolved[0] != written else written)
    return f"{cls.name.value}({', '.join(parts)})"


def children_as_attributes(a: Analysis, cls: cst.ClassDef, models: dict[str, cst.ClassDef],
                           library_classes: dict[str, str]) -> tuple[cst.ClassDef, tuple[str, ...]]:
    """``E = bp.dyn.LifRef(n); ...; super().__init__(E2E, E=E)`` in the ``__init__`` of a BrainPy group:
    the group's constructor registers the models it is handed (positional ones, then keywords) as its
    children, in ``self.children``, and its update runs them. batchify follows a child by attribute, so
    the class is read as ``super().__init__()`` followed by ``self.E2E = E2E`` and ``self.E = E``: the same
    children, run by the same update in the same order (BrainPy's group finds them among its nodes in
    the order they were stored, and keeps ``net.E`` working either way); with the attributes, in the order
    the group registers them (``from_model`` finds them there on the original). A model handed as an expression,
    through a name bound more than once, or under a name the class uses otherwise is left as it is
    (BFY105, ``check_group_children``), and so is a model of this file (built batched only on its attribute)."""
    init = next((f for f in cls.body.body if type(f) is cst.FunctionDef and f.name.value == "__init__"), None)
    me = self_name_of(init) if init is not None else None
    if me is None or model_base(a, cls, models) is not None:
        return cls, ()
    group = is_group(a, cls)
    # The class and those deriving from it, whose attributes a child stored here must not meet.
    family = [cls] + [c for c in models.values() if c is not cls and cls.name.value in ancestors(a, c, models)]
    if any(type(n) is cst.Attribute and n.attr.value == "children" and type(n.value) is cst.Name
           and n.value.value in ("self", me) for c in family for n in walk(c)):
        return cls, ()  # (`self.children['E']`: the registry itself is read)
    # How often __init__'s body binds each name (a parameter rebound once is that one binding), and the call
    # a plain `NAME = ...` binds it to.
    nodes = list(walk(init.body))
    bound = bound_names(init, nodes)
    for param in param_names(init.params):
        bound[param] -= 1
    made = {t.target.value: n.value for n in nodes if type(n) is cst.Assign for t in n.targets
            if type(t.target) is cst.Name}
    # Attributes the class stores or defines, and the group's own members: a child is not stored over them.
    taken = names.GROUP_MEMBERS | names.RESERVED | {s.name.value for c in family for s in c.body.body if type(s) in (
        cst.FunctionDef, cst.ClassDef)} | {t.attr.value for c in family for n in walk(c) for t in assigned(n) if type(
            t) is cst.Attribute and type(t.value) is cst.Name and t.value.value in ("self", me)}

    def model(name: str) -> bool:
        call = made.get(name)
        if bound.get(name) != 1 or type(call) is not cst.Call:
            return False
        if any(arg.keyword and arg.keyword.value == "name" for arg in call.args):
            return False  # (`LifRef(n, name="exc")`: the group registers it under that name, read as self.exc)
        func = call.func  # (a model of this file is batched only where built on the attribute)
        if type(func) is cst.Name and func.value in library_classes:
            return True
        return not (type(func) is cst.Name and func.value in models) and any(
            names.is_library(q) for q in a.qualified_names(func))

    body = list(init.body.body)
    for i, line in enumerate(body):
        if not (type(line) is cst.SimpleStatementLine and len(line.body) == 1 and type(line.body[0]) is cst.Expr
                and type(line.body[0].value) is cst.Call):
            continue
        call = line.body[0].value
        if not (type(call.func) is cst.Attribute and call.func.attr.value == "__init__"):
            continue
        args = list(call.args)
        if is_super_call(call.func):
            if not group:
                continue
            kept: list[cst.Arg] = []
        elif (args and type(args[0].value) is cst.Name and args[0].value.value == me
              and a.qualified_names(call.func.value) & names.GROUP_BASES):  # `bp.Network.__init__(self, E=E)`
            kept, args = args[:1], args[1:]
        else:
            continue
        handed: list[tuple[str, str]] = []  # (attribute, local)
        for arg in args:
            local = arg.value.value if type(arg.value) is cst.Name and not arg.star else None
            attribute = arg.keyword.value if arg.keyword else local
            if (local is not None and model(local) and attribute not in taken and not attribute.startswith("_")
                    and attribute not in {h[0] for h in handed}):
                handed.append((attribute, local))
            else:
                kept.append(arg)
        # Every other argument but these keywords is a child too, which the group would register: left as it is.
        others = [arg for arg in kept[1 - is_super_call(call.func):] if not (
            arg.keyword and arg.keyword.value in names.GROUP_OPTIONS)]
        if not handed or others or len({local for _, local in handed}) != len(handed):
            return cls, ()
        kept[-1:] = [kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)] if kept else []
        stored = [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Attribute(cst.Name(me), cst.Name(attribute)))],
                                                      cst.Name(local))]) for attribute, local in handed]
        base_call = line.with_changes(body=[line.body[0].with_changes(value=call.with_changes(args=kept))])
        for new in (base_call, *stored):  # (what is new points at the call; the rest keeps its own place)
            for part in walk(new):
                if part not in a.positions:
                    a.inherit(part, line)
        grown_init = init.with_changes(body=init.body.with_changes(body=[*body[:i], base_call, *stored, *body[i + 1:]]))
        grown = cls.with_changes(body=cls.body.with_changes(
            body=[grown_init if s is init else s for s in cls.body.body]))
        a.inherit(grown_init, init)
        a.inherit(grown, cls)
        return grown, tuple(attribute for attribute, _ in handed)
    return cls, ()


def is_group(a: Analysis, cls: cst.ClassDef) -> bool:
    """Whether ``cls`` derives directly from a BrainPy group (``names.GROUP_BASES``)."""
    return any(a.qualified_names(b.value) & names.GROUP_BASES for b in cls.bases)


def ancestors(a: Analysis, cls: cst.ClassDef, models: dict[str, cst.ClassDef]) -> list[str]:
    """The model classes of this file ``cls`` derives from, nearest first."""
    out: list[str] = []
    base = model_base(a, cls, models)
    while base is not None and base not in out:
        out.append(base)
        base = model_base(a, models[base], models)
    return out


def model_base(a: Analysis, cls: cst.ClassDef, models: dict[str, cst.ClassDef]) -> str | None:
    local = [b.value.value for b in cls.bases if type(b.value) is cst.Name and b.value.value in models]
    return local[0] if local else None


class _ClassScan:
    """Fields and children of one model class, from its ``__init__``."""

    def __init__(self, a: Analysis, cls: cst.ClassDef, models: dict[str, cst.ClassDef],
                 library_classes: dict[str, str], plain_stateful: set[str] = frozenset()):
        self.a = a
        self.cls = cls
        self.models = models
        self.library_classes = library_classes
        self.plain_stateful = plain_stateful
        self.fields: list[Field] = []
        self.children: list[Child] = []
        self.libraries: list[str] = []
        self.noisy_integrators: list[str] = []
        self.global_streams: list[str] = []  # `self.rng = bm.random.default_rng()`: BrainPy's global stream
        self.global_samplers: list[str] = []  # `self.sample = bm.random.normal`: one of its samplers
        self.library_fields: list[str] = []  # own state Variables handed to a built-in
        # Models of this file run as library code: classes of children handed to a built-in.
        self.library_models: list[str] = []
        self.given_calls: list[tuple[str, cst.Call, list[str]]] = []  # (class, call, models): `ExpSyn(self.E, ...)`
        self.targets: dict[str, list[cst.CSTNode]] = {}  # where each field is created
        self.certain: set[str] = set()  # attributes assigned on every path through __init__ (and reset_state)
        # ``(attribute, local)``: a Variable made into a name of __init__, then stored (``self.W = weight``).
        self.local_variables: set[tuple[str, str]] = set()
        # `self.f = lambda x: self.w * x`: the function -> the fields it reads (see check_stored_functions)
        self.bound_functions: dict[str, frozenset[str]] = {}
        self.model_sequences: dict[str, tuple[str, ...]] = {}  # see check_model_sequences
        self.gathered_models: dict[str, str] = {}

    def functions(self) -> list[cst.FunctionDef]:
        return [s for s in self.cls.body.body if type(s) is cst.FunctionDef]

    def held_models(self) -> set[str]:
        """The attributes holding models: same-file children and built-ins."""
        return {c.name for c in self.children} | set(self.libraries)

    def methods(self) -> list[cst.FunctionDef]:
        """The functions that are methods of their own: not a property's setter or deleter."""
        return [f for f in self.functions() if accessor_of(f) is None]

    def scan(self) -> None:
        init = self.init = next((f for f in self.functions() if f.name.value == "__init__"), None)
        direct: set[int] = set()  # ids of Variable constructor calls assigned to self.NAME in __init__
        self.reset_fields: list[str] = []
        self.init_resets = True
        reset = next((f for f in self.functions() if f.name.value == "reset_state"), None)
        self.helpers = construction_helpers(self.a, self.cls, self.models)
        self.kept_in_share: set[int] = set()  # Variables reported by check_shared_objects already
        self.check_nested_models()
        if init is not None:
            self.scan_assignments(init, direct)
        for helper in self.helpers.values():  # what they create is created with the object (a base's
            self.scan_assignments(helper, direct, certain=False)  # __init__ may run this class's override)
        for func in ([init] if init is not None else []) + list(self.helpers.values()):
            self.check_models_in_containers(func)
            self.check_stored_functions(func)
            self.check_handed_functions(func)
            self.check_second_names(func)
            self.check_implicit_registration(func)
            self.check_shared_objects(func)
        if init is not None:
            self.check_model_sequences(init)
            self.check_group_children(init)
            self.init_resets = calls_own(init, "reset_state")
        if reset is not None:
            # The Variables reset_state creates are fields too, whether __init__ calls it
            # (`self.reset_state(self.mode)`), an inherited __init__ does (a class with no __init__
            # of its own), or the user does before running the model.
            before = {f.name for f in self.fields}
            self.scan_assignments(reset, direct, variables_only=True)
            self.reset_fields = [f.name for f in self.fields if f.name not in before]
        if init is not None:
            self.fields = [f._replace(optional=f.name not in self.certain) for f in self.fields]
            for name in sorted({f.name for f in self.fields} & ({c.name for c in self.children} | set(self.libraries))):
                target = self.targets[name][0]
                self.a.report(target, "BFY107", f"self.{name} holds a Variable on one path and a model on "
                              "another; give each its own attribute")
        # `self.V.value = bm.Variable(e)` outside __init__ writes e: the Variable wrapper is redundant.
        fields = {f.name for f in self.fields}
        for func in self.functions():
            me = self_name_of(func)
            for node in walk(func.body):
                if type(node) is cst.Assign and len(node.targets) == 1 and type(node.value) is cst.Call:
                    path = self_path(node.targets[0].target, me) if me else None
                    if path and path[0] in fields and path[1:] in ([], ["value"]):
                        direct.add(id(node.value))
        # BrainPy's registry of delays (``self.register_delay(...)`` / ``self.get_delay_data(...)``, the 2.x
        # API): the delay lives in the registry, not on an attribute, so nothing would batch it.
        for func in self.functions():
            me = self_name_of(func)
            for node in walk(func.body) if me else ():
                if type(node) is cst.Call and self_path(node.func, me) == ["register_delay"]:
                    self.a.report(node, "BFY103", "self.register_delay(...) keeps the delay in BrainPy's registry "
                                  "of the model's delays, which batchify does not batch; hold the delay on an "
                                  "attribute instead (self.delay = bp.VarDelay(self.pre.spike, ...) or "
                                  "bm.LengthDelay) and read it in the step (self.delay(step))")
        # Every other Variable construction in the class is unsupported for now.
        for func in self.functions():
            held_in = containers_held(func)
            for node in walk(func):
                if type(node) is cst.Call and id(node) not in direct and id(
                        self.a.qualified.replaced.get(node, node)) not in self.a.factory_bodies:
                    qn = self.a.qualified_names(node.func)
                    if qn & (names.STATE_VARIABLES | names.PARAM_VARIABLES):
                        if id(node) in held_in:  # `self.ws = {"a": bm.TrainVar(...), ...}`
                            name, kind = held_in[id(node)]
                            weights = bool(qn & names.PARAM_VARIABLES)
                            self.a.report(node, "BFY102", f"self.{name} holds this Variable in a plain {kind}: "
                                          "batchify follows a Variable by an attribute of its own; give each its "
                                          f"own attribute (self.{name}_0 = ...)" + (
                                              "" if weights else f", or make self.{name} a bm.VarDict / "
                                              "bm.VarList of state Variables"))
                        elif id(node) in self.kept_in_share:
                            continue  # (check_shared_objects said why: kept in bp.share)
                        elif func is init or func is reset or any(func is h for h in self.helpers.values()):
                            # where Variables may be created: this one is not assigned to an attribute
                            self.a.report(node, "BFY102", "this Variable is not assigned directly to an attribute "
                                          "(self.NAME = bm.Variable(...), or v = bm.Variable(...) and then "
                                          "self.NAME = v, v used for nothing else); batchify cannot track it")
                        else:
                            self.a.report(node, "BFY101", f"a Variable is created in {func.name.value}(); "
                                          "create every Variable in __init__ (or in a method only __init__ "
                                          "calls) and assign to .value elsewhere; a local scratch Variable "
                                          "(a loop writing into it) is a plain array the loop carries instead "
                                          "(jax.lax.fori_loop(0, n, body, sample), body returning "
                                          "sample.at[i].set(...))")
                    elif qn & names.UNSUPPORTED_VARIABLES and id(node) not in direct:
                        self.a.report(node, "BFY103", f"{sorted(qn & names.UNSUPPORTED_VARIABLES)[0]} is not supported yet")

    def check_group_children(self, init: cst.FunctionDef) -> None:
        """``super().__init__(E=E, I=I)``, BrainPy's other way to hold children (a group's constructor
        registers them): batchify follows a child only as an attribute, so the batched class would build
        a model unbatched (or a batched class without its batch size) and run it for the whole batch."""
        me = self_name_of(init) or "self"
        made = {t.target.value: node.value for node in walk(init.body) if type(node) is cst.Assign
                and type(node.value) is cst.Call for t in node.targets if type(t.target) is cst.Name}

        def model(value: cst.BaseExpression) -> str | None:
            call = made.get(value.value) if type(value) is cst.Name else value
            if type(call) is not cst.Call:
                return None
            if type(call.func) is cst.Name and (call.func.value in self.models or call.func.value in self.library_classes):
                return f"{call.func.value}, a model of this file"
            builtin = sorted(q for q in self.a.qualified_names(call.func) if names.is_library(q))
            return f"the BrainPy built-in {builtin[0]}" if builtin else None

        for node in walk(init.body):
            if not (type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "__init__"):
                continue
            args = list(node.args)
            if is_super_call(node.func):
                base = model_base(self.a, self.cls, self.models)
                group = base is None and is_group(self.a, self.cls)
            else:  # `bp.DynSysGroup.__init__(self, E=E)`
                if not (args and type(args[0].value) is cst.Name and args[0].value.value == me):
                    continue
                args = args[1:]
                base = node.func.value.value if type(node.func.value) is cst.Name else None
                group = bool(self.a.qualified_names(node.func.value) & names.GROUP_BASES)
            base_init = next((f for f in self.models[base].body.body if type(f) is cst.FunctionDef
                              and f.name.value == "__init__"), None) if base in self.models else None
            base_params = [p.name.value for p in base_init.params.params[1:]] if base_init else []
            for i, arg in enumerate(args):
                what = model(arg.value)
                if what is None and group and not arg.star and type(arg.value) is not cst.Attribute and not (
                        arg.keyword and arg.keyword.value in names.GROUP_OPTIONS):
                    # (all a group is handed, but these, is a child it registers; `self.E`, held by attribute
                    # too, is one BrainPy's walk of the nodes finds once)
                    what = "a model"
                if what is None:
                    continue
                name = arg.keyword.value if arg.keyword else (
                    base_params[i] if i < len(base_params) else arg.value.value if type(arg.value) is cst.Name
                    else "child")
                keeps = (f"{base}.__init__, which keeps it" if base in self.models else
                         "the base constructor as a child (the group registers it)")
                how = ("batchify reads the children a BrainPy group is handed as its attributes only where each "
                       "is a BrainPy built-in built once into a name of __init__ and handed by that name "
                       "(E = bp.dyn.LifRef(n); super().__init__(E=E)), and builds a model of this file batched "
                       "only where the class assigns it to an attribute" if group else "batchify builds a child "
                       "model batched only where the class it belongs to assigns it to an attribute")
                self.a.report(arg.value, "BFY105", f"{name} ({what}) is handed to {keeps}: {how}; assign "
                              f"it here (self.{name} = ...) and leave it out of the base's __init__ call")

    def check_implicit_registration(self, func: cst.FunctionDef) -> None:
        """``self.register_implicit_nodes(ou, conn)`` (Sanda 2021's loop over populations): models, or
        Variables (``register_implicit_vars``), that BrainPy runs and resets but no attribute holds.
        batchify follows children and Variables by attribute: they would run unbatched."""
        me = self_name_of(func) or "self"
        for node in walk(func.body):
            if not (type(node) is cst.Call and type(node.func) is cst.Attribute
                    and node.func.attr.value in ("register_implicit_nodes", "register_implicit_vars")
                    and type(node.func.value) is cst.Name and node.func.value.value == me):
                continue
            held = next((a for a in node.args if not (type(a.value) is cst.Attribute and self_path(a.value, me))), None)
            if held is None:
                continue
            nodes = node.func.attr.value == "register_implicit_nodes"
            what = "model" if nodes else "Variable"
            shown = cst.Module([]).code_for_node(held.value)
            self.a.report(held.value, "BFY105" if nodes else "BFY102", f"{node.func.attr.value}() registers "
                          f"{shown}, a {what} no attribute of the class holds: batchify batches a {what} only "
                          "where the class assigns it to an attribute, and BrainPy would run this one unbatched; "
                          "assign it to an attribute instead (self.NAME = ...; one attribute per population in "
                          "a loop)")

    def check_shared_objects(self, func: cst.FunctionDef) -> None:
        """``bp.share.save('E-spike', bp.VarDelay(self.E.spike, ...))`` (BrainPy's old COBA EINetv2): a
        delay, Variable or model kept in BrainPy's shared context, where no attribute of the class holds
        it. batchify batches what the class holds by attribute: the step would run it unbatched."""
        me = self_name_of(func) or "self"
        for node in walk(func.body):
            if not (type(node) is cst.Call and self.a.qualified_names(node.func) & names.SHARE_SAVES):
                continue
            held = next((p[0] for a in node.args for p in [self_path(a.value, me)] if p and p[0] in self.held_models()),
                        None)
            if held is not None:
                self.check_held_model_loaded(node, held)
            for arg in node.args:
                made = next((n for n in walk(arg.value) if type(n) is cst.Call and (
                    any(names.is_library(q) for q in self.a.qualified_names(n.func))
                    or self.a.qualified_names(n.func) & (names.STATE_VARIABLES | names.PARAM_VARIABLES)
                    or (type(n.func) is cst.Name and n.func.value in self.models))), None)
                if made is None:
                    continue
                model = type(made.func) is cst.Name and made.func.value in self.models
                self.kept_in_share.add(id(made))
                shown = cst.Module([]).code_for_node(made.func)
                self.a.report(made, "BFY105" if model else "BFY102", f"{shown}(...) is kept in bp.share, where no "
                              f"attribute of the class holds it: batchify batches a {'model' if model else 'Variable, or an object holding Variables (a delay),'} "
                              "only where the class assigns it to an attribute, and the step would run this one "
                              "unbatched; assign it to an attribute (self.NAME = ...) and use it from there")

    def check_held_model_loaded(self, save: cst.Call, held: str) -> None:
        """``bp.share.save('E', self.E)`` and ``bp.share.load('E')(x)`` in a step: the model the step runs
        is the one bp.share keeps, unbatched (a built-in holds one example), not the batch's self.E (BFY105;
        at run time main refused it, advising to build a model it already built). A load of another key,
        or none, is left alone: the model may be saved for code outside the step."""
        key = save.args[0].value if save.args else None
        saved = key.evaluated_value if type(key) is cst.SimpleString else None
        classes = [c for c in self.a.module.body if type(c) is cst.ClassDef]  # (a child's step may load it)
        for func in (f for c in classes for f in c.body.body if type(f) is cst.FunctionDef):
            for node in walk(func.body):
                if not (type(node) is cst.Call and type(node.func) is not cst.Call  # (not `load('E')(x)`)
                        and self.a.qualified_names(node.func) & names.SHARE_LOADS):
                    continue
                loaded = node.args[0].value if node.args else None
                if type(loaded) is cst.SimpleString and saved is not None and loaded.evaluated_value != saved:
                    continue
                self.a.report(node, "BFY105", f"this loads self.{held}, the model {self.cls.name.value} keeps in "
                              f"bp.share: what bp.share keeps is the model itself, unbatched, not the batch's "
                              f"self.{held}; use self.{held} in {self.cls.name.value}'s own methods (hand a child "
                              "what it needs as an argument of its step)")

    def check_models_in_containers(self, func: cst.FunctionDef) -> None:
        """``self.pops[name] = LIF(n)`` (into a ``bp.Collector``, a dict, a list) or ``pops.append(LIF(n))``:
        a model stored in a container, where batchify follows children only as attributes; the
        batched constructor would build it without its batch size (or unbatched, for a built-in)."""
        container_methods = {"append", "insert", "extend", "add", "update", "setdefault", "__setitem__"}

        me = self_name_of(func) or "self"

        def model_in(value: cst.CSTNode, container: cst.BaseExpression) -> cst.Call | None:
            # (built-ins gathered in a local list may become a bp.Sequential, itself a built-in)
            held = bool(self_path(container, me))
            for node in walk(value):
                if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in self.models:
                    return node
                if held and type(node) is cst.Call and any(names.is_library(q)
                                                           for q in self.a.qualified_names(node.func)):
                    return node
            return None

        for node in walk(func.body):
            stored = None
            if type(node) in (cst.Assign, cst.AugAssign) and node.value is not None:
                targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
                stored = next((m for t in targets if type(t) is cst.Subscript
                               for m in [model_in(node.value, t.value)] if m is not None), None)
            elif (type(node) is cst.Call and type(node.func) is cst.Attribute
                  and node.func.attr.value in container_methods):
                stored = next((m for a in node.args for m in [model_in(a.value, node.func.value)] if m is not None),
                              None)
            if stored is not None:
                self.a.report(stored, "BFY105", "this model is stored in a container (a bp.Collector, dict or "
                              "list); batchify follows child models only as attributes of their own: assign "
                              "each to one (self.E = LIF(n)) and call it by that attribute")

    def check_nested_models(self) -> None:
        """A model class defined inside this one (``class Cell(bp.DynamicalSystem)`` in its body or a
        method): batchify batches the model classes of the module's top level, so the batched class
        would build an unbatched Cell and run it for the whole batch (BFY106)."""
        for node in walk(self.cls.body):
            if type(node) is not cst.ClassDef:
                continue
            bases = [q for b in node.bases for q in self.a.qualified_names(b.value)]
            local = [b.value.value for b in node.bases if type(b.value) is cst.Name and b.value.value in self.models]
            if set(bases) & names.MODEL_BASES or local:
                self.a.report(node.name, "BFY106", f"{node.name.value} is a model class defined inside "
                              f"{self.cls.name.value}; batchify batches the model classes of the module's top "
                              f"level (a nested one would run unbatched, for the whole batch): move "
                              f"{node.name.value} out of {self.cls.name.value}, to the top of the module")

    def check_stored_functions(self, init: cst.FunctionDef) -> None:
        """``self.f = lambda x: self.w * x`` in __init__: called inside a pure function, it would read
        the Variable itself, not this example's value (nor the traced weights). One that only reads the
        class's own fields runs with one example's values bound in their place (``bound_functions``);
        one that reaches further (``self.step(x)``, ``self.child.V``) is BFY212."""
        me = self_name_of(init) or "self"
        fields = {f.name for f in self.fields}
        for node in walk(init.body):
            if not (type(node) is cst.Assign and len(node.targets) == 1 and type(node.value) is cst.Lambda):
                continue
            path = self_path(node.targets[0].target, me)
            called = {id(n.func) for n in walk(node.value) if type(n) is cst.Call}
            paths = [(p, id(n) in called) for n in walk(node.value) if type(n) is cst.Attribute
                     for p in [self_path(n, me)] if p]
            read = sorted({p[0] for p, _ in paths if p[0] in fields})
            if not (path and len(path) == 1 and read):
                continue
            models = self.held_models()
            beyond = sorted({p[0] for p, call in paths if p[0] in models or (call and p[0] not in fields)})
            if beyond:
                self.a.report(node.value, "BFY212", f"self.{path[0]} is a function that reads self.{read[0]}, a "
                              f"Variable, and reaches self.{beyond[0]}: called in a stepping method it would run "
                              "outside the example's step; make it a method of the class")
                continue
            self.bound_functions[path[0]] = frozenset(self.bound_functions.get(path[0], frozenset()) | set(read))

    def check_handed_functions(self, init: cst.FunctionDef) -> None:
        """``self.leaky.add_inp_fun('wc', lambda *a: 3. * self.wc.x.value)``, ``bp.odeint(lambda v, t: -v +
        self.S)``: a function made in __init__ that reads a Variable, a child's or a built-in's, handed to
        another object, which keeps it and calls it later from inside its own step. There it reads the
        Variable itself, not one example's value: for a built-in's, the value the library put back, so
        every example silently got the same input (BFY212)."""
        me = self_name_of(init) or "self"
        reached = {f.name for f in self.fields} | self.held_models()
        local = {s.name.value: s for s in init.body.body if type(s) is cst.FunctionDef}
        local |= {t.target.value: n.value for n in walk(init.body) if type(n) is cst.Assign
                  and type(n.value) is cst.Lambda for t in n.targets if type(t.target) is cst.Name}
        for call in walk(init.body):
            if type(call) is not cst.Call:
                continue
            for arg in call.args:
                function = arg.value if type(arg.value) is cst.Lambda else (
                    local.get(arg.value.value) if type(arg.value) is cst.Name else None)
                if function is None:
                    continue
                reads = [".".join(p) for n in walk(function) if type(n) is cst.Attribute
                         for p in [self_path(n, me)] if p and p[0] in reached and p[-1] != "value"]
                if reads:
                    callee = cst.Module([]).code_for_node(call.func)
                    self.a.report(arg.value, "BFY212", f"this function reads self.{reads[0]} and is handed to "
                                  f"{callee}, which keeps it and calls it later, inside a step: there it would "
                                  "read the Variable itself, not one example's value; read the value in a stepping "
                                  "method and pass it on as an argument (or make the function a method)")
                    break

    def check_model_sequences(self, init: cst.FunctionDef) -> None:
        """``self.pops = [self.E, self.I]``: the class's own models listed under one more attribute, to
        walk in a step (``for p in self.pops: p(x)``, what BFY105 leads to). Where the list holds
        models only and is never changed (assigned once, in __init__; no append, no item written), it
        is a sequence of those attributes: a step's loop, comprehension or constant index over it is
        the models themselves (aliases.py). Otherwise a step's use of it is refused there (BFY213)."""
        me = self_name_of(init) or "self"
        models = self.held_models()
        for node in walk(init.body):
            if not (type(node) is cst.Assign and len(node.targets) == 1
                    and type(node.value) in (cst.List, cst.Tuple, cst.Set, cst.Dict)):
                continue
            target = self_path(node.targets[0].target, me)
            elements = [e.value for e in node.value.elements if type(e) in (cst.Element, cst.DictElement)]
            paths = [self_path(v, me) if type(v) is cst.Attribute else None for v in elements]
            held = [p[0] for p in paths if p and len(p) == 1 and p[0] in models]
            if not (target and len(target) == 1 and held):
                continue
            name = target[0]
            listed = ", ".join(f"self.{h}" for h in held)
            changed = self.changed_after(name, node)
            if type(node.value) in (cst.Set, cst.Dict):
                kind = type(node.value).__name__.lower()
                self.gathered_models[name] = f"self.{name} is a {kind} of the models {listed}"
            elif len(held) != len(node.value.elements) or len(node.value.elements) != len(elements):
                self.gathered_models[name] = f"self.{name} holds the models {listed} beside other values"
            elif changed is not None:
                self.gathered_models[name] = (f"self.{name} holds the models {listed} and is changed after "
                                              f"__init__ builds it (line {self.a.positions[changed].start.line})")
            else:
                self.model_sequences[name] = tuple(held)

    def changed_after(self, name: str, built: cst.Assign) -> cst.CSTNode | None:
        """Where the class changes ``self.NAME`` other than by ``built``: assigned again, an item
        written or deleted, or a method of it called that changes a list (append, extend, ...)."""
        keeps = {"index", "count", "copy"}
        for func in self.functions():
            me = self_name_of(func) or "self"
            for node in walk(func.body):
                if node is built:
                    continue
                for target in assigned(node) if type(node) in (cst.Assign, cst.AugAssign) else (
                        [node.target] if type(node) in (cst.AnnAssign, cst.Del) else []):
                    inner = target.value if type(target) is cst.Subscript else target
                    if self_path(inner, me) == [name]:
                        return node
                if (type(node) is cst.Call and type(node.func) is cst.Attribute
                        and self_path(node.func.value, me) == [name] and node.func.attr.value not in keeps):
                    return node
        return None

    def check_second_names(self, init: cst.FunctionDef) -> None:
        """A Variable stored under a second name (``self.dec = self.enc``) or handed to a child of this
        file (``Decoder(self.enc)``): a stepping method would read it from the object, the whole
        batch's state or a weight outside the gradient, not one example's value (BFY213)."""
        me = self_name_of(init) or "self"
        kinds = {f.name: f.kind for f in self.fields}

        def variable(node: cst.BaseExpression) -> str | None:
            if type(node) is cst.IfExp:  # `self.enc if tied else bm.TrainVar(...)`: either branch
                return variable(node.body) or variable(node.orelse)
            path = self_path(node, me) if type(node) is cst.Attribute else None
            return path[0] if path and len(path) == 1 and path[0] in kinds else None

        def what(name: str) -> str:
            return "weight" if kinds[name] == "param" else "Variable"

        models = self.held_models()
        for node in walk(init.body):
            if type(node) is cst.Assign and len(node.targets) == 1:
                target = self_path(node.targets[0].target, me)
                source = variable(node.value)
                held = self_path(node.value, me) if type(node.value) is cst.Attribute else None
                if target and len(target) == 1 and held and len(held) == 1 and held[0] in models \
                        and held[0] != target[0]:  # `self.dec = self.enc`, a tied child model
                    self.a.report(node, "BFY213", f"self.{target[0]} is the model self.{held[0]} under a second "
                                  "name: batchify batches each child by one name, and a step would run "
                                  f"self.{target[0]} as it is, for the whole batch; use self.{held[0]} wherever "
                                  f"you use self.{target[0]}")
                    continue
                held_inside = [el for sub in walk(node.value) if type(sub) in (cst.List, cst.Tuple, cst.Set, cst.Dict)
                               for el in sub.elements if variable(el.value)]
                if target and held_inside:  # `self.group = bm.VarList([self.V, ...])`: a second name, by index
                    inner = variable(held_inside[0].value)
                    self.a.report(held_inside[0].value, "BFY213", f"self.{'.'.join(target)} holds the "
                                  f"{what(inner)} self.{inner} itself: batchify follows each Variable by one name, "
                                  f"and self.{'.'.join(target)} would become a copy of its own; give it a Variable "
                                  f"of its own, or use self.{inner} wherever you use its item")
                    continue
                if target and len(target) == 1 and source and target[0] != source:
                    self.a.report(node, "BFY213", f"self.{target[0]} is the {what(source)} self.{source} under a "
                                  "second name: batchify follows each Variable by one name, and a step would read "
                                  f"self.{target[0]} from the object (not one example's state, nor the weights "
                                  f"being differentiated); use self.{source} wherever you use self.{target[0]}")
            elif type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in self.models:
                for arg in node.args:
                    source = variable(arg.value)
                    if source:
                        # (`.value` would hand the child a constant: no gradient, or the value when built)
                        weight = kinds[source] == "param"
                        keeps = "keeps its gradient" if weight else ("reads its current value (a child that "
                                                                     "changes it returns the new value, for this "
                                                                     "class to assign)")
                        instead = "a constant, without gradient" if weight else "the value it had when built"
                        self.a.report(arg.value, "BFY213", f"{node.func.value}(...) is given the {what(source)} "
                                      f"self.{source} itself: the child would read it from the object in its step "
                                      "(not one example's state, nor the weights being differentiated); hand it to "
                                      f"the child's step instead, as an argument (self.child(x, self.{source}), its "
                                      f"update taking it), which {keeps} as the original's does, or let the child "
                                      f"create its own Variable (self.{source}.value would give the child {instead})")

    def scan_assignments(self, func: cst.FunctionDef, direct: set[int], variables_only: bool = False,
                         certain: bool = True) -> None:
        """Fields and children ``func`` creates; those it creates on every path are ``certain`` unless
        it is a construction helper (whether a helper runs on every path is its caller's to say)."""
        me = self_name_of(func)
        if certain:
            self.certain |= definitely_assigned(func.body.body, me or "self", self.helpers)
        held = variable_locals(self.a, func, me) if me and not variables_only else {}
        built = self.builtin_locals(func, me) if me and not variables_only else {}
        for node in walk(func.body):
            if type(node) in (cst.Assign, cst.AnnAssign):
                targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
                if len(targets) == 1 and node.value is not None:
                    # `self.u, self.v = bm.Variable(a), bm.Variable(b)`: each pair an assignment of its
                    # own (the batched constructor keeps the tuple, each Variable batched in place)
                    for target, value in element_pairs(targets[0], node.value):
                        path = self_path(target, me) if me else None
                        if path is None or len(path) != 1:
                            continue
                        if variables_only and not (type(value) is cst.Call and self.a.qualified_names(
                                value.func) & (names.STATE_VARIABLES | names.PARAM_VARIABLES | names.STATE_FACTORIES)):
                            continue
                        if type(value) is cst.Name and held.get(value.value):
                            # `weight = bm.TrainVar(weight)` (in training mode), then `self.W = weight`:
                            # each value the name may hold is a path of its own, as in `A if c else B`.
                            for held_value in held[value.value]:
                                self.classify(path[0], held_value, target, direct)
                            self.local_variables.add((path[0], value.value))
                            continue
                        if type(value) is cst.Name and value.value in built:
                            # `E = bp.neurons.LIF(n)`, then `self.E = E` (and `E` handed to a synapse):
                            # the built-in stored on self, as if assigned there
                            self.classify(path[0], built[value.value], target, direct)
                            continue
                        self.classify(path[0], value, target, direct)

    def builtin_locals(self, func: cst.FunctionDef, me: str) -> dict[str, cst.Call]:
        """Names of ``func`` (not of a nested function) bound once, to the construction of a BrainPy
        built-in (or a class of the file derived from one), and stored on ``me`` once by a plain
        ``me.NAME = name``: ``name -> the call``."""
        nested = {id(n) for f in walk(func.body) if type(f) in (cst.FunctionDef, cst.Lambda, cst.ClassDef)
                  for n in walk(f.body)}
        nodes = [n for n in walk(func.body) if id(n) not in nested]
        counts = bound_names(func, nodes)
        found: dict[str, cst.Call] = {}
        for node in nodes:
            if not (type(node) is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name
                    and type(node.value) is cst.Call and counts.get(node.targets[0].target.value) == 1):
                continue
            if self.builds_builtin(node.value):
                found[node.targets[0].target.value] = node.value
        stored = [n.value.value for n in nodes if type(n) is cst.Assign and type(n.value) is cst.Name
                  and n.value.value in found and any(self_path(t.target, me) for t in n.targets)]
        return {name: call for name, call in found.items() if stored.count(name) == 1}

    def builds_builtin(self, call: cst.Call) -> bool:
        """``call`` constructs a BrainPy built-in, or a class of the file derived from one."""
        return any(names.is_library(q) for q in self.a.qualified_names(call.func)) or (
            type(call.func) is cst.Name and call.func.value in self.library_classes)

    def classify(self, name: str, value: cst.BaseExpression, target: cst.CSTNode, direct: set[int]) -> None:
        if type(value) is cst.IfExp:  # `A(n) if c else None`: each branch is a path of its own
            for branch in (value.body, value.orelse):
                if not is_none(branch):
                    self.classify(name, branch, target, direct)
            return
        if self.global_stream(value):
            self.global_streams.append(name)
            return
        if self.global_sampler(value):
            self.global_samplers.append(name)
            return
        if type(value) is not cst.Call:
            self.check_container(name, value)
            return
        qn = self.a.qualified_names(value.func)
        containers = sorted(names.VARIABLE_CONTAINERS[q] for q in qn if q in names.VARIABLE_CONTAINERS)
        if containers:  # its Variables are made for it: part of the field
            made = {k for node in walk(value) if type(node) is cst.Call
                    for k, kind in (("param", names.PARAM_VARIABLES), ("state", names.STATE_VARIABLES))
                    if self.a.qualified_names(node.func) & kind}
            direct.update(id(node) for node in walk(value))
            if "param" in made:  # batched as state, each example would get its own copy, outside the gradient
                kind = "bm.VarList" if containers[0] == "list" else "bm.VarDict"
                self.a.report(value, "BFY103", f"self.{name} is a {kind} of weights (TrainVars), which batchify "
                              "does not batch yet (only containers of state Variables); give each weight its own "
                              "attribute (self.w0 = bm.TrainVar(...), self.w1 = ...)")
                return
            self.add_field(Field(name, "state", container=containers[0]), target)
        elif qn & (names.STATE_VARIABLES | names.STATE_FACTORIES):
            self.add_field(Field(name, "state"), target)
            direct.add(id(value))
        elif qn & names.PARAM_VARIABLES:
            self.add_field(Field(name, "param"), target)
            direct.add(id(value))
        elif any(names.is_library(q) for q in qn):
            builtin = sorted(q for q in qn if names.is_library(q))[0]
            self.add_library(name, value, f"the BrainPy built-in {builtin}", direct)
        elif type(value.func) is cst.Name and value.func.value in self.library_classes:
            builtin = self.library_classes[value.func.value]
            self.add_library(name, value, f"{value.func.value} (derived from the BrainPy built-in {builtin})", direct)
        elif qn & names.UNSUPPORTED_VARIABLES:
            direct.add(id(value))
            self.a.report(value, "BFY103", f"self.{name} is a {sorted(qn & names.UNSUPPORTED_VARIABLES)[0]}, "
                          "which batchify does not batch yet")
        elif type(value.func) is cst.Name and value.func.value in self.models and self.given_models(value):
            # `ExpSyn(self.E, self.I)`: a model of this file stepping Variables of models it is handed
            # (`self.pre.spike`, `self.post.input += g`) runs as library code, with the models it is
            # given, one example at a time in one library: its own code then reads one example's state.
            self.add_library(name, value, f"{value.func.value} (a model of this file given the model "
                             f"{self.given_models(value)[0]})", direct)
            self.library_models.append(value.func.value)
            self.given_calls.append((value.func.value, value, self.given_models(value)))
        elif type(value.func) is cst.Name and value.func.value in self.models:
            self.refuse_handed_stream(value)
            other = next((c.class_name for c in self.children if c.name == name and c.class_name != value.func.value),
                         None)
            if other is not None:  # the batched class's State holds one class's state per attribute
                self.a.report(value, "BFY107", f"self.{name} is a {other} on one path and a {value.func.value} on "
                              f"another; the batched class holds one model class per attribute: give each its "
                              f"own attribute (None where it is not built: self.{name}_a = {other}(...) if c "
                              "else None)")
            self.children.append(Child(name, value.func.value))
        elif qn & names.SDE_INTEGRATORS:
            self.noisy_integrators.append(name)
        elif type(value.func) is cst.Name and value.func.value in self.a.variable_makers:
            # `self.U = _maybe(n)`, a function of this file that makes a Variable on some path but is not
            # a factory (name_factories): said here, not only as BFY209 at every later use.
            self.a.report(value, "BFY102", f"self.{name} is what {value.func.value}() returns, a function of "
                          f"this file that makes a Variable but does not only return one (batchify follows a "
                          f"function whose every return is `return bm.Variable(...)`); make it one, or create "
                          f"the Variable here (self.{name} = bm.Variable(...))")
        elif self.unseen_builder(value):
            callee, why = self.unseen_builder(value)
            handed = self.handed_models(value)
            given = ", ".join(handed)
            self.a.report(value, "BFY104", f"self.{name} is built by {callee}(...), {why}, from the "
                          f"model{'s' if len(handed) > 1 else ''} {given} of this class: batchify cannot see what "
                          f"it builds, and the batched step would run that as it is, for the whole batch; build "
                          f"it here by the name of its class, defined in this file (self.{name} = "
                          f"MyProjection({given}), a bp.Projection or model class)")
        elif type(value.func) is cst.Name and value.func.value in self.plain_stateful:
            self.a.report(value, "BFY106", f"self.{name} is a {value.func.value}, a class of this file that "
                          "creates Variables but derives from no BrainPy class, so batchify cannot batch its "
                          f"state; derive {value.func.value} from bp.DynamicalSystem (or bp.BrainPyObject) to "
                          "make it a child model")
        else:
            self.check_container(name, value)

    def handed_models(self, call: cst.Call) -> list[str]:
        """The class's models a call is given whole (``self.pre``, not ``self.pre.num``)."""
        me = self_name_of(self.init) if self.init is not None else None
        held = self.held_models()
        return [f"self.{p[0]}" for arg in call.args for p in [self_path(arg.value, me) if me else None]
                if p and len(p) == 1 and p[0] in held]

    def unseen_builder(self, call: cst.Call) -> tuple[str, str] | None:
        """``syn_cls(self.pre, self.post)``: a class or function batchify cannot read (a constructor
        parameter, or imported from another file), given models of this class: most likely a model built
        around them (a projection), which nothing would batch. ``(callee, why)``, or None."""
        if type(call.func) is not cst.Name or not self.handed_models(call) or self.init is None:
            return None
        callee = call.func.value
        if callee in {p.name.value for p in (*self.init.params.params, *self.init.params.kwonly_params)}:
            return callee, "a class or function given to the constructor"
        imported = sorted(q.name for q in self.a.qualified.get(call.func, ())
                          if q.source is QualifiedNameSource.IMPORT
                          and q.name.split(".")[0] not in names.KNOWN_PACKAGES)
        if imported:
            return callee, f"imported from another file ({imported[0]}; batchify reads one file)"
        return None

    def add_library(self, name: str, value: cst.Call, builtin: str, direct: set[int]) -> None:
        """A built-in held as library code (``builtin`` says which, for diagnostics). A child model of
        this file handed to it (``post=self.N``: a neuron of the file reading its projections' input
        with ``sum_current_inputs``) runs as library code too, one example at a time, in the same
        library, so that the two see one example's Variables together. A model built inline or in a
        local it may not reach: nothing would run that model batched. Variables made for its
        arguments are its own."""
        direct.update(id(node) for node in walk(value))
        read_values = {id(n.value) for n in walk(value) if type(n) is cst.Attribute and n.attr.value == "value"}
        kinds = {f.name: f.kind for f in self.fields}
        for node in walk(value):
            local = (type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in self.models
                     and node is not value)  # (`ExpSyn(self.E, ...)` itself is the library)
            # `IA = PoissonStim(...)` earlier in __init__, then `bp.synapses.Exponential(IA, ...)`.
            local = local or (type(node) is cst.Name and node.value in self.local_models)
            path = self_path(node, self_name_of(self.init)) if type(node) is cst.Attribute else None
            child = next((ch for ch in self.children if path and ch.name == path[0]), None)
            if child is not None:
                self.children.remove(child)
                self.library_models.append(child.class_name)
                self.libraries.append(child.name)
            if local:
                self.a.report(node, "BFY104", f"self.{name} is {builtin}, held as library "
                              "code, but it is given a model of this file built for it alone, which it would "
                              "call unbatched; assign that model to an attribute first (self.N = ...) and "
                              "hand it self.N, or give it BrainPy built-ins only")
                return
            if path is not None and len(path) == 1 and path[0] in kinds and id(node) not in read_values:
                if kinds[path[0]] == "param":
                    self.a.report(node, "BFY104", f"self.{name} is {builtin}, held as library "
                                  f"code, but it is given the weight self.{path[0]}; let the built-in own it")
                    return
                if path[0] not in self.library_fields:  # `bm.LengthDelay(self.x, ...)`: bound from state.x
                    self.library_fields.append(path[0])
        if name not in self.libraries:
            self.libraries.append(name)

    def given_models(self, call: cst.Call) -> list[str]:
        """The models of this class a constructor call hands to a class of the file that keeps them
        and reaches them in its steps (``ExpSyn(self.E, self.I)`` reading ``self.pre.spike``), as
        written. A model handed over for its sizes alone (``Readout(self.hidden, n)`` reading
        ``pre.num`` in ``__init__``) is not: the class is batched as a child, as before."""
        me = self_name_of(self.init) if self.init is not None else None
        children = {ch.name for ch in self.children} | set(self.libraries)
        params, reached = self.reached_parameters(call.func.value)
        given = []
        for i, arg in enumerate(call.args):
            parameter = arg.keyword.value if arg.keyword else (
                params[i] if not arg.star and i < len(params) else None)  # None: not known, so maybe reached
            if parameter is not None and parameter not in reached:
                continue
            path = self_path(arg.value, me) if me and type(arg.value) is cst.Attribute else None
            if path and len(path) == 1 and path[0] in children:
                given.append(f"self.{path[0]}")
            elif type(arg.value) is cst.Name and arg.value.value in self.local_models:
                given.append(arg.value.value)
            elif type(arg.value) is cst.Call and type(arg.value.func) is cst.Name and arg.value.func.value in self.models:
                given.append(f"{arg.value.func.value}(...)")  # built for it alone: BFY104 (add_library)
        return given

    def global_stream(self, value: cst.BaseExpression) -> bool:
        """``bm.random.default_rng()``, ``bm.random.DEFAULT``, ``bm.random``: BrainPy's global stream."""
        return bool(self.a.qualified_names(value) & {names.GLOBAL_STREAM, names.GLOBAL_STREAM_MODULE} or (
            type(value) is cst.Call and self.a.qualified_names(value.func) & names.GLOBAL_STREAM_GETTERS
            and (not value.args or (len(value.args) == 1 and is_none(value.args[0].value)))))

    def global_sampler(self, value: cst.BaseExpression) -> bool:
        """``bm.random.normal`` (or ``bm.random.DEFAULT.normal``) itself, not called: a sampler of the global
        stream."""
        held = f"{names.GLOBAL_STREAM}."
        return type(value) in (cst.Attribute, cst.Name) and any(
            names.random_sampler(q) or (q.startswith(held) and q[len(held):] in names.RANDOM_SAMPLERS)
            for q in self.a.qualified_names(value))

    def local_values(self, value: cst.BaseExpression) -> list[cst.BaseExpression]:
        """What ``__init__``, or else the module, assigns to the name ``value`` (``rng = bm.random.default_rng()``)."""
        if type(value) is not cst.Name:
            return []
        top = [small for line in self.a.module.body if type(line) is cst.SimpleStatementLine for small in line.body]
        scopes = [list(walk(self.init.body))] if self.init is not None else []
        for nodes in (*scopes, top):
            found = [n.value for n in nodes if type(n) is cst.Assign and len(n.targets) == 1
                     and type(n.targets[0].target) is cst.Name and n.targets[0].target.value == value.value]
            if found:
                return found
        return []

    def refuse_handed_stream(self, call: cst.Call) -> None:
        """``Noisy(n, self.rng)``: BrainPy's global random stream (or a sampler of it) handed to a model of
        this file that keeps it and draws from it in its steps. The child's draw is from an object it was
        given, which batchify cannot see is the global stream, so every example would draw the same
        numbers (at run time it was refused with advice that did not apply): BFY206."""
        me = self_name_of(self.init) if self.init is not None else None
        params, reached = self.reached_parameters(call.func.value)
        for i, arg in enumerate(call.args):
            parameter = arg.keyword.value if arg.keyword else (params[i] if not arg.star and i < len(params) else None)
            if parameter is not None and parameter not in reached:
                continue
            path = self_path(arg.value, me) if me and type(arg.value) is cst.Attribute else None
            held = bool(path) and len(path) == 1 and path[0] in (*self.global_streams, *self.global_samplers)
            values = [arg.value, *self.local_values(arg.value)]  # (`rng = bm.random.default_rng()` first)
            if held or any(self.global_stream(v) or self.global_sampler(v) for v in values):
                shown = self.a.module.code_for_node(arg.value)
                self.a.report(arg.value, "BFY206", f"{shown}, BrainPy's global random stream (or a sampler of it), is "
                              f"handed to {call.func.value}, which draws from it in its steps: batchify gives each "
                              "example its own key only in a draw from a stream the drawing class holds itself; "
                              f"create it in {call.func.value}.__init__ (self.rng = bm.random.default_rng()), or draw "
                              "with bm.random.normal(...) there")

    def reached_parameters(self, name: str) -> tuple[list[str], set[str]]:
        """Class ``name``'s constructor parameters (after self), and those it stores on self
        (``self.pre = pre``) and reaches in a method (``self.pre.spike``, ``self.pre(x)``)."""
        chain, node = [], self.models.get(name)
        while node is not None and node not in chain:
            chain.append(node)
            base = model_base(self.a, node, self.models)
            node = self.models.get(base) if base else None
        functions = [f for c in chain for f in c.body.body if type(f) is cst.FunctionDef]
        inits = [f for f in functions if f.name.value == "__init__"]
        params = [p.name.value for p in inits[0].params.params[1:]] if inits else []
        stored: dict[str, str] = {}  # attribute -> the parameter stored there
        parts: set[str] = set()  # attributes holding a part of one (`self.a = source.a`): read, it is reached
        for init in inits:
            me = self_name_of(init) or "self"
            names_ = {p.name.value for p in init.params.params}
            for node in walk(init.body):
                if not (type(node) is cst.Assign and len(node.targets) == 1):
                    continue
                root = node.value  # `self.pre = pre`, or a part of it: `self.a = source.a` (its Variable)
                while type(root) is cst.Attribute:
                    root = root.value
                if type(root) is cst.Name and root.value in names_:
                    target = self_path(node.targets[0].target, me)
                    if target and len(target) == 1:
                        stored[target[0]] = root.value
                        if root is not node.value:
                            parts.add(target[0])
        reached = set()
        for func in functions:
            me = self_name_of(func)
            if func.name.value == "__init__" or me is None:
                continue
            for node in walk(func.body):
                path = self_path(node, me) if type(node) is cst.Attribute else None
                if path and (len(path) > 1 or path[0] in parts) and path[0] in stored:  # `self.pre.spike`
                    reached.add(stored[path[0]])
                called = self_path(node.func, me) if type(node) is cst.Call and type(
                    node.func) is cst.Attribute else None
                if called and len(called) == 1 and called[0] in stored:  # `self.pre(x)`
                    reached.add(stored[called[0]])
        return params, reached

    @functools.cached_property
    def local_models(self) -> set[str]:
        """Local names of __init__ bound to a model of this file: ``IA = PoissonStim(...)``."""
        return {t.target.value for node in walk(self.init.body) if type(node) is cst.Assign
                and type(node.value) is cst.Call and type(node.value.func) is cst.Name
                and node.value.func.value in self.models for t in node.targets if type(t.target) is cst.Name}

    def check_container(self, name: str, value: cst.BaseExpression) -> None:
        """Models of this file inside a list, dict, tuple or call: children batchify cannot follow."""
        if type(value) is cst.Name and value.value in self.local_models:
            self.a.report(value, "BFY105", f"self.{name} is a model of this file built into the local "
                          f"'{value.value}' first; assign it directly (self.{name} = {value.value}'s constructor "
                          "call) so that batchify builds it batched")
            return
        for node in walk(value):
            if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in self.models:
                self.a.report(node, "BFY105", f"self.{name} holds models in a container; "
                              "assign each child model to its own attribute")
                return
        for node in walk(value) if type(value) in CONTAINER_KINDS else ():
            # `self.pops = [bp.neurons.LIF(n), ...]`: BrainPy's own node walk does not see into a plain
            # list either; the step would run them as they are, one example's, for the whole batch
            if type(node) is cst.Call and self.builds_builtin(node):
                self.a.report(node, "BFY105", f"self.{name} holds BrainPy built-ins in a plain "
                              f"{CONTAINER_KINDS[type(value)]}, "
                              "which batchify (and BrainPy's own walk of the model's nodes) does not look into: the "
                              "step would run them unbatched; assign each to an attribute of its own "
                              f"(self.{name}_0 = ...), or chain layers in a bp.Sequential")
                return

    def add_field(self, f: Field, target: cst.CSTNode) -> None:
        self.targets.setdefault(f.name, []).append(target)
        if any(old.name == f.name for old in self.fields):
            self.fields = [f if old.name == f.name else old for old in self.fields]
        else:
            self.fields.append(f)
        if f.name == "mode":
            self.a.report(target, "BFY010", "self.mode is BrainPy's computing mode, which every model has; a "
                          "Variable cannot take its name (BrainPy refuses it too): rename it")
        elif f.name in STATE_RESERVED:  # the other reserved names are renamed as attributes (`self.state_`)
            self.a.report(target, "BFY010", f"the generated State defines '{f.name}'; rename self.{f.name}")


# Plain Python containers written as literals, by what a message calls them.
CONTAINER_KINDS = {cst.List: "list", cst.Tuple: "tuple", cst.Set: "set", cst.Dict: "dict"}


def containers_held(func: cst.FunctionDef) -> dict[int, tuple[str, str]]:
    """The calls inside a plain dict, list, tuple or set literal assigned to an attribute of ``self``
    (``self.ws = {"a": bm.TrainVar(...)}``): ``id(call) -> (attribute, "dict" | "list" | ...)``."""
    me = self_name_of(func)
    found: dict[int, tuple[str, str]] = {}
    for node in walk(func.body) if me else ():
        if not (type(node) is cst.Assign and len(node.targets) == 1 and type(node.value) in CONTAINER_KINDS):
            continue
        path = self_path(node.targets[0].target, me)
        if path and len(path) == 1:
            kind = CONTAINER_KINDS[type(node.value)]
            found.update((id(n), (path[0], kind)) for n in walk(node.value) if type(n) is cst.Call)
    return found


def variable_locals(a: Analysis, func: cst.FunctionDef, me: str) -> dict[str, list[cst.BaseExpression]]:
    """Names of ``func`` (not of a nested function) that hold a Variable it makes and are stored on
    ``me`` once, by a plain ``me.NAME = name``: each with every value assigned to it. A name used
    otherwise (handed to a call, stored twice, returned) would be a second name for the Variable:
    not listed, so its Variable stays unsupported (BFY102)."""
    made = names.STATE_VARIABLES | names.PARAM_VARIABLES | names.STATE_FACTORIES
    nested = {id(n) for f in walk(func.body) if type(f) in (cst.FunctionDef, cst.Lambda, cst.ClassDef)
              for n in walk(f)}
    values: dict[str, list[cst.BaseExpression]] = {}
    for node in walk(func.body):
        if id(node) not in nested and type(node) in (cst.Assign, cst.AnnAssign) and node.value is not None:
            targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
            for target in targets:
                if type(target) is cst.Name:
                    values.setdefault(target.value, []).append(node.value)
    held = {k: v for k, v in values.items()
            if any(type(x) is cst.Call and a.qualified_names(x.func) & made for x in v)}
    if not held:
        return {}
    # The reads each name may have: stored once on self, read through an attribute (`weight.shape`),
    # or read by the Variable constructor it is given to (`weight = bm.TrainVar(weight)`).
    allowed = {id(n.value) for n in walk(func.body) if type(n) is cst.Attribute and type(n.value) is cst.Name}
    stores: dict[str, int] = {}
    for node in walk(func.body):
        if type(node) is cst.Assign and type(node.value) is cst.Name and node.value.value in held:
            paths = [self_path(t.target, me) for t in node.targets]
            if len(paths) == 1 and paths[0] is not None and len(paths[0]) == 1:
                stores[node.value.value] = stores.get(node.value.value, 0) + 1
                allowed.add(id(node.value))
    for bound in held.values():
        allowed.update(id(n) for v in bound if type(v) is cst.Call for n in walk(v))
    # Names that are not reads: assignment targets, attribute names (`self.h`), keywords (`h=...`).
    not_reads = {id(t.target) for n in walk(func.body) if type(n) is cst.Assign for t in n.targets} | {
        id(n.target) for n in walk(func.body) if type(n) is cst.AnnAssign} | {
        id(n.attr) for n in walk(func.body) if type(n) is cst.Attribute} | {
        id(n.keyword) for n in walk(func.body) if type(n) is cst.Arg and n.keyword is not None}
    used = {n.value for n in walk(func.body) if type(n) is cst.Name and n.value in held
            and id(n) not in allowed and id(n) not in not_reads}
    return {k: v for k, v in held.items() if stores.get(k) == 1 and k not in used}


def matrix_operands(a: Analysis, node: cst.CSTNode, left: bool = False) -> list[cst.BaseExpression]:
    """The right operand of a matrix product, where weights stand: ``x @ self.w``, ``bm.dot(r, self.w)``;
    with ``left``, the left one (``self.W @ x``, ``bm.dot(self.W, x)``)."""
    if type(node) is cst.BinaryOperation and type(node.operator) is cst.MatrixMultiply:
        return [node.left if left else node.right]
    if type(node) is cst.Call and a.qualified_names(node.func) & names.MATRIX_PRODUCTS:
        return [arg.value for arg in (node.args[0:1] if left else node.args[1:2])]
    return []


def reaches_state(known: Known, path: list[str]) -> bool:
    """Whether ``self.<path>`` reaches state: a Variable or a built-in of the class, of a child or of
    theirs, or a model itself (``self.rec.sub``, handed on whole); not a plain attribute of a model
    (``self.rec.a``, a setting of the child's constructor)."""
    at = known
    for part in path:
        if part in at.fields or part in at.libraries:
            return True
        if part not in at.children:
            return False
        at = at.children[part]
    return True


def shared_dict_parameter(func: cst.FunctionDef) -> str | None:
    """The first parameter of an ``update`` BrainPy hands its shared dict (``bp.share.get_shargs()``, by
    ``DynamicalSystem._compatible_update`` when a call leaves it out): named ``tdi``/``sh``/``sha``, or
    BrainPy 2.3's ``update(self, s, x)`` under any name, followed by another required positional
    parameter, that the body uses only as that dict: not at all, or read by one of BrainPy's keys
    (``s['t']``, ``s.get('fit')``, ``s.dt``) and maybe handed on first to another call (``self.l1(s, x)``).
    (A dict of the user's own, ``inputs['image']``, is an input.)"""
    params = [*func.params.posonly_params, *func.params.params][1:]
    if func.name.value != "update" or not params or params[0].default is not None:
        return None
    first = params[0].name.value
    if first in names.SHARED_DICT_PARAMS:
        return first
    if len(params) < 2 or params[1].default is not None:
        return None
    uses = [n for n in walk(func.body) if type(n) is cst.Name and n.value == first]
    as_dict, by_key = set(), False
    for node in walk(func.body):
        if type(node) is cst.Subscript and type(node.value) is cst.Name and node.value.value == first:
            if len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index and type(
                    node.slice[0].slice.value) is cst.SimpleString and (
                    node.slice[0].slice.value.evaluated_value in names.SHARED_KEYS):
                as_dict.add(id(node.value))
                by_key = True
        elif type(node) is cst.Attribute and type(node.value) is cst.Name and node.value.value == first:
            if node.attr.value in names.SHARED_KEYS | {"get"}:
                as_dict.add(id(node.value))
                by_key = True
        elif type(node) is cst.Call and node.args and node.args[0].keyword is None and not node.args[0].star:
            if type(node.args[0].value) is cst.Name and node.args[0].value.value == first:
                as_dict.add(id(node.args[0].value))
    # (only handed on, it may be an array a child takes first: `self.c(g, x)`)
    return first if all(id(n) in as_dict for n in uses) and (by_key or not uses) else None


def global_stream_draw(func: cst.BaseExpression, self_name: str, streams: set[str],
                       samplers: set[str] = frozenset()) -> bool:
    """``self.rng.normal`` where ``self.rng`` is BrainPy's global stream (``bm.random.default_rng()``),
    or ``self.sample`` holding one of its samplers (``bm.random.normal``)."""
    path = self_path(func, self_name)
    return bool(path) and ((len(path) == 2 and path[0] in streams and path[1] in names.RANDOM_SAMPLERS)
                           or (len(path) == 1 and path[0] in samplers))


def scan_method(a: Analysis, func: cst.FunctionDef, fields: set[str], children: dict[str, set[str]],
                methods: set[str], kind: str, libraries: set[str] = frozenset(),
                noisy: set[str] = frozenset(), properties: set[tuple[str, ...]] = frozenset(),
                known: Known | None = None, streams: set[str] = frozenset(),
                samplers: set[str] = frozenset()) -> Method:
    """What a method touches; using a library attribute at all counts as reading it. A child's
    attribute is a read of its state when it reaches a Variable or a built-in of the child (``known``),
    not when it is one of the child's settings (``self.rec.a``, a float of its constructor)."""
    me = self_name_of(func) if kind in ("method", "property") else None
    reads: set[str] = set()
    writes: set[str] = set()
    self_calls: set[str] = set()
    child_calls: set[tuple[str, str]] = set()
    draws = False
    multiplied: set[str] = set()  # on the right of a matrix product, like weights
    left_multiplied: set[str] = set()  # on the left (``self.W @ x``): a weight if it is a matrix
    incremented: set[str] = set()  # `self.w += dw`: how a learning rule changes a weight
    # (`self.rec.f(x)`, a child's attribute called: a function it stores may read its state, so it counts)
    called = {id(n.func) for n in walk(func.body) if type(n) is cst.Call} if me is not None else set()
    if me is not None:
        for node in walk(func.body):
            for side, found in ((False, multiplied), (True, left_multiplied)):
                for operand in matrix_operands(a, node, left=side):
                    path = self_path(operand, me) if type(operand) is cst.Attribute else None
                    if path and path[0] in fields and path[1:] in ([], ["value"], ["T"], ["value", "T"]):
                        found.add(path[0])
            if type(node) is cst.AugAssign and type(node.target) is cst.Attribute:
                path = self_path(node.target, me)
                if path and path[0] in fields:
                    incremented.add(path[0])
            if type(node) is cst.Call and not any(arg.keyword and arg.keyword.value == "key" for arg in node.args):
                qn = a.qualified_names(node.func)
                draws = draws or any(names.random_sampler(q) for q in qn) or (
                    bool(qn & names.STATE_FACTORIES) and func.name.value != "__init__"
                    and not deterministic_initializer(node, a.qualified_names)) or (
                    me is not None and self_path(node.func, me) in [[n] for n in noisy]) or (
                    me is not None and global_stream_draw(node.func, me, streams, samplers))
            if type(node) is cst.Attribute:
                path = self_path(node, me)
                if path and len(path) == 1 and tuple(path) in properties:
                    self_calls.add(path[0])
                elif path and len(path) == 1 and path[0] in methods and id(node) not in called:
                    self_calls.add(path[0])  # handed out (`return self.ds`, `f = self.ds`): it may run
                elif path and len(path) == 2 and tuple(path) in properties:
                    child_calls.add((path[0], path[1]))
                if path and path[0] in libraries:
                    reads.add(path[0])
                elif path and len(path) == 2 and path[1] == "value" and path[0] not in fields | set(children):
                    a.report(node, "BFY209", f"self.{path[0]}.value: '{path[0]}' is not a Variable created in "
                             "__init__ of this class")
                if path and (path[0] in fields or (path[0] in children and len(path) > 1
                                                    and path[1] not in children[path[0]]
                                                    and (known is None or id(node) in called
                                                         or reaches_state(known, path)))):
                    reads.add(path[0])
            elif type(node) is cst.Call:
                path = self_path(node.func, me) if type(node.func) in (cst.Attribute, cst.Name) else None
                for arg in node.args:  # `bm.for_loop(self.step, xs)`: the method runs, as if called
                    arg_path = self_path(arg.value, me) if type(arg.value) is cst.Attribute else None
                    if arg_path and len(arg_path) == 1 and arg_path[0] in methods:
                        self_calls.add(arg_path[0])
                    elif arg_path and len(arg_path) == 2 and arg_path[0] in children and arg_path[1] in children[
                            arg_path[0]]:  # `bm.for_loop(self.cell.update, xs)`, or any call handed it: it may run
                        child_calls.add((arg_path[0], arg_path[1]))
                if path and len(path) == 1 and path[0] in methods:
                    self_calls.add(path[0])
                elif path and len(path) == 1 and path[0] in children:
                    child_calls.add((path[0], "update"))
                elif path and len(path) == 2 and path[0] in children and path[1] in children[path[0]]:
                    child_calls.add((path[0], path[1]))
                elif is_super_call(node.func):
                    self_calls.add(node.func.attr.value)
            elif type(node) in (cst.Assign, cst.AugAssign):
                targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
                for target in targets:
                    for sub in walk(target):
                        if type(sub) is cst.Attribute:
                            path = self_path(sub, me)
                            if path and path[0] in fields:
                                writes.add(path[0])
    return Method(func.name.value, func, frozenset(reads), frozenset(writes), frozenset(self_calls),
                  frozenset(child_calls), kind, draws, frozenset(multiplied),
                  frozenset(incremented), frozenset(left_multiplied))  # type: ignore[arg-type]


def analyse(module: cst.Module, path: str, only: Iterable[str] = (), shared: Iterable[str] = (),
            functions: Iterable[str] = (), declarations_needed: bool = True, drivers: Iterable[str] = (),
            also: Iterable[str] = ()) -> ModuleIR:
    """``functions``: module-level functions to copy besides what the classes need (the harness's);
    ``drivers``: the user's functions to batch (``--function``, see ``drivers.py``); ``also``: module-level
    names to keep with what they need, where the source defines them (what verify's ``--init`` names)."""
    a = Analysis(module, path)
    refuse_star_imports(a)
    models = find_model_classes(a)
    drivers = tuple(drivers)
    # The user's functions that drive a model instance become methods of its class (drivers.py).
    driver_losses: dict[str, dict[str, bool]] = {}
    copied_drivers: list[str] = []
    driven: dict[str, str] = {}  # a driving function -> the instance it drives
    renamed: dict[str, str] = {}
    takes_instance: frozenset[str] = frozenset()
    if drivers:
        added, renamed, driven, copied_drivers, found, takes_instance = driver_methods(
            a.module, models, drivers, path, a.positions, a.inherit, a.report)
        a.diagnostics.extend(found)
        for class_name, methods in added.items():
            node = models[class_name]
            grown = node.with_changes(body=node.body.with_changes(body=[*node.body.body, *methods]))
            a.inherit(grown, node)
            models[class_name] = grown
            named = {renamed[n] for n in drivers if n in renamed}  # the losses named; the rest they call
            driver_losses[class_name] = {m.name.value: returns_aux(m) for m in methods if m.name.value in named}
    classes = class_defs = {s.name.value: s for s in a.module.body if type(s) is cst.ClassDef}
    derived = find_library_classes(a, models)
    registered: dict[str, tuple[str, ...]] = {}
    for name, node in models.items():
        models[name], registered[name] = children_as_attributes(a, node, models, derived)
    plain_stateful = find_plain_stateful_classes(a, models, derived)
    only = list(dict.fromkeys(only))
    # Classes deriving from a built-in, batched whole as library code: those named, or, in a file
    # with no model class, every one.
    library_targets = [n for n in only if n in derived] or ([] if models or only else list(derived))
    for name in library_targets:  # batched whole: it runs as BrainPy's code, one example at a time
        for node in walk(classes[name].body):
            if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in models:
                a.report(node, "BFY104", f"{name} derives from the BrainPy built-in {derived[name]} and is batched "
                         f"whole, as library code, but it builds {node.func.value}, a model of this file, which "
                         f"batchify batches as a class of its own; if {derived[name]} is a group or network base "
                         f"(an older BrainPy's bp.dyn.Network), derive {name} from bp.DynSysGroup")
                break
    if not models and not library_targets:
        # `def model1(): class Leaky(bp.DynamicalSystem): ...`: models there, but out of reach
        for func, node in models_in_functions(a):
            a.report(node.name, "BFY106", f"{node.name.value} is a model class defined inside the function "
                     f"{func.name.value}(); batchify batches the model classes of the module's top level: "
                     f"move {node.name.value} to the top of the module (build it in {func.name.value}() as before)")
        others = "; classes here: " + ", ".join(describe(a, c) for c in classes.values()) if classes else ""
        raise BatchifyError(a.diagnostics or [Diagnostic(
            path, 1, 1, "BFY004", "no BrainPy model class found (a class deriving from bp.DynamicalSystem, "
            "bp.DynSysGroup, bp.dyn.NeuDyn, bp.BrainPyObject, ... or from another model class of this file; "
            f"batchify reads one file){others}")])

    for name in only:
        if name in derived:
            continue
        elif name in classes and name not in models:
            a.report(classes[name].name, "BFY005", f"--class {name}: {describe(a, classes[name])} is not a model "
                     "class batchify knows: its bases are neither BrainPy dynamical-system bases of current "
                     "BrainPy nor model classes of this file (a base imported from another file, or an API "
                     "removed from BrainPy such as bp.TwoEndConn, cannot be followed)")
        elif name not in models:
            a.diagnostics.append(Diagnostic(path, 1, 1, "BFY005", f"--class {name}: no class of that name "
                                            f"(model classes here: {', '.join(sorted(models))})"))

    for name, node in models.items():  # `__Net` would be name-mangled inside the generated class bodies
        if name.startswith("__") and not name.endswith("__"):
            a.report(node.name, "BFY010", f"the class name {name} starts with two underscores, so Python "
                     f"mangles it inside class bodies, where the generated code names {name}Params and "
                     f"{name}State; rename the class")
    check_super_names(a, class_defs, models)
    name_inherited_methods(a, models)
    name_factories(a, models)
    # Scan fields and children, then order classes so that bases and children come first.
    scans = {}
    for name, node in models.items():
        scan = _ClassScan(a, node, models, derived, plain_stateful)
        scan.scan()
        scans[name] = scan
    order: list[str] = []

    def visit(name: str, seen: tuple[str, ...] = ()) -> None:
        if name in order or name in seen:
            return
        base = model_base(a, models[name], models)
        for dep in ([base] if base else []) + [ch.class_name for ch in scans[name].children]:
            visit(dep, seen + (name,))
        order.append(name)

    for name in models:
        visit(name)

    module_functions = {s.name.value: s for s in a.module.body if type(s) is cst.FunctionDef}
    lambdas = module_lambdas(a.module)  # (for the alias checks only: `kind = lambda a: ...`)
    module_data = module_data_names(a.module)
    classes: dict[str, ModelClass] = {}
    modes = {item.partition("=")[0]: item.partition("=")[2] or "mean" for item in shared}
    ir = ModuleIR(path, a.module, classes, [], [], frozenset(item.partition("=")[0] for item in shared),
                  modes, positions=a.positions, qualified=a.qualified, driven=driven, driver_methods=renamed,
                  takes_instance=takes_instance, factory_bodies=frozenset(a.factory_bodies))
    for name in order:
        node = models[name]
        scan = scans[name]
        fields_ = tuple(f._replace(shared=modes[f.name]) if f.kind == "state" and modes.get(f.name) in ("mean", "sum")
                        else f for f in scan.fields)
        base = classes.get(model_base(a, node, models) or "")
        if base is not None:  # a Variable a base creates too (reset_state overridden) is the base's field
            inherited = {f.name for f in ir.all_fields(base)}
            fields_ = tuple(f for f in fields_ if f.name not in inherited)
        cls = ModelClass(name, node, model_base(a, node, models), fields_, tuple(scan.children), {},
                         libraries=tuple(scan.libraries), reset_fields=tuple(scan.reset_fields),
                         init_resets=resets_at_init(scan.init, scan.init_resets, base),
                         noisy_integrators=tuple(scan.noisy_integrators), global_streams=tuple(scan.global_streams),
                         global_samplers=tuple(scan.global_samplers),
                         library_fields=tuple(scan.library_fields), losses=driver_losses.get(name, {}),
                         local_variables=frozenset(scan.local_variables),
                         bound_functions=dict(scan.bound_functions),
                         construction_helpers=tuple(scan.helpers),
                         model_sequences=dict(scan.model_sequences), gathered_models=dict(scan.gathered_models),
                         registered=registered[name],
                         updateless=base.updateless if base is not None else updateless(a, node))
        classes[name] = cls
        fields = set(ir.field_map(cls))
        inherited = ir.all_methods(cls)
        own_names = {f.name.value for f in scan.functions()}
        children = {ch: set(ir.all_methods(c)) for ch, c in ir.child_map(cls).items()}
        known = known_variables(ir, cls)
        helpers = {**lambdas, **module_functions, **{f"self.{m}": meth.node for m, meth in inherited.items()},
                   **{f"self.{f.name.value}": f for f in scan.methods()}}
        # Once per class, not per method: a class with thousands of methods made these quadratic.
        method_names = set(inherited) | own_names
        chain = [c.name for c in ir.chain(cls)]  # `Base.update(self, x)` names a base's method (explicit_base_calls)
        below = {base: (chain[i + 1] if chain[i + 1] != name else None) for i, base in enumerate(chain[:-1])}
        libraries = set(ir.all_libraries(cls))
        noisy = {n for c in ir.chain(cls) for n in c.noisy_integrators}
        streams, samplers = ir.all_global_streams(cls), ir.all_global_samplers(cls)
        # `self.w_eff` of a `@property` runs it, as a call would (a masked weight: `self.w * self.mask`);
        # so does a child's (`self.cell.rate`). Paths: ("w_eff",), ("cell", "rate").
        properties = {(n,) for n, m in inherited.items() if m.kind == "property"} | {
            (f.name.value,) for f in scan.functions() if method_kind(a, f) == "property"} | {
            (ch, n) for ch, c in ir.child_map(cls).items() for n, m in ir.all_methods(c).items() if m.kind == "property"}
        bound_reads = {b: r for c in ir.chain(cls)[:-1] for b, r in c.bound_functions.items()} | scan.bound_functions
        for func in scan.functions():
            if accessor_of(func) is not None:  # copied after its property, as written (its writes act on the batch)
                cls.accessors.setdefault(func.name.value, []).append(func)
                continue
            if func.name.value in RESERVED:
                a.report(func.name, "BFY010", f"the generated class defines '{func.name.value}'; rename this method")
            if func.name.value == "__init__":
                # Members the generated constructor sets and its code reads: a plain attribute of the
                # same name would be renamed with them (the others are `self.params_`, and so on).
                me = self_name_of(func) or "self"
                for node in walk(func.body):
                    for target in assigned(node):
                        path = self_path(target, me)
                        if path and len(path) == 1 and path[0] in ("batch_size", "rng_key", "library") \
                                and path[0] not in fields:  # (`fields`: every field of the class, above)
                            a.report(target, "BFY010", f"self.{path[0]} is the batched class's own (set by its "
                                     f"constructor, read by its code); rename this attribute")
                continue
            kind = method_kind(a, func)
            me = self_name_of(func) if kind in ("method", "property") else None
            if me is not None:  # Variables reached by another name: into the plain self.V forms (aliases.py)
                func = explicit_base_calls(func, me, below, a.inherit)
                func = Normaliser(me, known, helpers, a.report, a.inherit).normalise(func)
            method = scan_method(a, func, fields, children, method_names, kind, libraries, noisy, properties, known,
                                 streams, samplers)
            if me is not None and bound_reads:  # `self.f(x)`, f a lambda reading self.w: a read of w
                used = {p[0] for n in walk(func.body) if type(n) is cst.Attribute for p in [self_path(n, me)] if p}
                method = method._replace(reads=method.reads | {r for b in used & set(bound_reads)
                                                               for r in bound_reads[b]})
            cls.methods[func.name.value] = method
        mark_stateful(ir, cls)
        if {"__call__", "call"} <= set(cls.stateful) and "call" in cls.methods:  # both would be call_pure
            a.report(cls.methods["call"].node.name, "BFY010", "the generated class names the pure twin of "
                     "__call__ call_pure, which is also call's; rename this method")
        check_escaping_methods(a, cls, scan)
        check_self_handed_over(a, cls, module_functions)
        check_collectors(a, ir, cls)
        check_stateful_overrides(a, ir, cls)
        plain = plain_attribute_test(ir, cls)
        for method in cls.methods.values():
            if method.name in cls.stateful and method.kind == "method":
                side_effects(method.node, self_name_of(method.node), module_data, plain,
                             a.qualified_names, a.report)
                check_sweeps(a, cls, method, method_names, children)
            elif method.name in renamed.values():  # a --function the user asked to batch: stateful or refused
                function = next(f for f, m in renamed.items() if m == method.name)
                check_sweeps(a, cls, method, method_names, children,  # (bm.for_loop(net.step_run, ...))
                             shown=driven.get(function, "self"))
        if declarations_needed:  # loading the original for verification needs no batching decision
            check_learned_online(a, ir, cls, modes, scan)

    # Targets: what --class names, plus the bases and children those need, and the model classes
    # their code names (`isinstance(x, Foo)` reads FooBatched, which only a target defines) unless a
    # parent runs that class as library code (then the reference stays Foo, copied as written).
    # A class given models of its parent (`ExpSyn(self.E, self.I)`) steps their Variables: batched on
    # its own it would read them from the objects, so it is batched as library code of that parent only.
    given: dict[str, tuple[str, cst.Call, list[str]]] = {}
    for parent, scan in scans.items():
        for cls, call, models_ in scan.given_calls:
            given.setdefault(cls, (parent, call, models_))
    for name in only:
        if name in given:
            parent, call, models_ = given[name]
            a.report(class_defs[name].name, "BFY219", f"--class {name}: {parent} builds {name} with its "
                     f"model{'s' if len(models_) > 1 else ''} {', '.join(models_)} (line "
                     f"{a.positions[call].start.line}); batched on its own, {name} would reach those objects in its "
                     f"steps, not one example's state. Batch {parent} (--class {parent}), which runs {name} with "
                     "those models as library code, one example at a time" + (
                         f", once {parent} holds each model it hands over on an attribute of its own "
                         f"(self.N = {inline[0]}, then {name}(self.N, ...)): one built inline would run unbatched"
                         if (inline := [m for m in models_ if m.endswith("(...)")]) else ""))
    wanted = only or [name for name in models if name not in given]
    targets: list[str] = []
    statement_of = {id(s): i for i, s in enumerate(a.module.body)}
    named: dict[int, set[str]] = {}  # a class statement's index -> the model classes it names
    held: dict[int, set[str]] = {}  # ... and the classes of the file derived from built-ins
    for _, used, binding, statement in a.names.global_references():
        if used in class_defs and binding.statement == statement_of.get(id(class_defs[used])):
            if used in models:
                named.setdefault(statement, set()).add(used)
            elif used in derived:
                held.setdefault(statement, set()).add(used)

    def need(name: str) -> None:
        cls = classes[name]
        for dep in ([cls.model_base] if cls.model_base else []) + [ch.class_name for ch in cls.children]:
            need(dep)
        if name not in targets:
            targets.append(name)

    def run_as_library() -> set[str]:
        """The models of this file a target runs as library code, with their bases, and every model
        the code copied as written for it names (`comm=IndLinear(...)` in a projection class of the
        file): copied code builds the class of the file, not its batched twin."""
        found: set[str] = set()
        copied: set[str] = set()  # classes derived from built-ins, copied as written
        todo = [c for name in targets for c in scans[name].library_models]
        todo += [c for name in targets for c in held.get(statement_of[id(class_defs[name])], ())]
        todo += library_targets  # (batched whole, copied as written: `def __init__(self, pre: EINet)`)
        while todo:
            name = todo.pop()
            if name in found or name in copied:
                continue
            statement = statement_of[id(class_defs[name])]
            if name in models:
                found.add(name)
                todo += [base for base in [model_base(a, models[name], models)] if base]
            else:
                copied.add(name)
            todo += [*held.get(statement, ()), *named.get(statement, ())]
        return found

    for name in order:
        if name in wanted:
            need(name)
    while True:  # a class a target names may name others in turn
        library_models = run_as_library()
        more = sorted({n for t in targets for n in named.get(statement_of[id(class_defs[t])], ())}
                      - set(targets) - library_models)
        if not more:
            break
        for name in more:
            need(name)
    ir.targets = [n for n in order if n in targets]
    for name in ir.targets:  # Python's MRO runs each base's method through super(); batchify follows one base
        local = [b.value for b in models[name].bases if type(b.value) is cst.Name and b.value.value in models]
        if len(local) > 1:
            a.report(local[1], "BFY108", f"{name} derives from {len(local)} model classes of this file ("
                     f"{', '.join(b.value for b in local)}): batchify follows one model base per class, so "
                     f"the batched class would leave out what {', '.join(b.value for b in local[1:])} adds (its "
                     f"Variables, and its methods reached through super()); derive one from the other "
                     f"(class {local[1].value}({local[0].value})), or hold one as a child model")
    ir.library_models = frozenset(library_models)
    ir.library_targets = {n: derived[n] for n in library_targets}
    ir.library_late = {n: tuple(late_state(a, n, class_defs, derived)) for n in library_targets}
    # The source's class statements (a class grown with driver methods is a new node, not one of them).
    roots: list[cst.CSTNode] = [class_defs[n] for n in [*ir.targets, *library_targets]]
    defined = {s.name.value: s for s in a.module.body if type(s) is cst.FunctionDef}
    functions = [*functions, *copied_drivers]
    for name in functions:
        if name in defined:
            roots.append(defined[name])
        else:
            a.diagnostics.append(Diagnostic(path, 1, 1, "BFY013", f"harness: no module-level function named "
                                            f"'{name}' in the source"))
    binders = {}  # module-level names -> the statement binding them (the last one)
    for s in a.module.body if also else ():
        if type(s) in (cst.FunctionDef, cst.ClassDef):
            binders[s.name.value] = s
        elif isinstance(s, cst.SimpleStatementLine):
            for small in s.body:
                targets = ([t.target for t in small.targets] if isinstance(small, cst.Assign)
                           else [small.target] if isinstance(small, cst.AnnAssign) and small.value is not None else [])
                binders.update((t.value, s) for t in targets if isinstance(t, cst.Name))
    kept = {name: binders[name] for name in also if name in binders}
    # The user's functions that became methods need what they read, less the instance and each other.
    skipped = {}
    for name, instance in driven.items():
        roots.append(defined[name])
        skipped[id(defined[name])] = {instance, *driven}
    class_changes = check_class_changes(a, set(ir.targets))
    # Module-level settings the model's numbers depend on (`bm.set_dt(0.5)`) travel with it.
    settings = [s for s in a.module.body if environment_setting(a, s)]
    roots += settings
    needed = support_statements(a, roots, set(models) - library_models, skipped)
    for stmt in settings:
        needed.setdefault(id(stmt), set())
    for name in library_targets:  # copied as they are: the batched class runs them as library code
        needed.setdefault(id(class_defs[name]), set()).add(name)
    for name in functions:  # the functions themselves are copied too
        if name in defined:
            needed.setdefault(id(defined[name]), set()).add(name)
    if kept:  # (model classes too: what ``--init`` builds may build them)
        for key, names in support_statements(a, list(kept.values()), set()).items():
            needed.setdefault(key, set()).update(names)
    for name, stmt in kept.items():
        needed.setdefault(id(stmt), set()).add(name)
    check_shared_names(a, ir, shared)
    originals = [s for s in a.module.body if id(s) in needed]
    ir.support = [_prune_imports(s, needed[id(s)]) for s in originals]
    ir.source_lines = sorted(a.positions[s].start.line for s in [*originals, *(models[n] for n in ir.targets)])
    # Problems in classes and code the targets do not need are not theirs to report.
    spans = [(a.positions[n].start.line, a.positions[n].end.line) for n in [*originals, *roots, *class_changes]]
    wanted_diagnostics = [d for d in a.diagnostics if (d.line, d.column) == (1, 1) or d.code == "BFY005"
                          or any(lo <= d.line <= hi for lo, hi in spans)]
    if wanted_diagnostics:
        raise BatchifyError(sorted(wanted_diagnostics, key=lambda d: (d.line, d.column, d.code)))
    if not only:
        ir.warnings = left_out(a, class_defs, set(models) | set(derived))
    return ir


STEPPING = frozenset({"update", "__call__", "reset_state"})


def left_out(a: Analysis, classes: dict[str, cst.ClassDef], batched: set[str]) -> list[Diagnostic]:
    """Classes that define a stepping method and derive from a class imported from another module
    (not BrainPy, JAX, NumPy or the standard library): models of another file, most likely, which
    a run without --class leaves out, and says so (BFY019, a warning) rather than silently."""
    out = []
    for name, node in classes.items():
        if name in batched or not any(type(s) is cst.FunctionDef and s.name.value in STEPPING for s in node.body.body):
            continue
        imported = [q for b in node.bases for q in a.qualified.get(b.value, ())
                    if q.source is QualifiedNameSource.IMPORT and q.name.split(".")[0] not in names.KNOWN_PACKAGES]
        if imported:
            pos = a.positions[node.name]
            out.append(Diagnostic(a.path, pos.start.line, pos.start.column + 1, "BFY019", f"{describe(a, node)} is "
                                  f"left out: its base comes from another file, and batchify reads one file. "
                                  f"Define that base here to batch {name} with the rest", severity="warning"))
    return out


def check_class_changes(a: Analysis, targets: set[str]) -> list[cst.CSTNode]:
    """``Unit.gain = 3.0`` or ``setattr(Unit, "gain", 3.0)`` at module level, after the class: the
    generated module defines ``UnitBatched`` and copies no statement about ``Unit`` (BFY014).
    Returns the statements reported."""
    found = []
    for stmt in a.module.body:
        if type(stmt) is not cst.SimpleStatementLine:
            continue
        for small in stmt.body:
            targets_ = ([t.target for t in small.targets] if type(small) is cst.Assign else
                        [small.target] if type(small) in (cst.AugAssign, cst.AnnAssign) else [])
            changed = [t.value.value for t in targets_ if type(t) in (cst.Attribute, cst.Subscript)
                       and type(t.value) is cst.Name and t.value.value in targets]
            if (type(small) is cst.Expr and type(small.value) is cst.Call and type(small.value.func) is cst.Name
                    and small.value.func.value in ("setattr", "delattr") and small.value.args
                    and type(small.value.args[0].value) is cst.Name and small.value.args[0].value.value in targets):
                changed.append(small.value.args[0].value.value)
            if changed:
                name = changed[0]
                found.append(stmt)
                a.report(small, "BFY014", f"this statement changes the model class {name} at module level; the "
                         f"generated module defines {name}Batched from the class statement alone and does not run "
                         f"it: make the change in the class body ({name}'s class attributes and methods)")
    # `@with_gain class Rate(...)`: the decorator may change the class (or replace it) as Python defines it.
    for stmt in a.module.body:
        if type(stmt) is cst.ClassDef and stmt.name.value in targets and stmt.decorators:
            decorator = stmt.decorators[0]
            found.append(decorator)
            written = cst.Module([]).code_for_node(decorator.decorator)
            a.report(decorator.decorator, "BFY014", f"@{written} may change the model class {stmt.name.value} as "
                     f"Python defines it; the generated module defines {stmt.name.value}Batched from the class "
                     "statement alone and does not apply it: make the change in the class body (class attributes "
                     "and methods) and remove the decorator")
    return found


def environment_setting(a: Analysis, stmt: cst.CSTNode) -> bool:
    """``bm.set_dt(0.5)``, ``jax.config.update("jax_enable_x64", True)``: a module-level call setting
    what the model's numbers depend on, from literals and BrainPy/JAX/NumPy names only. One that
    reads the script's own data (``bm.set(mode=bm.TrainingMode(args.batch_size))`` after
    ``args = parser.parse_args()``) is the script's business: copying it would drag argument
    parsing into the generated module."""
    if not (type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1
            and type(stmt.body[0]) is cst.Expr and type(stmt.body[0].value) is cst.Call
            and a.qualified_names(stmt.body[0].value.func) & names.ENVIRONMENT_SETTERS):
        return False
    call = stmt.body[0].value
    nodes = [n for arg in call.args for n in walk(arg.value)]
    not_roots = {id(n.attr) for n in nodes if type(n) is cst.Attribute}
    for node in nodes:
        if type(node) is cst.Name and id(node) not in not_roots and node.value not in ("True", "False", "None"):
            if not any(q.split(".")[0] in ("brainpy", "jax", "numpy") for q in a.qualified_names(node)):
                return False
    return True


def check_shared_names(a: Analysis, ir: ModuleIR, shared: Iterable[str]) -> None:
    """Every ``--shared NAME`` names an argument of a stepping method or a state Variable: a typo
    would otherwise leave the argument per example, silently."""
    arguments: set[str] = set()
    variables: set[str] = set()
    for name in ir.targets:
        cls = ir.classes[name]
        variables |= {f.name for f in ir.all_fields(cls) if f.kind == "state"}
        for method in ir.all_methods(cls).values():
            if method.name in cls.stateful:
                p = method.node.params
                arguments |= {q.name.value for q in (*p.posonly_params, *p.params, *p.kwonly_params)}
    known = arguments | variables
    for item in shared:
        name, _, mode = item.partition("=")
        if name in (variables if mode else known):
            continue
        import difflib  # only for a mistyped --shared name

        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f"; did you mean --shared {close[0]}{'=' + mode if mode else ''}?" if close else ""
        what = "state Variable" if mode else "argument of a stepping method or state Variable"
        a.diagnostics.append(Diagnostic(a.path, 1, 1, "BFY015", f"--shared {item}: no {what} is named "
                                        f"'{name}' in {', '.join(ir.targets)}{hint}"))


def known_variables(ir: ModuleIR, cls: ModelClass) -> Known:
    """The Variables ``cls``'s methods reach by ``self`` paths: its fields, its children's, built-ins;
    and, of a child, what its methods hand out as the Variable object (``return self.h``) and do with
    their parameters (a Variable handed to ``self.proj(x, self.I)``)."""
    known = Known({f.name for f in ir.all_fields(cls)},
                  {ch: known_variables(ir, c) for ch, c in ir.child_map(cls).items()},
                  set(ir.all_libraries(cls)), {f.name for f in ir.all_fields(cls) if f.container == "list"},
                  {f.name for f in ir.all_fields(cls) if f.container == "dict"},
                  *ir.all_model_sequences(cls))
    methods = ir.all_methods(cls)
    helpers = {**module_lambdas(ir.module), **{s.name.value: s for s in ir.module.body if type(s) is cst.FunctionDef},
               **{f"self.{m}": meth.node for m, meth in methods.items()}}
    for name, method in methods.items():
        me = self_name_of(method.node) if method.kind == "method" else None
        if me is None:
            continue
        follower = Normaliser(me, known, {}, lambda *_: None, lambda *_: None)  # reports nothing: reads only
        returned = follower.returned_variables(method.node)
        if returned:
            known.returns[name] = returned
        if len(method.node.params.params) + len(method.node.params.kwonly_params) > 1:  # beyond self
            reader = Normaliser(me, known, helpers, lambda *_: None, lambda *_: None)  # its own helpers
            known.steps[name] = reader.argument_use(method.node, f"{cls.name}.{name}()")
    return known


def plain_attribute_test(ir: ModuleIR, cls: ModelClass) -> Callable[[str], bool]:
    """Whether ``self.NAME`` is a plain attribute: not a Variable, child, built-in or method."""
    taken = ({f.name for f in ir.all_fields(cls)} | set(ir.child_map(cls)) | set(ir.all_libraries(cls))
             | set(ir.all_methods(cls)))
    return lambda name: name not in taken


def module_data_names(module: cst.Module) -> set[str]:
    """Names that module-level assignments bind (data a step could mutate), not imports or defs."""
    out: set[str] = set()
    for stmt in module.body:
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                targets = [small.target] if type(small) is cst.AnnAssign else assigned(small)
                out.update(t.value for t in targets if type(t) is cst.Name)
    return out


SWEEPS = frozenset({"brainpy.reset_state", "brainpy.clear_input", "brainpy.helpers.reset_state",
                    "brainpy.helpers.clear_input"})


def check_sweeps(a: Analysis, cls: ModelClass, method: Method, own: set[str], children: dict[str, set[str]],
                 via: str = "", seen: set[str] | None = None, shown: str = "self") -> None:
    """``bp.reset_state(self)``, ``self.reset()``, ``bp.clear_input(self.child)`` in a stepping method,
    or in a helper of the class it calls (``self.restart()``, which no step rewrites): BrainPy's sweep
    over the model's nodes writes their Variable objects, not the state the pure method threads
    through, so the step would go on from the unreset state. (main copied them as they were: every
    example kept its old state, verify FAIL.) BrainPy's inherited ``step_run`` likewise (BFY221)."""
    seen = set() if seen is None else seen
    seen.add(method.name)
    me = self_name_of(method.node)
    runs = f"{method.name}(){via} runs"
    in_reset = method.name == "reset_state" and not via
    for node in walk(method.node.body):
        path = self_path(node, me) if me and type(node) is cst.Attribute else None
        if path and path[-1] == "step_run" and (
                (len(path) == 1 and "step_run" not in own)
                or (len(path) == 2 and path[0] in children and "step_run" not in children[path[0]])):
            owner = shown if len(path) == 1 else f"{shown}.{path[0]}"  # (a --function's: its instance's name)
            a.report(node, "BFY221", f"{runs} {owner}.step_run, BrainPy's inherited step_run (it saves the clock, "
                     "runs update and sweeps clear_input over the nodes): batchify rewrites only the model's own "
                     "methods; define step_run in the class (def step_run(self, i, x): bp.share.save(i=i, "
                     "t=i * bm.get_dt()); out = self.update(x), then clear the inputs of the children that hold "
                     "them, self.E.clear_input(); return out), or loop over update")
            continue
        if type(node) is not cst.Call:
            continue
        swept = a.qualified_names(node.func) & SWEEPS
        path = self_path(node.func, me) if me and type(node.func) is cst.Attribute else None
        inherited_reset = bool(path) and path[-1] == "reset" and (
            (len(path) == 1 and "reset" not in own)
            or (len(path) == 2 and path[0] in children and "reset" not in children[path[0]]))
        if not swept and not inherited_reset:
            continue
        what = "bp." + sorted(swept)[0].rsplit(".", 1)[1] if swept else "BrainPy's reset()"
        if in_reset:
            instead = "reset each child with its own reset_state (self.child.reset_state(batch_size))"
        elif "clear_input" in what:
            instead = ("clear the inputs of the children that hold them (self.E.clear_input()), which batchify "
                       "rewrites for one example")
        else:
            instead = ("call the model's own reset_state() (or a child's), which batchify rewrites for one "
                       "example, or reset the batch outside the step (batched.reset())")
        a.report(node, "BFY220", f"{runs} {what}, BrainPy's sweep over a model's nodes: it would write the "
                 "Variable objects, not the state this method threads for one example, which would go on from "
                 f"the state before it; {instead}")
    for name in sorted(method.self_calls - seen):  # a helper no step rewrites (it touches no state itself)
        helper = cls.methods.get(name)
        if helper is not None and name not in cls.stateful and helper.kind == "method":
            check_sweeps(a, cls, helper, own, children, f", through {method.name}(){via}", seen, shown)


def made_as_matrix(scan) -> set[str]:
    """Fields whose constructor in __init__ names a two-item shape: ``bm.Variable(bm.zeros((n, m)))``,
    ``bm.random.normal(size=(n_out, n_in))``."""
    init = scan.init
    if init is None:
        return set()
    me = self_name_of(init) or "self"
    out = set()
    for node in walk(init.body):
        if type(node) is cst.Assign and len(node.targets) == 1:
            path = self_path(node.targets[0].target, me)
            if path and len(path) == 1 and any(type(n) is cst.Tuple and len(n.elements) == 2
                                               for n in walk(node.value)):
                out.add(path[0])
    return out


def check_learned_online(a: Analysis, ir: ModuleIR, cls: ModelClass, modes: Mapping[str, str], scan) -> None:
    """A Variable multiplied like a weight (``x @ self.w``) and incremented by a learning rule outside
    the stepping method (``self.w += dw`` in ``rls``, ``learn``) is learned online: per example, or
    once for the batch? batchify asks (BFY211) rather than guess."""
    methods = ir.all_methods(cls)
    stepping, todo = set(), ["update", "__call__", "reset_state"]
    while todo:  # what update (and reset_state) run
        m = todo.pop()
        if m in methods and m not in stepping:
            stepping.add(m)
            todo.extend(methods[m].self_calls)
    multiplied = {f for m in methods.values() for f in m.multiplied}
    # On the left (`self.W @ x`, an Oja or BCM layer's y = W x): a weight where it is made a matrix
    # (a two-item shape in its constructor), not a state vector (`self.r @ self.W_rec`).
    multiplied |= {f for m in methods.values() for f in m.left_multiplied} & made_as_matrix(scan)
    learned = {f for m in methods.values() if m.name not in stepping for f in m.incremented}
    state = {f.name for f in cls.fields if f.kind == "state"}
    for name in sorted(multiplied & learned & state):
        if name in modes:
            continue
        target = next((t for t in scan.targets.get(name, ())), cls.node.name)
        a.report(target, "BFY211", f"self.{name} is multiplied like a weight and written by a learning rule "
                 f"outside update(): declare how the batch learns it with --shared {name}=mean (one copy, "
                 f"updated by the mean of the examples' updates), {name}=sum, or {name}=example (each example "
                 "learns its own copy, as running the original example by example does)")


INTEGRATOR_FACTORIES = ("brainpy.odeint", "brainpy.sdeint", "brainpy.fdeint", "brainpy.JointEq", "brainpy.integrators.",
                        "brainpy.ode.", "brainpy.sde.", "brainpy.fde.")


class _MethodOfHolder(Transformer):
    """``method=method`` (an argument of __init__) in an integrator rebuilt by ``from_model``:
    ``method=bfy.integrator_method(self.integral)``, the method of the integrator the model built."""

    def __init__(self, ids: set[int], me: str, holder: str):
        super().__init__()
        self.ids, self.me, self.holder = ids, me, holder

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        if id(original.value) not in self.ids:
            return updated
        holder = cst.Attribute(cst.Name(self.me), cst.Name(self.holder))
        return updated.with_changes(value=cst.Call(cst.Attribute(cst.Name(names.RUNTIME), cst.Name(
            "integrator_method")), [cst.Arg(holder)]))


def check_self_handed_over(a: Analysis, cls: ModelClass, module_functions: Mapping[str, cst.FunctionDef]) -> None:
    """``leaky_step(self, x)`` in a method, where ``leaky_step`` is a function of this file reaching
    attributes of the model it is given (``model.h.value = ...``): batchify follows state only through
    ``self`` in the class's own methods, so the function would run on the whole batch's Variables
    (``energy(self)`` summing every example's state) - BFY213 with the way out."""
    for method in cls.methods.values():
        if method.name in cls.construction_helpers:
            continue
        func, me = method.node, self_name_of(method.node)
        if me is None:
            continue
        for node in walk(func.body):
            if not (type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in module_functions):
                continue
            callee = module_functions[node.func.value]
            positional = [p.name.value for p in callee.params.params]
            for i, arg in enumerate(node.args):
                if not (type(arg.value) is cst.Name and arg.value.value == me) or arg.star:
                    continue
                param = arg.keyword.value if arg.keyword else positional[i] if i < len(positional) else None
                if param is None or not any(type(n) is cst.Attribute and type(n.value) is cst.Name
                                            and n.value.value == param for n in walk(callee.body)):
                    continue
                a.report(arg.value, "BFY213", f"{method.name}() hands {me} to {callee.name.value}(), a function of "
                         f"this file that reaches the model's attributes as {param}: batchify follows a model's "
                         f"state only through {me} in its class's methods, so {callee.name.value}() would work on the "
                         f"whole batch's Variables; make it a method (def {callee.name.value}(self, ...)) and call "
                         f"{me}.{callee.name.value}(...)")


def check_escaping_methods(a: Analysis, cls: ModelClass, scan) -> None:
    """A stateful method or property handed over in __init__ (``bp.odeint(bp.JointEq(self.dV, ...))``,
    ``bp.odeint(f=self.derivative)``): the object holding it calls it later, from inside one
    example's step, where the batched method would step the whole batch (silently wrong when the
    neuron count equals the batch size). Handed to an integrator stored on self and only reading
    state, it reads that example's state instead (``context_*``); anything else is BFY208."""
    init = scan.init
    if init is None:
        return
    me = self_name_of(init) or "self"
    called = {id(n.func) for n in walk(init.body) if type(n) is cst.Call}
    methods, properties, holders, values = set(), set(), set(), {}
    own_names = param_names(init.params) | {t.value for n in walk(init.body) for t in assigned(n) if type(t) is cst.Name}
    for stmt in walk(init.body):
        if type(stmt) is not cst.SimpleStatementLine:
            continue
        for small in stmt.body:
            nodes = list(walk(small))
            refs = [n for n in nodes if type(n) is cst.Attribute and id(n) not in called
                    and (p := self_path(n, me)) and len(p) == 1 and p[0] in cls.stateful and p[0] in cls.methods]
            if not refs:
                continue
            target = self_path(small.targets[0].target, me) if type(small) is cst.Assign and len(
                small.targets) == 1 else None
            integrator = type(small) is cst.Assign and any(
                type(n) is cst.Call and any(q.startswith(INTEGRATOR_FACTORIES) for q in a.qualified_names(n.func))
                for n in nodes)
            # __init__'s parameters and locals the statement reads: from_model could not rebuild it,
            # except the integration method (`method=method`): the integrator it built says which.
            methods_of = {id(arg.value) for n in nodes if type(n) is cst.Call and any(
                q.startswith(INTEGRATOR_FACTORIES) for q in a.qualified_names(n.func))
                for arg in n.args if arg.keyword and arg.keyword.value == "method" and type(arg.value) is cst.Name}
            not_reads = {id(x.keyword) for x in nodes if type(x) is cst.Arg and x.keyword} | {
                id(x.attr) for x in nodes if type(x) is cst.Attribute} | {id(t) for t in assigned(small)} | methods_of
            local = sorted({n.value for n in nodes if type(n) is cst.Name and id(n) not in not_reads
                            and n.value in own_names and n.value != me})
            for node in refs:
                name = node.attr.value
                method = cls.methods[name]
                # (a call of a helper touching no state, `self.H(x)` in a Wong-Wang derivative, changes nothing;
                # nor does handing out methods that only read, `return bp.JointEq(self.dV, self.dw)`)
                reached = reads_only(cls, name)
                reader = reached is not None
                if target and len(target) == 1 and integrator and reader and method.kind in ("method", "property"):
                    if local:
                        a.report(node, "BFY208", f"self.{target[0]} is an integrator of derivatives that read state, "
                                 f"built from __init__'s own names ({', '.join(local)}): from_model rebuilds it around "
                                 "the batch's derivatives and needs it built from constants, module-level names, "
                                 "self attributes and a method= argument (store the value on self first)")
                        continue
                    (properties if method.kind == "property" else methods).add(name)
                    methods.update(m for m in reached if cls.methods[m].kind == "method")
                    holders.add(target[0])
                    values[target[0]] = small.value.visit(_MethodOfHolder(methods_of, me, target[0]))
                    continue
                read = sorted(method.reads | method.writes)
                what = f"reads self.{read[0]}, a Variable" if read else "touches state"
                why = ("it changes state or calls other stateful code" if not reader else
                       "it is not handed to an integrator stored on self")
                a.report(node, "BFY208", f"self.{name} is handed over in __init__ and {what}, and {why}: the "
                         "object holding it would run the batched method inside one example's step; read the "
                         "Variable in the stepping method and pass its value as an argument")
    cls.context_methods, cls.context_properties, cls.holders = frozenset(methods), frozenset(properties), frozenset(holders)
    cls.holder_values = values


def reads_only(cls: ModelClass, name: str) -> set[str] | None:
    """The stateful methods of ``cls`` that ``name`` runs or hands out (``return self.ds``), when
    none of them, nor ``name`` itself, writes state, draws or steps a child; else None."""
    found: set[str] = set()
    todo = [name]
    while todo:
        method = cls.methods.get(todo.pop())
        if method is None or method.writes or method.draws or method.child_calls:
            return None
        for callee in method.self_calls & cls.stateful:
            if callee not in found and callee != name:
                found.add(callee)
                todo.append(callee)
    return found


# BrainPy's collectors of a model's Variables and nodes: they hand out the objects themselves.
COLLECTORS = frozenset({"vars", "train_vars", "nodes", "state_dict"})


def check_collectors(a: Analysis, ir: ModuleIR, cls: ModelClass) -> None:
    """``self.vars()`` / ``self.train_vars()`` / ``self.nodes()`` in a stepping method, or in a plain
    method one calls: the Variable objects, which the batched step does not read per example (it
    would see the whole batch's state, and the weights outside the gradient). Refused (BFY213)."""
    methods = ir.all_methods(cls)

    def collectors(method: Method) -> list[cst.Call]:
        me = self_name_of(method.node)
        if me is None or method.kind != "method":
            return []
        out = []
        for node in walk(method.node.body):
            if type(node) is cst.Call and type(node.func) is cst.Attribute:
                path = self_path(node.func, me)
                if path and path[-1] in COLLECTORS and not (len(path) == 1 and path[0] in methods):
                    out.append(node)
        return out

    def plain_reaches(name: str, seen: frozenset[str]) -> cst.Call | None:
        """A collector call in the plain method ``name`` or a plain method it calls."""
        method = methods.get(name)
        if method is None or name in cls.stateful or name in seen:
            return None
        found = collectors(method)
        if found:
            return found[0]
        return next((c for callee in sorted(method.self_calls) for c in [plain_reaches(callee, seen | {name})] if c),
                    None)

    # BrainPy's entry points are stepping methods even when they reach state through a collector only
    # (`for node in self.nodes(...).values(): out += node(x)`): nothing else marks them stateful.
    has_state = bool(ir.all_fields(cls) or ir.all_children(cls) or ir.all_libraries(cls))
    for method in cls.methods.values():
        if method.name not in cls.stateful and not (has_state and method.name in ("update", "__call__")):
            continue
        for call in collectors(method):
            instead = ("call the models by name instead (self.a(x), self.b(x))" if call.func.attr.value == "nodes"
                       else "name the Variables instead (self.V, self.w)")
            handed = ("the model objects, whose Variables" if call.func.attr.value == "nodes"
                      else "the Variable objects, which")
            a.report(call, "BFY213", f"self.{call.func.attr.value}() in {method.name}(), a stepping method: it hands "
                     f"out {handed} the batched step does not read per example (it would see "
                     f"the whole batch's state, and weights outside the gradient); {instead}")
        me = self_name_of(method.node)
        for node in walk(method.node.body):
            path = self_path(node.func, me) if type(node) is cst.Call and me else None
            if path and len(path) == 1 and (found := plain_reaches(path[0], frozenset())) is not None:
                a.report(node, "BFY213", f"self.{path[0]}() is called in {method.name}(), a stepping method, and "
                         f"reaches self.{found.func.attr.value}() (line {a.positions[found].start.line}), which "
                         "hands out the Variable objects: the batched step would not read them per example (the "
                         "whole batch's state, and weights outside the gradient); name the Variables instead")


def name_inherited_methods(a: Analysis, models: dict[str, cst.ClassDef]) -> None:
    """``self.init_variable(...)`` in a model class that defines no ``init_variable`` (nor does a base
    of this file): BrainPy's method, named so that the rules treat it as the Variable factory it is."""
    def defines(name: str, seen: frozenset[str] = frozenset()) -> bool:
        node = models[name]
        if any(type(s) is cst.FunctionDef and s.name.value == "init_variable" for s in node.body.body):
            return True
        base = model_base(a, node, models)
        return base is not None and base not in seen and defines(base, seen | {name})

    for name, node in models.items():
        if defines(name):
            continue
        for func in node.body.body:
            me = self_name_of(func) if type(func) is cst.FunctionDef else None
            if me is None:
                continue
            for n in walk(func.body):
                if type(n) is cst.Attribute and self_path(n, me) == ["init_variable"]:
                    a.qualified.methods[n] = QualifiedName(names.INIT_VARIABLE, QualifiedNameSource.IMPORT)


def target_names(node: cst.CSTNode) -> list[str]:
    """The plain names a statement binds: assignment targets (unpacking tuples, lists and starred),
    ``for`` and ``with`` targets, ``:=``, a ``def``/``class`` name, an import's name."""
    if type(node) is cst.Assign:
        targets = [t.target for t in node.targets]
    elif type(node) in (cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr, cst.CompFor):
        targets = [node.target]
    elif type(node) is cst.WithItem:
        targets = [node.asname.name] if node.asname is not None else []
    elif type(node) in (cst.FunctionDef, cst.ClassDef):
        return [node.name.value]
    elif type(node) is cst.ImportAlias:
        bound = node.asname.name if node.asname is not None else node.name
        return [bound.value] if type(bound) is cst.Name else [cst.Module([]).code_for_node(bound).split(".")[0]]
    else:
        return []
    out = []
    while targets:
        t = targets.pop()
        if type(t) is cst.Name:
            out.append(t.value)
        elif type(t) in (cst.Tuple, cst.List):
            targets += [e.value for e in t.elements]
        elif type(t) is cst.StarredElement:
            targets.append(t.value)
    return out


def made_variable(a: Analysis, value: cst.BaseExpression | None) -> set[str]:
    """The qualified names of ``value`` when it is a Variable construction (``bm.Variable(...)``,
    ``bm.TrainVar(...)``), else none."""
    if type(value) is not cst.Call:
        return set()
    return a.qualified_names(value.func) & (names.STATE_VARIABLES | names.PARAM_VARIABLES)


def factory_of(a: Analysis, func: cst.FunctionDef | cst.Lambda) -> set[str]:
    """What a function of this file that only makes a Variable, or only builds a BrainPy built-in,
    returns, named as that constructor (``{'brainpy.math.Variable'}``, ``{'brainpy.dyn.FullProjAlignPostMg'}``):
    a lambda whose body is such a call, or an undecorated ``def`` whose every ``return`` (one at
    least; no ``yield``) returns one, all of the same constructor. Anything else: none."""
    if type(func) is cst.Lambda:
        return made_variable(a, func.body) or made_builtin(a, func.body)
    if func.decorators:
        return set()
    nested = {id(n) for f in walk(func.body) if type(f) in (cst.FunctionDef, cst.Lambda, cst.ClassDef)
              for n in walk(f)}
    body = [n for n in walk(func.body) if id(n) not in nested]
    returns = [n for n in body if type(n) is cst.Return]
    if not returns or any(type(n) in (cst.Yield, cst.Global, cst.Nonlocal) for n in body):
        return set()
    kinds = [made_variable(a, r.value) or made_builtin(a, r.value) for r in returns]
    return kinds[0] if all(k and k == kinds[0] for k in kinds) else set()


def made_builtin(a: Analysis, value: cst.BaseExpression | None) -> set[str]:
    """The qualified names of ``value`` when it builds a BrainPy built-in (``bp.dyn.FullProjAlignPostMg(...)``)."""
    if type(value) is not cst.Call:
        return set()
    found = a.qualified_names(value.func)
    return found if any(names.is_library(q) for q in found) else set()


def name_factories(a: Analysis, models: dict[str, cst.ClassDef]) -> None:
    """``self.V = _state(shape, v)`` where ``_state`` is a function of this file that only makes a
    Variable (``return bm.Variable(...)``), ``full = lambda v: bm.Variable(...)`` in the method itself
    (then ``self.S1, self.S2 = full(0.0), full(0.0)``), or ``self.E2E = _projection(self.E, self.E)``
    returning a built-in: the call is named as the constructor it stands for, so that the rules treat
    it as what it makes (a Variable batched in ``__init__``, its ``.value`` in ``reset_state``; a
    built-in held as library code with the models it is given). A name bound otherwise too (a
    parameter, a second assignment) is not followed."""
    module_level: dict[str, set[str]] = {}
    bound: dict[str, int] = {}
    for stmt in a.module.body:
        if type(stmt) in (cst.FunctionDef, cst.ClassDef):
            bound[stmt.name.value] = bound.get(stmt.name.value, 0) + 1
        for n in walk(stmt) if type(stmt) is cst.SimpleStatementLine else ():
            if type(n) in (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.ImportAlias):
                for name in target_names(n):
                    bound[name] = bound.get(name, 0) + 1
        if type(stmt) is cst.FunctionDef:
            module_level[stmt.name.value] = factory_of(a, stmt)
            if any(made_variable(a, n) for n in walk(stmt.body)):
                a.variable_makers.add(stmt.name.value)
        if type(stmt) is cst.ClassDef:  # `class YourVar(bm.Variable)`: a Variable of that kind
            made = {q for b in stmt.bases for q in a.qualified_names(b.value)
                    if q in names.STATE_VARIABLES | names.PARAM_VARIABLES}
            if made:
                module_level[stmt.name.value] = made
    module_level = {k: v for k, v in module_level.items() if v and bound.get(k) == 1}
    a.variable_makers -= set(module_level)
    for node in models.values():
        for func in node.body.body:
            if type(func) is not cst.FunctionDef:
                continue
            local_binds: dict[str, list[cst.BaseExpression | None]] = {}
            for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params):
                local_binds.setdefault(p.name.value, []).append(None)
            for n in walk(func.body):
                single = type(n) is cst.Assign and len(n.targets) == 1 and type(n.targets[0].target) is cst.Name
                for name in target_names(n):
                    local_binds.setdefault(name, []).append(n.value if single else None)
            factories = {name: factory_of(a, values[0]) for name, values in local_binds.items()
                         if len(values) == 1 and type(values[0]) is cst.Lambda}
            factories = {k: v for k, v in factories.items() if v}
            factories.update({k: v for k, v in module_level.items() if k not in local_binds})
            for n in walk(func.body):
                if type(n) is cst.Call and type(n.func) is cst.Name and n.func.value in factories:
                    made = sorted(factories[n.func.value])[0]
                    a.qualified.methods[n.func] = QualifiedName(made, QualifiedNameSource.IMPORT)
            for name, values in local_binds.items():
                if name in factories and type(values[0]) is cst.Lambda:
                    a.factory_bodies.add(id(values[0].body))


def check_super_names(a: Analysis, class_defs: dict[str, cst.ClassDef], models: dict[str, cst.ClassDef]) -> None:
    """``super(Other, self)`` in a model class that neither is nor derives from ``Other``, a class of
    this file, where no class of the file derives from both (cooperative multiple inheritance):
    Python raises TypeError there (BFY218). Copied, the batched code would raise it too; and under
    --class the reference named a class that was not generated (BFY900 'a batchify bug')."""
    def ancestors(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        found = {name}
        for base in class_defs[name].bases if name not in seen else ():
            if type(base.value) is cst.Name and base.value.value in class_defs:
                found |= ancestors(base.value.value, seen | {name})
        return found

    lines = {name: ancestors(name) for name in class_defs}
    for name, node in models.items():
        for call in walk(node.body):
            if not (type(call) is cst.Call and type(call.func) is cst.Name and call.func.value == "super"
                    and len(call.args) == 2 and type(call.args[0].value) is cst.Name):
                continue
            other = call.args[0].value.value
            if (other not in class_defs or other in lines[name]
                    or any({name, other} <= line for line in lines.values())):
                continue
            a.report(call.args[0].value, "BFY218", f"super({other}, ...) in {name}, which does not derive from "
                     f"{other}: Python raises TypeError here (super(type, obj): obj must be an instance or "
                     f"subtype of type); did you mean super({name}, self), or super()?")


def check_stateful_overrides(a: Analysis, ir: ModuleIR, cls: ModelClass) -> None:
    """An override that touches state, of a base method that touches none, which a stepping method
    of the base calls: the base's pure method calls it as plain code, so the subclass's batched step
    would run the override on the whole batch (verify: BFY303). Refused (BFY217) unless the subclass
    overrides those callers too (they are then rewritten knowing the override is stateful)."""
    if cls.model_base is None:
        return
    base = ir.classes[cls.model_base]
    inherited = ir.all_methods(base)
    for name, method in cls.methods.items():
        if name not in cls.stateful or name not in inherited or name in base.stateful:
            continue
        callers = sorted(m for m, meth in inherited.items()
                         if m in base.stateful and name in meth.self_calls and m not in cls.methods)
        if callers:
            changes = bool(method.writes or method.draws)
            touches = "changes state" if changes else "reads state (or weights)"
            shown = f"{name}" if method.kind == "property" else f"{name}()"
            what = "the property" if method.kind == "property" else "it"
            uses = "reads" if method.kind == "property" else "calls"
            way = ("keep the state change in a method " + base.name + " knows to be stateful" if changes else
                   f"pass what {shown} reads to it as an argument")
            a.report(method.node.name, "BFY217", f"{cls.name}.{shown} {touches}, but the {base.name}.{shown} "
                     f"{what} overrides does not, and {base.name}.{callers[0]}() {uses} it as plain code: the "
                     f"batched {callers[0]}() would run this override on the whole batch; override "
                     f"{callers[0]}() in {cls.name} too, or {way}")


HOST_CONVERSIONS = frozenset({"numpy.asarray", "numpy.array", "numpy.copy", "numpy.save", "numpy.savez"})


def host_conversion(ir: ModuleIR, func: cst.FunctionDef) -> bool:
    """Whether ``func`` turns values into host NumPy (``np.asarray(...)``, ``x.tolist()``, ``.item()``)."""
    for node in walk(func.body):
        if type(node) is not cst.Call:
            continue
        if {q.name for q in ir.qualified.get(node.func, ())} & HOST_CONVERSIONS:
            return True
        if type(node.func) is cst.Attribute and node.func.attr.value in ("tolist", "item") and not node.args:
            return True
    return False


def mark_stateful(ir: ModuleIR, cls: ModelClass) -> None:
    """A method is stateful if it touches a field or calls something stateful (a fixpoint)."""
    stateful = set(ir.classes[cls.model_base].stateful) if cls.model_base else set()
    children = ir.child_map(cls)
    # A method that only changes weights (a constraint such as clipping, applied between training
    # steps) and that no other method calls acts on the shared TrainVars as it is: kept verbatim.
    # Not BrainPy's step (update, __call__): one that writes a weight is a step, refused (BFY201).
    params = {f.name for f in ir.all_fields(cls) if f.kind == "param"}
    called = {c for m in ir.all_methods(cls).values() for c in m.self_calls}
    weight_methods = {m.name for m in cls.methods.values()
                      if m.writes and m.writes | m.reads <= params and not (m.draws or m.self_calls or m.child_calls)
                      and m.name not in called and m.name not in ("update", "__call__")}
    # A method that reads state into NumPy on the host (`np.asarray(self.A.value)`: a checkpoint
    # helper), changes nothing and no other method calls: it cannot run per example inside a batched
    # call, and is kept as it is, reading the batch's Variables (each with its batch axis).
    weight_methods |= {m.name for m in cls.methods.values()
                       if m.reads and not (m.writes or m.draws or m.self_calls or m.child_calls)
                       and m.name not in called and m.name not in ("update", "__call__", "reset_state")
                       and m.kind == "method" and host_conversion(ir, m.node)}
    changed = True
    while changed:
        changed = False
        for method in cls.methods.values():
            # Construction helpers build the object, as __init__ does: neither is a step.
            if method.name in stateful or method.name in weight_methods or method.name in cls.construction_helpers:
                continue
            if touches(method, stateful, children):
                stateful.add(method.name)
                changed = True
    for method in cls.methods.values():  # an override that does not touch state stays plain
        if method.name in stateful and not touches(method, stateful, children):
            stateful.discard(method.name)
    cls.stateful = stateful
    # Readers: stateful methods that change nothing (they read weights or state, call only readers).
    methods = ir.all_methods(cls)
    readers = {m for m in stateful if m in methods}
    changed = True
    while changed:
        changed = False
        for m in sorted(readers):
            method = methods[m]
            if (method.writes or method.draws or any(c in stateful and c not in readers for c in method.self_calls)
                    or any(meth in children[c].stateful and meth not in children[c].readers
                           for c, meth in method.child_calls)
                    or any(p[0] in ir.all_libraries(cls) for p in [[r] for r in method.reads])):
                readers.discard(m)
                changed = True
    cls.readers = readers
    # Library code may draw from BrainPy's global stream: a class holding some gets per-example keys.
    # A subclass of a random base is random too: an override of the drawing method may still run it
    # through super() (on main it got no key: BFY900, or 'SubState' has no attribute 'rng_key').
    cls.random = (cls.model_base is not None and ir.classes[cls.model_base].random) or any(
        m.draws and m.name in stateful for m in ir.all_methods(cls).values()) or any(
        c.random for c in children.values()) or bool(ir.all_libraries(cls))


def touches(method: Method, stateful: set[str], children: dict[str, ModelClass]) -> bool:
    return bool(method.reads or method.writes or method.draws or method.self_calls & stateful
                or any(meth in children[c].stateful for c, meth in method.child_calls))


def support_statements(a: Analysis, roots: list[cst.CSTNode], model_names: set[str],
                       skipped: dict[int, set[str]] | None = None) -> dict[int, set[str]]:
    """Module-level statements (imports, helpers, constants) the roots need, transitively:
    ``id(statement) -> the names it binds that are used``; ``skipped``: names a root's uses leave out
    (a driving function's instance and the other driving functions, methods now)."""
    skipped = skipped or {}
    # For each top-level statement, the top-level statements (with the names) its code refers to.
    uses: dict[int, set[tuple[int, str]]] = {}
    by_id: dict[int, cst.CSTNode] = {id(s): s for s in a.module.body}
    access_origin: dict[int, list[tuple[cst.CSTNode, str, cst.CSTNode]]] = {}
    for node, name, binding, statement in a.names.global_references():
        user, owner = a.module.body[statement], a.module.body[binding.statement]
        if name in skipped.get(id(user), ()):
            continue
        uses.setdefault(id(user), set()).add((id(owner), name))
        access_origin.setdefault(id(user), []).append((node, name, owner))
    needed: dict[int, set[str]] = {}
    # Functions of the file rebinding module globals (`def set_scale(v): global SCALE; SCALE = v`):
    # a module-level call of one (`set_scale(4.0)`) completes those globals' definitions.
    rebinders = {st.name.value: {n.name.value for g in walk(st.body) if type(g) is cst.Global for n in g.names}
                 for st in a.module.body if type(st) is cst.FunctionDef}
    todo = [id(c) for c in roots]
    seen = set(todo)
    pulled_by: dict[int, tuple[cst.CSTNode, str]] = {}  # a copied statement: where a root first uses it
    while True:
        while todo:
            current = todo.pop()
            for owner_id, name in sorted(uses.get(current, ()), key=lambda x: x[1]):
                owner = by_id[owner_id]
                if type(owner) is cst.ClassDef and owner.name.value in model_names:
                    if current in pulled_by and type(by_id[current]) is not cst.ClassDef:
                        # `model = Foo(...)` at module level, used by copied code: the generated module
                        # has no Foo, and one shared instance cannot serve a batch.
                        node, used = pulled_by[current]
                        a.report(node, "BFY014", f"'{used}' (line {a.positions[by_id[current]].start.line}) uses the "
                                 f"model class {name} at module level; the generated module copies only what the "
                                 f"model needs and defines no {name}: pass the model in as an argument instead "
                                 "of using a module-level instance")
                    continue
                if owner_id == current:
                    continue
                if not _copyable(owner):
                    node = next(n for n, nm, o in access_origin[current] if nm == name and o is owner)
                    kind = type(owner).__name__.lower()
                    keep = (" (a with block's setting goes with it: bm.set_mode(bm.training_mode) before it for "
                            "bm.training_environment(), and --mode training for verify)" if kind == "with" else "")
                    a.report(node, "BFY012", f"'{name}' is defined only inside a module-level {kind} block; "
                             f"define it at module level so the generated module can copy it{keep}")
                    continue
                needed.setdefault(owner_id, set()).add(name)
                if owner_id not in seen:
                    seen.add(owner_id)
                    todo.append(owner_id)
                    origin = pulled_by.get(current) or next(
                        ((n, nm) for n, nm, o in access_origin[current] if nm == name and o is owner), None)
                    if origin is not None:
                        pulled_by[owner_id] = origin
        # Statements completing a copied definition travel with it: `spike.defvjp(_fwd, _bwd)` after
        # `@jax.custom_vjp def spike`, `@spike.defjvp def _jvp`, `CONFIG["tau"] = 5.0` (and what they use).
        defined = {name for i, names_ in needed.items() if not is_import(by_id[i]) for name in names_} | {
            c.name.value for c in roots if type(c) in (cst.FunctionDef, cst.ClassDef) and c.name.value not in model_names}
        companions = [id(st) for st in a.module.body if id(st) not in seen and completes(st, defined, rebinders)]
        if not companions:
            break
        for i in companions:
            seen.add(i)
            todo.append(i)
            needed.setdefault(i, set())
    return needed


def is_import(stmt: cst.CSTNode) -> bool:
    return type(stmt) is cst.SimpleStatementLine and all(type(small) in (cst.Import, cst.ImportFrom)
                                                          for small in stmt.body)


def completes(stmt: cst.CSTNode, defined: set[str], rebinders: Mapping[str, set[str]] | None = None) -> bool:
    """Whether a module-level statement works on a name of ``defined`` (a function, class or value the
    generated module copies) rather than binding its own: a call of its method, an assignment into it,
    a function it decorates (``spike.defvjp(f, b)``, ``CONFIG["k"] = v``, ``@spike.defjvp``), or a call
    of a function of the file that rebinds it (``set_scale(4.0)``, which declares ``global SCALE``)."""
    rebinders = rebinders or {}
    def root(expr: cst.BaseExpression) -> str | None:
        while type(expr) in (cst.Attribute, cst.Subscript, cst.Call):
            expr = expr.func if type(expr) is cst.Call else expr.value
        return expr.value if type(expr) is cst.Name else None

    if type(stmt) is cst.FunctionDef:  # `@spike.defjvp`, `@spike.register(...)`
        decorators = [d.decorator.func if type(d.decorator) is cst.Call else d.decorator for d in stmt.decorators]
        return any(type(d) is cst.Attribute and root(d) in defined for d in decorators)
    if type(stmt) is not cst.SimpleStatementLine:
        return False
    for small in stmt.body:
        if type(small) is cst.Expr:
            call = small.value
            if type(call) is cst.Call and type(call.func) is cst.Name and rebinders.get(call.func.value, set()) & defined:
                continue
            if not (type(call) is cst.Call and type(call.func) is cst.Attribute and root(call.func) in defined):
                return False
        elif type(small) in (cst.Assign, cst.AugAssign):
            targets = [t.target for t in small.targets] if type(small) is cst.Assign else [small.target]
            if not all(type(t) in (cst.Attribute, cst.Subscript) and root(t) in defined for t in targets):
                return False
        else:
            return False
    return True


COPYABLE_SMALL = (cst.Import, cst.ImportFrom, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.TypeAlias, cst.Pass)


def _copyable(stmt: cst.CSTNode) -> bool:
    """A module-level statement the generated module may copy: a definition, imports and assignments,
    or an ``if``/``try``/``for`` made of those only (``try: import numba`` / ``except ImportError:
    numba = None``; ``for i in range(3): ACC += i``), never the ``if __name__ == "__main__":`` block."""
    kind = type(stmt)
    if kind in (cst.FunctionDef, cst.ClassDef):
        return True
    if kind is cst.SimpleStatementLine:
        return all(type(s) in COPYABLE_SMALL for s in stmt.body)
    if kind in (cst.IndentedBlock, cst.Else, cst.Finally, cst.ExceptHandler):
        block = stmt.body if kind is not cst.IndentedBlock else stmt
        return type(block) is cst.IndentedBlock and all(_copyable(s) for s in block.body)
    if kind is cst.If:
        if any(type(n) is cst.Name and n.value == "__name__" for n in walk(stmt.test)):
            return False
        return _copyable(stmt.body) and (stmt.orelse is None or _copyable(stmt.orelse))
    if kind is cst.Try:
        return all(_copyable(part) for part in (stmt.body, *stmt.handlers, stmt.orelse, stmt.finalbody)
                   if part is not None)
    if kind is cst.For and stmt.asynchronous is None:
        return _copyable(stmt.body) and (stmt.orelse is None or _copyable(stmt.orelse))
    return False


def _prune_imports(stmt: cst.CSTNode, used: set[str]) -> cst.CSTNode:
    """Keep only the imported names that are used: ``from x import a, b`` -> ``from x import a``."""
    if type(stmt) is not cst.SimpleStatementLine or len(stmt.body) != 1:
        return stmt
    small = stmt.body[0]
    if type(small) not in (cst.Import, cst.ImportFrom) or type(small.names) is cst.ImportStar:
        return stmt

    def bound(alias: cst.ImportAlias) -> str:
        if alias.asname is not None:
            return alias.asname.name.value
        return cst.Module([]).code_for_node(alias.name).split(".")[0]

    kept = [al for al in small.names if bound(al) in used]
    if not kept or len(kept) == len(small.names):
        return stmt
    kept = [al.with_changes(comma=cst.MaybeSentinel.DEFAULT) for al in kept]
    return stmt.with_changes(body=[small.with_changes(names=kept, lpar=None, rpar=None)
                                   if type(small) is cst.ImportFrom else small.with_changes(names=kept)])
