"""Stage 2, part of analysis: a Variable reached by another name.

The rewrite rules follow ``self.V`` syntactically. Real code also reaches a Variable through a
local alias (``V = self.V`` before a long expression), ``getattr(self, "V")``, ``setattr``, an
in-place method (``self.U.fill(0.5)``) or a helper that takes the Variable. Before a method is
analysed, each followable form is normalised here into the plain ``self.V`` form the rules know:

- a local bound once, at the top of the method, to a Variable (``v = self.V``, ``a, b = self.A,
  self.B``) is replaced by that Variable at every use, so reads see its current value and
  ``v += e`` / ``v.value = e`` write it, exactly as the original's Variable object does;
- ``getattr(self, "V")`` is ``self.V``; ``setattr(self, "V", e)`` is ``self.V = e``;
- ``self.U.fill(e)`` / ``fill_(e)`` / ``zero_()`` are writes of ``jnp.full_like`` / ``jnp.zeros_like``.

What cannot be followed is refused at its line (BFY213): an alias bound twice or inside a block that
is written through or outlives a write of its Variable, a Variable put in a container, ``getattr``
/ ``setattr`` with a computed name, a same-file helper that changes its Variable argument in
place, and an in-place method the rules do not know (BFY205).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst

from batchify import names
from batchify.cstwalk import Transformer, assigned, is_node, param_names, self_path, walk

# In-place methods of a BrainPy Array (its value is replaced): rewritten, or refused by name.
FILL_METHODS = {"fill": "full_like", "fill_": "full_like"}
ZERO_METHODS = {"zero_": "zeros_like"}
KNOWN_IN_PLACE = frozenset({"sort", "resize", "put", "itemset", "setflags"})


def in_place_method(attr_name: str) -> bool:
    """``sort``, ``resize``, or a torch-style ``tanh_`` / ``clamp_``: changes the Variable itself."""
    return attr_name in KNOWN_IN_PLACE or (attr_name.endswith("_") and not attr_name.endswith("__")
                                           and attr_name not in FILL_METHODS and attr_name not in ZERO_METHODS)


@dataclass(frozen=True)
class ArgumentUse:
    """What a model's method does with its parameters, for a parent handing it a Variable
    (``self.proj(x, self.I)``): the batched method is handed each example's value, an array."""

    name: str  # as messages show it: ``Proj.update()``
    method: cst.FunctionDef
    changed: frozenset[str]  # changed in place: ``out += e``, ``out.value = e``, ``out[i] = e``
    value_read: frozenset[str]  # read as ``out.value``
    object_asked: frozenset[str] = frozenset()  # what it is asked: ``isinstance(out, ...)``, ``type(out)``
    variable_asked: frozenset[str] = frozenset()  # asked as only a Variable is: ``isinstance(out, bm.Variable)``


@dataclass
class Known:
    """The Variables a method of one class can reach by a ``self`` path."""

    fields: set[str]
    children: dict[str, Known] = field(default_factory=dict)
    libraries: set[str] = field(default_factory=set)
    lists: set[str] = field(default_factory=set)  # fields holding a bm.VarList
    dicts: set[str] = field(default_factory=set)  # fields holding a bm.VarDict
    # ``self.pops = [self.E, self.I]``: attribute -> the models it lists (ModelClass.model_sequences);
    # one holding models batchify cannot follow -> why (ModelClass.gathered_models).
    sequences: dict[str, tuple[str, ...]] = field(default_factory=dict)
    gathered: dict[str, str] = field(default_factory=dict)
    # What each method hands out as the Variable object (``return self.h``), for a parent's calls.
    returns: dict[str, list[list[str]]] = field(default_factory=dict)
    # What each method does with its parameters, for a parent's calls (``self.proj(x, self.I)``).
    steps: dict[str, ArgumentUse] = field(default_factory=dict)

    def variable(self, path: list[str]) -> bool:
        if not path:
            return False
        if path[0] in self.children:
            return self.children[path[0]].variable(path[1:])
        return len(path) == 1 and path[0] in self.fields

    def container(self, path: list[str] | None) -> bool:
        """A field holding a ``bm.VarList`` or ``bm.VarDict`` (``self.xs``, ``self.child.xs``)."""
        if path and path[0] in self.children:
            return self.children[path[0]].container(path[1:])
        return bool(path) and len(path) == 1 and (path[0] in self.lists or path[0] in self.dicts)

    def library(self, path: list[str]) -> bool:
        """A path under a built-in (``self.N.V``): maybe a Variable, maybe a constant."""
        if path and path[0] in self.children:
            return self.children[path[0]].library(path[1:])
        return len(path) >= 2 and path[0] in self.libraries


def path_expr(me: str, path: list[str]) -> cst.BaseExpression:
    out: cst.BaseExpression = cst.Name(me)
    for part in path:
        out = cst.Attribute(out, cst.Name(part))
    return out


def constant_name(call: cst.Call, me: str, function: str, arity: tuple[int, ...]) -> str | None | bool:
    """For ``getattr(self, "V")`` / ``setattr(self, "V", e)``: ``"V"``; False when the name is computed;
    None when this is not such a call on ``self``."""
    if not (type(call.func) is cst.Name and call.func.value == function and len(call.args) in arity
            and type(call.args[0].value) is cst.Name and call.args[0].value.value == me
            and all(a.keyword is None and a.star == "" for a in call.args)):
        return None
    key = call.args[1].value
    if type(key) is cst.SimpleString and key.prefix.lower() in ("", "u"):
        text = key.evaluated_value
        return text if isinstance(text, str) and text.isidentifier() else False
    return False




def constant_index(node: cst.Subscript) -> int | None:
    """``x[2]`` / ``x[-1]``: the index, when it is one integer literal."""
    if len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
        return None
    value = node.slice[0].slice.value
    negative = type(value) is cst.UnaryOperation and type(value.operator) is cst.Minus
    if negative:
        value = value.expression
    if type(value) is not cst.Integer:
        return None
    return -int(value.value, 0) if negative else int(value.value, 0)


def comprehension_scopes(nodes: list[cst.CSTNode], name: str) -> tuple[int, set[int]]:
    """The comprehensions among ``nodes`` that bind ``name`` themselves: how many bindings they make,
    and the ids of their nodes, where ``name`` is theirs (all but the first iterable, read outside)."""
    bindings, scoped = 0, set()
    for comp in nodes:
        if type(comp) not in (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp):
            continue
        fors, current = [], comp.for_in
        while current is not None:
            fors.append(current)
            current = current.inner_for_in
        own = sum(1 for f in fors for n in walk(f.target) if type(n) is cst.Name and n.value == name)
        if own:
            bindings += own
            outside = {id(n) for n in walk(comp.for_in.iter)}
            scoped |= {id(n) for n in walk(comp) if id(n) not in outside}
    return bindings, scoped


def closes_over(node: cst.CSTNode, name: str) -> bool:
    """Whether a function defined in ``node`` reads ``name`` (its value when called, not when made)."""
    return any(type(f) in (cst.FunctionDef, cst.Lambda) and any(type(n) is cst.Name and n.value == name
                                                                 for n in walk(f)) for f in walk(node))


def written_paths(node: cst.CSTNode, me: str) -> set[tuple[str, ...]]:
    """The ``self`` paths an assignment writes: ``self.V = e``, ``self.V.value = e``, ``self.V[i] += e``."""
    out = set()
    for el in assigned(node):
        # `self.V[i]`, `self.V.value`, an item's `self.xs[i].value`: the Variable or container written
        while (type(el) is cst.Subscript or (type(el) is cst.Attribute and el.attr.value == "value")):
            el = el.value
        path = self_path(el, me)
        if path:
            out.add(tuple(path))
    return out


def bound_names(func: cst.FunctionDef, nodes: list[cst.CSTNode] | None = None) -> dict[str, int]:
    """How many times each local name is bound in ``func`` (parameters, assignments, loops, ...);
    ``nodes``: the nodes of its body, if already walked."""
    counts: dict[str, int] = {}

    def add(target: cst.CSTNode) -> None:
        if type(target) is cst.Name:
            counts[target.value] = counts.get(target.value, 0) + 1
        elif type(target) in (cst.Tuple, cst.List):
            for el in target.elements:
                add(el.value)
        elif type(target) is cst.StarredElement:
            add(target.value)

    for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params):
        add(p.name)
    for star in (func.params.star_arg, func.params.star_kwarg):
        if type(star) is cst.Param:
            add(star.name)
    for node in (walk(func.body) if nodes is None else nodes):
        if type(node) is cst.Assign:
            for t in node.targets:
                add(t.target)
        elif type(node) in (cst.AnnAssign, cst.For, cst.CompFor):
            add(node.target)
        elif type(node) is cst.AsName:
            add(node.name)
        elif type(node) is cst.NamedExpr:
            add(node.target)
        elif type(node) in (cst.FunctionDef, cst.ClassDef):
            add(node.name)
        elif type(node) in (cst.Global, cst.Nonlocal):
            for item in node.names:
                add(item.name)
                add(item.name)  # never an alias
        elif type(node) is cst.Del:
            add(node.target)
    return counts


# Functions, lambdas and comprehensions defined in a method: each has a scope of its own.
INNER_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


def scope_region(scope: cst.CSTNode) -> list[cst.CSTNode]:
    """The nodes a function, lambda or comprehension evaluates in its own scope: its parameters'
    names and body (not defaults or decorators), a comprehension all but its first iterable."""
    if type(scope) in (cst.FunctionDef, cst.Lambda):
        params = scope.params
        names = [q.name for q in (*params.posonly_params, *params.params, *params.kwonly_params,
                                  params.star_arg, params.star_kwarg) if type(q) is cst.Param]
        return names + walk(scope.body)
    outside = {id(n) for n in walk(scope.for_in.iter)}
    return [n for n in walk(scope) if id(n) not in outside and n is not scope]


def own_locals(scope: cst.CSTNode, region: list[cst.CSTNode]) -> set[str]:
    """The names ``scope`` binds for itself: parameters, comprehension targets, what its body binds
    outside the scopes defined in it, less what it declares ``nonlocal`` (``global`` names are the
    module's: not the method's either)."""
    if type(scope) not in (cst.FunctionDef, cst.Lambda):
        fors, current = [], scope.for_in
        while current is not None:
            fors.append(current)
            current = current.inner_for_in
        return {n.value for f in fors for n in walk(f.target) if type(n) is cst.Name}
    deeper = {id(n) for d in region if type(d) in INNER_SCOPES for n in scope_region(d)}
    nodes = [n for n in region if id(n) not in deeper]
    own = set(bound_names(scope, nodes))
    own |= {n.target.value for n in nodes if type(n) is cst.AugAssign and type(n.target) is cst.Name}
    return own - {item.name.value for n in nodes if type(n) is cst.Nonlocal for item in n.names}


def inner_locals(func: cst.FunctionDef) -> dict[int, cst.CSTNode]:
    """The Name nodes in ``func`` that name a local of a function, lambda or comprehension defined
    in it, not the method's name of that spelling: ``id(Name) -> that scope`` (the innermost)."""
    found: dict[int, cst.CSTNode] = {}
    for scope in walk(func.body):  # parents first: an inner scope overrides an outer one
        if type(scope) in INNER_SCOPES:
            region = scope_region(scope)
            own = own_locals(scope, region)
            found.update((id(n), scope) for n in region if type(n) is cst.Name and n.value in own)
    return found


@dataclass
class Normaliser:
    """Rewrites one method's aliases; ``report(node, code, message)`` and ``inherit(new, old)`` come
    from the analysis (diagnostics at source lines; positions carried over to the new nodes)."""

    me: str
    known: Known
    helpers: dict[str, cst.FunctionDef]  # module-level functions and methods of the class, by call name
    report: Callable[[cst.CSTNode, str, str], None]
    inherit: Callable[[cst.CSTNode, cst.CSTNode], None]
    # The method being normalised, its nodes (one walk; every check reads this list) and, per
    # function read, the names written through.
    current: cst.FunctionDef | None = None
    nodes: list[cst.CSTNode] = field(default_factory=list)
    written_cache: dict[int, set[str]] = field(default_factory=dict)
    items_loops: set[str] = field(default_factory=set)

    def normalise(self, func: cst.FunctionDef) -> cst.FunctionDef:
        unrolled = self.model_loops(func)
        if unrolled:
            new = func.visit(_Unroll(self, unrolled))
            if type(new) is cst.FunctionDef:
                self.inherit(new, func)
                func = new
        if self.known.sequences or self.known.gathered:
            self.check_listed_models(func)
        # A name a nested function, lambda or comprehension binds for itself is not the method's name
        # of that spelling: while the method is normalised it is spelled apart (every check below
        # compares names), and given back its own spelling after.
        inner = inner_locals(func)
        if not inner:
            return self.normalise_method(func)
        func, spelled, written_as = self.spell_apart(func, inner)
        report = self.report
        self.report = lambda node, code, message: report(node, code, written_as(message))
        try:
            normalised = self.normalise_method(func)
        finally:
            self.report = report
        new = normalised.visit(_Rename(self, by_name=spelled))
        return new if type(new) is cst.FunctionDef else normalised

    def spell_apart(self, func: cst.FunctionDef, inner: dict[int, cst.CSTNode]):
        """``func`` with each inner scope's locals renamed ``<prefix><k>_<name>``, one ``k`` per scope;
        the map back; and what gives a message the names as written."""
        taken = {n.value for n in walk(func) if type(n) is cst.Name}
        prefix = "_bfy_inner"
        while any(name.startswith(prefix) for name in taken):
            prefix += "_"
        scopes = {id(s): k for k, s in enumerate(dict.fromkeys(inner.values()))}
        names = {id(n): n.value for n in walk(func.body) if type(n) is cst.Name and id(n) in inner}
        by_id = {i: f"{prefix}{scopes[id(inner[i])]}_{name}" for i, name in names.items()}
        new = func.visit(_Rename(self, by_id=by_id))
        pattern = re.compile(rf"\b{prefix}\d+_")
        return (new if type(new) is cst.FunctionDef else func), {v: names[i] for i, v in by_id.items()}, (
            lambda message: pattern.sub("", message))

    def normalise_method(self, func: cst.FunctionDef) -> cst.FunctionDef:
        self.current = func
        self.nodes = list(walk(func.body))
        counts = bound_names(func, self.nodes)
        aliases, removed = self.find_aliases(func, counts)
        self.check_loose_aliases(func, counts, aliases)
        self.check_containers(func, aliases)
        loops = self.list_loops(func, counts)
        self.items_loops = {n.target.value for n in self.nodes if type(n) is cst.For and id(n) in loops}
        self.check_unknown_variables(func, aliases)
        self.check_other_bindings(func, aliases)
        if not (aliases or loops or any(self.needs_inline(n) for n in self.nodes if type(n) is cst.Call)
                or any(self.piped_module(n) for n in self.nodes if type(n) is cst.BinaryOperation)):
            return func  # nothing reached by another name: the method as it is
        new = func.visit(_Inline(self, aliases, removed, loops))
        return new if type(new) is cst.FunctionDef else func

    def model_loops(self, func: cst.FunctionDef) -> dict[int, list[cst.BaseExpression]]:
        """``for proj in (self.E2E, self.E2I): proj()``: a loop over a literal tuple (or list) of the
        class's models, or over an attribute listing them (``self.pops``, Known.sequences), its name
        bound by the loop alone and read only in its body, which has no ``break``, ``continue``,
        ``else`` or function reading the name: unrolled, one copy of the body per model with the name
        replaced by it (``self.E2E()``, the form the rules know). So is a comprehension over them with
        one ``for`` and no ``if`` (``sum(p(x) for p in self.pops)``: a tuple, one item per model), and
        a constant index (``self.pops[-1]``: that model). ``id(node) -> the models``."""
        nodes = list(walk(func.body))
        counts = bound_names(func, nodes)
        found: dict[int, list[cst.BaseExpression]] = {}
        for node in nodes:
            if type(node) is cst.Subscript:
                models = self.listed_models(node.value, literal=False)
                index = constant_index(node)
                if models is not None and index is not None and -len(models) <= index < len(models):
                    found[id(node)] = [models[index]]
                continue
            if type(node) in (cst.ListComp, cst.GeneratorExp):
                comp = node.for_in
                models = self.listed_models(comp.iter)
                if (models is not None and type(comp.target) is cst.Name and not comp.ifs
                        and comp.inner_for_in is None and comp.asynchronous is None
                        and not closes_over(node.elt, comp.target.value)):
                    found[id(node)] = models
                continue
            if not (type(node) is cst.For and type(node.target) is cst.Name and node.orelse is None
                    and node.asynchronous is None):
                continue
            name = node.target.value
            # (a comprehension binding the same name has its own: `sum(p(x) for p in ...)` beside the loop)
            bindings, own_scope = comprehension_scopes(nodes, name)
            models = self.listed_models(node.iter) if counts.get(name, 0) - bindings == 1 else None
            if models is None:
                continue
            inside = {id(n) for n in walk(node.body)} | own_scope
            nested = {id(n) for f in walk(node.body) if type(f) in (cst.For, cst.While, cst.FunctionDef, cst.Lambda,
                                                                    cst.ClassDef) for n in walk(f)}
            if any(type(n) in (cst.Break, cst.Continue) and id(n) not in nested for n in walk(node.body)):
                continue
            if any(type(n) is cst.Name and n.value == name and id(n) not in inside and n is not node.target
                   for n in nodes):
                continue  # read after the loop: the last model, which the unrolled code no longer binds
            if closes_over(node.body, name):
                continue  # a closure over the loop name sees its last value when called later
            found[id(node)] = models
        return found

    def listed_models(self, iterated: cst.BaseExpression, literal: bool = True) -> list[cst.BaseExpression] | None:
        """The models ``iterated`` lists, in order: a literal tuple or list of the class's models
        (``literal``), or an attribute listing them (``self.pops``), each as ``self.E`` standing where
        ``self.pops`` does. None for anything else."""
        if literal and type(iterated) in (cst.Tuple, cst.List) and iterated.elements:
            if not all(type(e) is cst.Element for e in iterated.elements):
                return None
            models = [e.value for e in iterated.elements]
            paths = [self_path(m, self.me) for m in models]
            if all(p is not None and len(p) == 1 and (p[0] in self.known.children or p[0] in self.known.libraries)
                   for p in paths):
                return models
            return None
        path = self_path(iterated, self.me) if type(iterated) is cst.Attribute else None
        if not (path and len(path) == 1 and path[0] in self.known.sequences):
            return None
        models = []
        for name in self.known.sequences[path[0]]:
            model = path_expr(self.me, [name])
            for new, old in zip(walk(model), walk(iterated)):  # (both `self.<name>`)
                self.inherit(new, old)
            models.append(model)
        return models

    def check_listed_models(self, func: cst.FunctionDef) -> None:
        """What is left of ``self.pops`` once its loops are unrolled (an ``enumerate`` or ``zip`` over it,
        a computed index, the list handed on) would reach the batched models by another name, inside
        one example's step (BFY213); ``len(self.pops)`` is a constant."""
        counted = {id(n.args[0].value) for n in walk(func.body) if type(n) is cst.Call and type(n.func) is cst.Name
                   and n.func.value == "len" and len(n.args) == 1}
        for node in walk(func.body):
            path = self_path(node, self.me) if type(node) is cst.Attribute else None
            if not (path and len(path) == 1):
                continue
            name = path[0]
            if name in self.known.sequences and id(node) not in counted:
                listed = ", ".join(f"self.{m}" for m in self.known.sequences[name])
                self.report(node, "BFY213", f"self.{name} lists the models {listed}, and is used here other than "
                            f"by a loop batchify unrolls (for p in self.{name}: ..., with no break or else), a "
                            f"comprehension over it, or a constant index (self.{name}[0]): it would hand over the "
                            f"batched models inside one example's step; call each model by its own attribute here")
                return
            if name in self.known.gathered:
                self.report(node, "BFY213", f"{self.known.gathered[name]}: batchify cannot follow those models "
                            "through it, and a step would run them as they are, for the whole batch; call each "
                            "by its own attribute (or list them once in __init__, models only, and never change "
                            "the list)")
                return

    def piped_module(self, node: cst.BinaryOperation) -> bool:
        """``x >> self.neu1``: BrainPy's pipe, which calls the model (``DynamicalSystem.__rrshift__``)."""
        if type(node.operator) is not cst.RightShift:
            return False
        path = self_path(node.right, self.me)
        return bool(path) and len(path) == 1 and (path[0] in self.known.children or path[0] in self.known.libraries)

    def needs_inline(self, call: cst.Call) -> bool:
        """A call the inlining pass rewrites or checks: getattr/setattr, an in-place method, a helper,
        the model calling itself (``self(x)``)."""
        func = call.func
        if self.self_as_body(call) or self.is_self_call(func):
            return True
        if type(func) is cst.Name:
            return func.value in ("getattr", "setattr", self.me) or func.value in self.helpers
        if type(func) is cst.Attribute:
            name = func.attr.value
            return (name in FILL_METHODS or name in ZERO_METHODS or in_place_method(name) or name == "fill_diagonal"
                    or f"self.{name}" in self.helpers or self.hands_child_a_variable(call))
        return False

    def hands_child_a_variable(self, call: cst.Call) -> bool:
        return self.child_step(call) is not None and any(
            self.handed_variable(self_path(arg.value, self.me)) for arg in call.args)

    def handed_variable(self, path: list[str] | None) -> bool:
        """A Variable of the model's, or a path under a built-in (``self.E.input``), handed as an argument."""
        return path is not None and (self.known.variable(path) or self.known.library(path))

    def self_as_body(self, call: cst.Call) -> bool:
        """``bm.for_loop(self, xs)``: the model itself as the loop's body, called every step."""
        name = call.func.attr.value if type(call.func) is cst.Attribute else getattr(call.func, "value", None)
        return name == "for_loop" and bool(call.args) and call.args[0].keyword is None and self.is_self_call(
            call.args[0].value)

    def is_self_call(self, node: cst.BaseExpression) -> bool:
        """``self``, or ``self.__call__`` where the class of the file defines none (BrainPy's)."""
        return (type(node) is cst.Name and node.value == self.me) or (
            type(node) is cst.Attribute and node.attr.value == "__call__" and type(node.value) is cst.Name
            and node.value.value == self.me and "self.__call__" not in self.helpers)

    def self_method(self) -> str:
        """What ``self(x)`` runs: the class's own __call__ if the file defines one, else BrainPy's,
        which steps update."""
        return "__call__" if "self.__call__" in self.helpers else "update"

    def list_loops(self, func: cst.FunctionDef, counts: dict[str, int]) -> dict[int, str]:
        """``for tr in self.traces: tr.value = ...`` over a bm.VarList, written through ``tr``: each item
        by its index (``self.traces[i].value = ...``), the form the rules know. ``id(For) -> index name``."""
        written = self.names_written_through(func)
        out: dict[int, str] = {}
        for node in self.nodes:
            if not (type(node) is cst.For and type(node.target) is cst.Name):
                continue
            path = self_path(node.iter, self.me)
            if path is None or len(path) != 1 or path[0] not in self.known.lists:
                continue
            loop_name = node.target.value
            if loop_name not in written:
                continue  # reads only: each item's value, as today
            if counts.get(loop_name, 0) != 1:
                self.report(node.target, "BFY213", f"'{loop_name}' walks self.{path[0]} and is written through, "
                            "but it is bound elsewhere too; give the loop a name of its own")
                continue
            index = f"{loop_name}_index"
            while index in counts:
                index += "_"
            out[id(node)] = index
        return out

    # -- which names are aliases --------------------------------------------------------------
    def variable_path(self, value: cst.BaseExpression) -> list[str] | None:
        if type(value) is cst.Call:
            name = constant_name(value, self.me, "getattr", (2,))
            return [name] if isinstance(name, str) and self.known.variable([name]) else None
        path = self_path(value, self.me)
        return path if path is not None and (self.known.variable(path) or self.known.library(path)) else None

    def candidates(self, value: cst.BaseExpression, aliases: dict | None = None,
                   seen: frozenset[str] = frozenset()) -> list[list[str]]:
        """The Variables an expression may be, as the object: ``self.V``, either branch of a conditional
        expression (``self.V if c else self.U``) or side of ``and``/``or``, an alias, or what a method of
        the class returns (``self._pick()``; ``seen``: the methods already being followed)."""
        if type(value) is cst.IfExp:
            return self.candidates(value.body, aliases, seen) + self.candidates(value.orelse, aliases, seen)
        if type(value) is cst.BooleanOperation:
            return self.candidates(value.left, aliases, seen) + self.candidates(value.right, aliases, seen)
        if type(value) is cst.Name and aliases and value.value in aliases:
            return [aliases[value.value][0]]
        if type(value) is cst.Call:
            local = self.local_function(value.func)
            if local is not None:  # `get = lambda: self.V; v = get()`
                return [p for r in local for p in self.candidates(r, aliases, seen)]
            path = self_path(value.func, self.me)
            helper = self.helper_of(value)
            # What a helper hands back of its arguments (`maybe_rectify(self.r, flag)` returning `v`)
            passed = ([p for param, arg in self.arguments(value, helper) if param in returned_params(helper)
                       for p in self.candidates(arg, aliases, seen)] if helper is not None else [])
            if path and len(path) == 1 and f"self.{path[0]}" in self.helpers:
                return self.returned_variables(self.helpers[f"self.{path[0]}"], seen) + passed
            if passed:
                return passed
            if path and path[0] in self.known.children and len(path) <= 2:  # `self.cell(x)`, `self.cell.step(x)`
                child = self.known.children[path[0]]
                return [[path[0], *p] for p in child.returns.get(path[1] if len(path) == 2 else "update", [])]
            return []
        path = self.variable_path(value)
        return [path] if path is not None and self.known.variable(path) else []

    def find_aliases(self, func: cst.FunctionDef, counts: dict[str, int]):
        """Locals bound once, at the top level of the body, to a Variable: ``name -> (path, binding)``."""
        aliases: dict[str, tuple[list[str], cst.CSTNode]] = {}
        removed: dict[int, list[int]] = {}  # id(Assign) -> the element positions that were aliases
        written = self.names_written_through(func)
        for stmt in func.body.body:
            if not (type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1
                    and type(stmt.body[0]) is cst.Assign and len(stmt.body[0].targets) == 1):
                continue
            small = stmt.body[0]
            target, value = small.targets[0].target, small.value
            pairs = [(target, value)]
            if type(target) in (cst.Tuple, cst.List) and type(value) in (cst.Tuple, cst.List) and len(
                    target.elements) == len(value.elements) and not any(
                    type(e) is cst.StarredElement for e in (*target.elements, *value.elements)):
                pairs = [(t.value, v.value) for t, v in zip(target.elements, value.elements)]
            for i, (t, v) in enumerate(pairs):
                if type(t) is not cst.Name or counts.get(t.value, 0) != 1:
                    continue
                # `w = v` where `v` is an alias already: the same Variable object.
                path = aliases[v.value][0] if type(v) is cst.Name and v.value in aliases else self.variable_path(v)
                if path is None or (not self.known.variable(path) and t.value not in written):
                    continue  # a built-in's attribute is inlined only when it is written through
                aliases[t.value] = (path, v)
                removed.setdefault(id(small), []).append(i)
        return aliases, removed

    def rebound_before_a_write(self, func: cst.FunctionDef, binding: cst.Assign, name: str, path: list[str]) -> bool:
        """``v = self.V`` at the top level of the body, then ``v = ...`` again at the top level before
        anything writes self.V (itself, or a method or child it calls): every read of this binding
        sees the value it had when bound, as the rewrite reads it (``v = self.V; v = v * 0.9 + x;
        self.V.value = v``)."""
        body = list(func.body.body)
        at = next((i for i, stmt in enumerate(body) if type(stmt) is cst.SimpleStatementLine
                   and any(small is binding for small in stmt.body)), None)
        if at is None:
            return False  # bound inside a block
        for stmt in body[at + 1:]:
            if any(self.writes_any(n, {tuple(path)}) for n in walk(stmt)):
                return False
            if type(stmt) is cst.SimpleStatementLine and any(
                    type(small) is cst.Assign and any(type(t.target) is cst.Name and t.target.value == name
                                                      for t in small.targets) for small in stmt.body):
                return True
        return False

    def names_written_through(self, func: cst.FunctionDef) -> set[str]:
        """Local names used as a write target of a Variable: ``v += e``, ``v.value = e``, ``v[i] = e``,
        ``v.update(e)``, an in-place method."""
        if id(func) in self.written_cache:
            return self.written_cache[id(func)]
        out: set[str] = set()
        nodes = self.nodes if func is self.current else walk(func.body)
        for node in nodes:
            for el in assigned(node):
                if type(node) is cst.AugAssign and type(el) is cst.Name:
                    out.add(el.value)
                elif type(el) is cst.Attribute and el.attr.value == "value" and type(el.value) is cst.Name:
                    out.add(el.value.value)
                elif type(el) is cst.Subscript and type(el.value) is cst.Name:
                    out.add(el.value.value)
            if (type(node) is cst.Call and type(node.func) is cst.Attribute
                    and type(node.func.value) is cst.Name
                    and (node.func.attr.value in ("update", *FILL_METHODS, *ZERO_METHODS)
                         or in_place_method(node.func.attr.value))):
                out.add(node.func.value.value)
        self.written_cache[id(func)] = out
        return out

    def check_loose_aliases(self, func: cst.FunctionDef, counts: dict[str, int], aliases: dict) -> None:
        """An alias bound twice or inside a block cannot be replaced by its Variable: refused when it
        is written through, or when its Variable is written in the method, itself or by a method it
        calls, and the alias may be read after that (it would see the new value)."""
        written_names = self.names_written_through(func)
        for node in self.nodes:
            if type(node) is not cst.Assign:
                continue
            for t in node.targets:
                target = t.target
                if type(target) is not cst.Name or target.value in aliases:
                    continue
                path = self.variable_path(node.value)
                container = (self_path(node.value.value, self.me) if type(node.value) is cst.Subscript else None)
                if path is None and container and len(container) == 1 and (
                        container[0] in self.known.lists or container[0] in self.known.dicts):
                    # `fast = self.traces[0]`: an item of a bm.VarList / VarDict, the Variable object
                    self.check_maybe_variable(node, target.value, [container], f"an item of self.{container[0]}",
                                              written_names)
                    continue
                if path is None:
                    if type(node.value) in (cst.IfExp, cst.BooleanOperation):
                        self.check_maybe_variable(node, target.value, self.candidates(node.value, aliases),
                                                  "chosen by a conditional expression", written_names)
                    continue
                dotted = ".".join(path)
                if target.value in written_names:
                    self.report(node, "BFY213", f"'{target.value}' is self.{dotted} under another name and is "
                                "written through, but it is bound more than once or inside a block; bind it once "
                                "at the top of the method, or write self." + dotted + " itself")
                elif (self.known.variable(path) and any(self.writes_any(n, {tuple(path)}) for n in self.nodes)
                      and not self.rebound_before_a_write(func, node, target.value, path)):
                    self.report(node, "BFY213", f"'{target.value}' is self.{dotted} under another name, bound "
                                f"more than once or inside a block, and self.{dotted} is written in this method: "
                                "the original's alias would see the new value; bind it once at the top of the "
                                "method, or read self." + dotted + ".value where you mean the value then")

    def check_unknown_variables(self, func: cst.FunctionDef, aliases: dict) -> None:
        """A local written as only a Variable can be (``v.value = e``, ``v.update(e)``, ``v.fill(e)``), or one bound to what a method returns when that is a Variable (``return self.V``)
        and then changed in place: batchify cannot tell which Variable it is."""
        params = {p.name.value for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)}
        strong: dict[str, cst.CSTNode] = {}
        for node in self.nodes:
            if type(node) is cst.Assign:
                for t in node.targets:
                    target = t.target
                    # (`v[i] = e` is left out: a NumPy buffer in a step is written so too.)
                    if (type(target) is cst.Attribute and target.attr.value == "value"
                          and type(target.value) is cst.Name):
                        strong.setdefault(target.value.value, node)
            elif (type(node) is cst.Call and type(node.func) is cst.Attribute
                  and type(node.func.value) is cst.Name
                  and node.func.attr.value in ("update", *FILL_METHODS, *ZERO_METHODS)):
                strong.setdefault(node.func.value.value, node)
        written = self.names_written_through(func)
        for node in self.nodes:
            if not (type(node) is cst.Assign and len(node.targets) == 1
                    and type(node.targets[0].target) is cst.Name and type(node.value) is cst.Call):
                continue
            name = node.targets[0].target.value
            path = self_path(node.value.func, self.me)
            if not (path or self.helper_of(node.value) is not None
                    or self.local_function(node.value.func) is not None) or name in aliases:
                continue
            returned = self.candidates(node.value, aliases)
            callee = f"self.{'.'.join(path)}()" if path else f"{cst.Module([]).code_for_node(node.value.func)}()"
            if returned and name in written:
                self.report(node, "BFY213", f"'{name}' is the Variable {callee} returns, changed in place "
                            "here; batchify cannot follow it: write that Variable itself (self.NAME.value = ...)")
            elif returned:
                helper = self.helper_of(node.value)
                passed = helper is not None and any(
                    param in returned_params(helper) and self.candidates(arg, aliases)
                    for param, arg in self.arguments(node.value, helper))
                how = f"handed back by {callee}, which returns its argument" if passed else f"returned by {callee}"
                self.check_maybe_variable(node, name, returned, how, written)
        local = set(bound_names(func, self.nodes))  # a module-level name is not an alias (BFY214 covers it)
        # (`for node in self.nodes().values(): node.update(x)`: BFY213 at self.nodes() says it)
        collected = {n.target.value for n in self.nodes if type(n) is cst.For and type(n.target) is cst.Name
                     and any(type(c) is cst.Call and (p := self_path(c.func, self.me)) and p[-1] in ("nodes", "vars")
                             for c in walk(n.iter))}
        for name, node in strong.items():
            if (name in aliases or name in params or name == self.me or name in self.items_loops
                    or name not in local or name in collected):
                continue
            self.report(node, "BFY213", f"'{name}' is written as a Variable ({name}.value or an in-place "
                        "method), but batchify cannot tell which Variable it is; bind it once at the top "
                        "of the method (name = self.V) or write self.V itself")

    def local_function(self, func: cst.BaseExpression) -> list[cst.BaseExpression] | None:
        """What a function defined in the method returns (``def get(): return self.V``, ``get = lambda:
        self.V``), called by its name: the returned expressions; None for any other callee."""
        if type(func) is not cst.Name:
            return None
        found = None
        for node in self.nodes:
            if type(node) is cst.FunctionDef and node.name.value == func.value:
                found = [n.value for n in walk(node.body) if type(n) is cst.Return and n.value is not None]
            elif (type(node) is cst.Assign and type(node.value) is cst.Lambda
                  and any(type(t.target) is cst.Name and t.target.value == func.value for t in node.targets)):
                found = [node.value.body]
        return found

    def collection_candidates(self, value: cst.BaseExpression, aliases: dict) -> list[list[str]]:
        """The Variables an expression may hold as objects, looking into tuple, list and set literals
        (``self.V, *rest``) as well as what ``candidates`` follows."""
        if type(value) in (cst.Tuple, cst.List, cst.Set):
            return [p for el in value.elements for p in self.collection_candidates(el.value, aliases)]
        return self.candidates(value, aliases)

    def unpacked(self, target: cst.BaseExpression, value: cst.BaseExpression | None,
                 aliases: dict, held: list[list[str]] | None = None) -> list[tuple[cst.Name, list[list[str]]]]:
        """``(name, Variables it may be)`` for each name ``target`` binds from ``value``: element by
        element where the shapes match (``(v, u), k = (self.V, self.U), 1``), else every name may be
        any Variable the value holds (``v, *rest = self.V, self.U``)."""
        if type(target) is cst.StarredElement:
            target = target.value
        if type(target) is cst.Name:
            paths = held if held is not None else self.collection_candidates(value, aliases)
            return [(target, paths)] if paths else []
        if type(target) not in (cst.Tuple, cst.List):
            return []
        elements = [e.value for e in target.elements]
        if (held is None and type(value) in (cst.Tuple, cst.List) and len(value.elements) == len(elements)
                and not any(type(e) is cst.StarredElement for e in (*target.elements, *value.elements))):
            return [pair for t, v in zip(elements, value.elements) for pair in self.unpacked(t, v.value, aliases)]
        held = held if held is not None else self.collection_candidates(value, aliases)
        return [pair for t in elements for pair in self.unpacked(t, None, aliases, held)]

    def check_other_bindings(self, func: cst.FunctionDef, aliases: dict) -> None:
        """A local bound to a Variable object other than by ``name = ...`` (which the checks above
        follow): unpacked (``v, *rest = self.V, self.U``, nested, or in a block), ``:=``, ``with ...
        as v``, an annotated assignment, a loop over a literal of Variables. Each is held to the rule
        of a name that may be a Variable: refused when written through, or read where it may run after
        a write of that Variable (the original's name sees the new value, the batched code the old)."""
        written = self.names_written_through(func)
        for node in self.nodes:
            found: list[tuple[cst.CSTNode, cst.Name, list[list[str]], str]] = []
            if type(node) is cst.Assign:
                for t in node.targets:
                    if type(t.target) in (cst.Tuple, cst.List):
                        found += [(node, n, p, "unpacked from a collection of Variables")
                                  for n, p in self.unpacked(t.target, node.value, aliases)]
            elif type(node) is cst.AnnAssign and node.value is not None and type(node.target) is cst.Name:
                found += [(node, n, p, "bound in an annotated assignment")
                          for n, p in self.unpacked(node.target, node.value, aliases)]
            elif type(node) is cst.NamedExpr:
                found += [(node, n, p, "bound by :=") for n, p in self.unpacked(node.target, node.value, aliases)]
            elif type(node) is cst.WithItem and node.asname is not None:
                item = node.item
                held = self.collection_candidates(item, aliases) + (
                    [p for a in item.args for p in self.collection_candidates(a.value, aliases)]
                    if type(item) is cst.Call else [])
                if held:
                    found += [(node.asname.name, n, p, "bound by with ... as")
                              for n, p in self.unpacked(node.asname.name, None, aliases, held)]
            elif type(node) is cst.For and type(node.iter) in (cst.Tuple, cst.List, cst.Set):
                held = self.collection_candidates(node.iter, aliases)
                if held:  # (written through: check_containers refuses it already)
                    found += [(node.target, n, p, "a loop name over Variables")
                              for n, p in self.unpacked(node.target, None, aliases, held) if n.value not in written]
            for binding, name, paths, how in found:
                if name.value in aliases:
                    continue
                # the loop's literal is built once, before the loop: no pass binds the name afresh
                self.check_maybe_variable(binding, name.value, paths, how, written, fresh=type(node) is not cst.For)

    def returned_variables(self, method: cst.FunctionDef, seen: frozenset[str] = frozenset()) -> list[list[str]]:
        """The Variables a method may hand out as the object (``return self.V``, ``return self.V if c
        else self.U``, ``return self._pick()``): looked at only when needed."""
        if method.name.value in seen:  # a method returning what it returns itself (recursion)
            return []
        seen = seen | {method.name.value}
        return [p for n in walk(method.body) if type(n) is cst.Return and n.value is not None
                for p in self.candidates(n.value, seen=seen)]

    def check_maybe_variable(self, binding: cst.CSTNode, name: str, paths: list[list[str]], how: str,
                             written: set[str], fresh: bool = True) -> None:
        """``name`` is bound by ``binding`` to what may be one of the Variables ``paths`` (the object,
        not its value). Written through, batchify cannot tell which Variable it writes; read after a
        later write of one of them, the original's name sees the new value, the batched code the old."""
        if not paths:
            return
        which = " or ".join(dict.fromkeys(f"self.{'.'.join(p)}" for p in paths))
        if name in written:
            if " or " in which:
                self.report(binding, "BFY213", f"'{name}' is {which}, {how}, and is written through: batchify "
                            "cannot tell which Variable it writes; write each Variable itself (if ...: "
                            "self.V.value = ... else: self.U.value = ...)")
            else:
                self.report(binding, "BFY213", f"'{name}' is {which}, {how}, and is written through: batchify "
                            f"follows such a name only when bound once at the top of the method ({name} = "
                            f"{which}); write {which} itself")
            return
        position = {id(n): i for i, n in enumerate(self.nodes)}
        inside = {id(n) for n in walk(binding)}
        start = position.get(id(binding), -1)
        targets = {tuple(p) for p in paths}
        first_write = next((i for i, n in enumerate(self.nodes) if i > start and id(n) not in inside
                            and self.writes_any(n, targets)), None)
        if first_write is None:
            return
        rebound = {id(t) for n in self.nodes for t in assigned(n)}
        reads = [n for n in self.nodes if type(n) is cst.Name and n.value == name and id(n) not in rebound
                 and position[id(n)] > start]
        if any(self.may_run_after(read, position, start, first_write, inside, targets, fresh) for read in reads):
            if how.startswith("an item of"):  # `t = self.xs[0]`
                item = cst.Module([]).code_for_node(binding.value) if type(binding) is cst.Assign else f"{which}[...]"
                self.report(binding, "BFY213", f"'{name}' is {how}, the Variable object, and is read after {which} "
                            f"is written again in {self.current.name.value}(): the original's '{name}' would see "
                            f"the new value; if you mean the value then, bind {item}.value; if you mean the current "
                            f"value, read {item} itself there")
                return
            then = ("return its .value from that method" if how.startswith("returned")
                    else "give that function its .value" if how.startswith("handed back")
                    else "bind its .value (self.V.value if ... else self.U.value)" if " or " in which
                    else f"bind {which}.value")
            self.report(binding, "BFY213", f"'{name}' is {which} ({how}), the Variable object, and is read after "
                        f"that Variable is written again in {self.current.name.value}(): the original's '{name}' "
                        f"would see the new value; if you mean the value then, {then}; if you mean the current "
                        "value, read the Variable itself there")

    def may_run_after(self, read: cst.Name, position: dict[int, int], start: int, first_write: int,
                      binding: set[int], targets: set[tuple[str, ...]], fresh: bool = True) -> bool:
        """Whether ``read`` (after the binding at ``start`` in the text) may run after a write of
        ``targets``: it comes after the first one in the text (what the writing statement itself
        reads is read before its write); or it is in a lambda, a nested function or a generator, which
        may run at any later time; or it is in a loop that writes them, whose next pass reads it after
        this pass's write (unless the loop binds the name afresh before the read in each pass)."""
        at = position[id(read)]
        if at > first_write and id(read) not in {id(n) for n in walk(self.nodes[first_write])}:
            return True
        for node in self.nodes:
            if type(node) not in (cst.For, cst.While, cst.Lambda, cst.FunctionDef, cst.GeneratorExp):
                continue
            below = walk(node)
            if not any(n is read for n in below):
                continue
            if type(node) in (cst.Lambda, cst.FunctionDef, cst.GeneratorExp):
                return True
            bound_inside = any(id(n) in binding for n in below)
            if (any(id(n) not in binding and self.writes_any(n, targets) for n in below)
                    and not (fresh and bound_inside and start < at)):
                return True
        return False

    def writes_any(self, node: cst.CSTNode, targets: set[tuple[str, ...]]) -> bool:
        """Whether ``node`` writes one of the Variables ``targets``: an assignment to it, or a call of a
        method of the class that writes it."""
        if written_paths(node, self.me) & targets:
            return True
        if type(node) is cst.Call:
            path = self_path(node.func, self.me)
            if path and path[0] in self.known.children and len(path) <= 2:  # a child's step may write any of its own
                return any(t[0] == path[0] for t in targets)
            helper = self.helpers.get(f"self.{path[0]}") if path and len(path) == 1 else None
            return helper is not None and bool(self.method_writes(helper) & targets)
        return False

    def method_writes(self, method: cst.FunctionDef, seen: frozenset[str] = frozenset()) -> set[tuple[str, ...]]:
        """The Variables a method of the class writes, itself or through the methods it calls."""
        if method.name.value in seen:
            return set()
        seen = seen | {method.name.value}
        out: set[tuple[str, ...]] = set()
        for n in walk(method.body):
            out |= written_paths(n, self.me)
            if type(n) is cst.Call:
                path = self_path(n.func, self.me)
                helper = self.helpers.get(f"self.{path[0]}") if path and len(path) == 1 else None
                if helper is not None:
                    out |= self.method_writes(helper, seen)
        return out

    def check_containers(self, func: cst.FunctionDef, aliases: dict) -> None:
        """``items = [self.V, ...]``: the container holds the Variable object, whose later writes the
        original sees through it; batchify cannot follow it there."""
        written = self.names_written_through(func)
        for node in self.nodes:
            if type(node) is cst.For:
                self.check_item_loop(node)
            # `for v in (self.a, self.b): v += e`: each pass writes a Variable through the loop name.
            if (type(node) is cst.For and type(node.iter) in (cst.List, cst.Tuple, cst.Set)
                    and type(node.target) is cst.Name and node.target.value in written):
                for el in node.iter.elements:
                    path = self.variable_path(el.value)
                    if path is not None and self.known.variable(path):
                        self.report(el.value, "BFY213", f"the loop writes self.{'.'.join(path)} through "
                                    f"'{node.target.value}'; batchify cannot follow a Variable there: write each "
                                    "Variable in a statement of its own (or keep them in a bm.VarList)")
                        break
                continue
            # `lambda v=self.h: v * 2.0`: the default is the Variable object, read when called.
            if type(node) in (cst.Lambda, cst.FunctionDef):
                for param in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
                    path = self.variable_path(param.default) if param.default is not None else None
                    if path is not None and self.known.variable(path):
                        self.report(param.default, "BFY213", f"the default of '{param.name.value}' is "
                                    f"self.{'.'.join(path)} itself, the Variable object (read when the function "
                                    "is called, after later writes); batchify cannot follow it there. Give it "
                                    f"self.{'.'.join(path)}.value, or read self.{'.'.join(path)} in the body")
                continue
            # `functools.partial(energy, self.s)`: the partial holds the Variable object, read when called.
            if type(node) is cst.Call and cst.Module([]).code_for_node(node.func) in ("functools.partial", "partial"):
                for arg in node.args[1:]:
                    name = arg.value.value if type(arg.value) is cst.Name else None
                    path = aliases[name][0] if name in aliases else self.variable_path(arg.value)
                    if path is not None and self.known.variable(path):
                        self.report(arg.value, "BFY213", f"self.{'.'.join(path)} is bound into a partial here, as "
                                    "the Variable object (read when the partial is called, after later writes); "
                                    f"batchify cannot follow it there. Bind self.{'.'.join(path)}.value, or pass "
                                    "the Variable when calling")
                continue
            # `outs.append(self.h)`: the list holds the Variable object, as a literal would.
            if (type(node) is cst.Call and type(node.func) is cst.Attribute
                    and node.func.attr.value in ("append", "insert", "add")):
                for arg in node.args[-1:]:
                    name = arg.value.value if type(arg.value) is cst.Name else None
                    path = aliases[name][0] if name in aliases else self.variable_path(arg.value)
                    if path is not None and self.known.variable(path):
                        self.report(arg.value, "BFY213", f"self.{'.'.join(path)} is put into a container here, as "
                                    "the Variable object (later writes show through it in the original); batchify "
                                    f"cannot follow it there. Put its value in (self.{'.'.join(path)}.value)")
                continue
            if not (type(node) is cst.Assign and type(node.value) in (cst.List, cst.Set, cst.Dict, cst.Tuple)):
                continue
            if len(node.targets) == 1 and type(node.targets[0].target) in (cst.Tuple, cst.List):
                continue  # unpacking: aliases, one each
            values = ([e.value for e in node.value.elements] if type(node.value) is not cst.Dict
                      else [e.value for e in node.value.elements if type(e) is cst.DictElement])
            for v in values:
                name = v.value if type(v) is cst.Name else None
                path = aliases[name][0] if name in aliases else self.variable_path(v)
                if path is not None and self.known.variable(path):
                    self.report(v, "BFY213", f"self.{'.'.join(path)} is put into a container here, as the Variable "
                                "object; batchify cannot follow it there. Put its value in (self."
                                f"{'.'.join(path)}.value), or use the Variable directly")

    def check_item_loop(self, loop: cst.For) -> None:
        """``for k, v in self.mats.items(): self.mats[k] = ...; total += v``: the loop name is the item,
        the Variable object, so the original reads the value just written; the batched loop would
        read the old one. Refused when the name is read after the container is written in the body."""
        iterated, target = loop.iter, loop.target
        wrapped = type(iterated) is cst.Call and type(iterated.func) is cst.Name and iterated.func.value == "enumerate"
        if wrapped and iterated.args:
            iterated = iterated.args[0].value
            target = target.elements[-1].value if type(target) is cst.Tuple and len(target.elements) == 2 else None
        elif (type(iterated) is cst.Call and type(iterated.func) is cst.Attribute and not iterated.args
              and iterated.func.attr.value in ("values", "items")):
            if iterated.func.attr.value == "items":
                target = target.elements[-1].value if type(target) is cst.Tuple and len(target.elements) == 2 else None
            iterated = iterated.func.value
        path = self_path(iterated, self.me)
        if type(target) is not cst.Name or not path or len(path) != 1 or not (
                path[0] in self.known.lists or path[0] in self.known.fields):
            return
        body = list(walk(loop.body))
        write = next((i for i, n in enumerate(body) if isinstance(n, cst.BaseSmallStatement)
                      and written_paths(n, self.me) & {tuple(path)}), None)
        if write is None:
            return
        inside = {id(n) for n in walk(body[write])}
        if any(type(n) is cst.Name and n.value == target.value and id(n) not in inside for n in body[write + 1:]):
            self.report(target, "BFY213", f"'{target.value}' is an item of self.{path[0]}, the Variable object, and "
                        f"is read after self.{path[0]} is written in the loop: the original's '{target.value}' sees "
                        f"the new value, batchify's would see the old; read self.{path[0]}[...] itself there")

    # -- helpers and children's steps that change their argument -------------------------------
    def mutated_params(self, helper: cst.FunctionDef, seen: frozenset[str] = frozenset()) -> set[str]:
        """Parameters of a same-file helper that its body changes in place (``var += e`` and the like)."""
        params = param_names(helper.params)
        written = self.names_written_through(helper) & params
        for node in walk(helper.body):
            if type(node) is cst.Call:
                callee = self.helper_of(node)
                if callee is not None and callee.name.value not in seen:
                    inner = self.mutated_params(callee, seen | {helper.name.value})
                    for position, name in self.arguments(node, callee):
                        if type(name) is cst.Name and name.value in params and position in inner:
                            written.add(name.value)
        return written

    def argument_use(self, func: cst.FunctionDef, name: str) -> ArgumentUse:
        params = param_names(func.params)
        value_read = {n.value.value for n in walk(func.body) if type(n) is cst.Attribute and n.attr.value == "value"
                      and type(n.value) is cst.Name and n.value.value in params}
        return ArgumentUse(name, func, frozenset(self.mutated_params(func)), frozenset(value_read),
                           frozenset(self.asked_params(func)), frozenset(self.asked_params(func, variable=True)))

    def asked_params(self, func: cst.FunctionDef, variable: bool = False, seen: frozenset[str] = frozenset()
                     ) -> set[str]:
        """Parameters of a function of the file asked what they are (``variable_question``, ``a.__class__``,
        ``getattr(a, "__class__")``), there or in a function of the file it hands them to; with ``variable``,
        ``isinstance()`` only as a Variable would be asked (``bm.Variable``, not ``bp.dyn.Lif``)."""
        params = param_names(func.params)
        gathered = {q.name.value for q in (func.params.star_arg, func.params.star_kwarg) if type(q) is cst.Param}

        same: dict[str, str] = {}  # `b = a`: a local bound to a parameter (`b = args[0]`: to what it gathers)

        def asked_of(node: cst.BaseExpression | None) -> str | None:
            while type(node) is cst.Subscript and type(node.value) is cst.Name and node.value.value in gathered:
                node = node.value  # (`args[0]` of `*args`: one of the arguments it gathers)
            if type(node) is not cst.Name:
                return None
            return node.value if node.value in params else same.get(node.value)

        bindings = [(n.targets[0].target.value, n.value) for n in walk(func.body) if type(n) is cst.Assign
                    and len(n.targets) == 1 and type(n.targets[0].target) is cst.Name]
        while new := {local: name for local, value in bindings if local not in same and (name := asked_of(value))}:
            same.update(new)  # (until no more: `c = b` may come before `b = a` in a loop's text)

        asked = set() if variable else {  # (`a.__class__` of one example's view of an object is the object's)
            name for n in walk(func.body) if type(n) is cst.Attribute and n.attr.value == "__class__"
            and (name := asked_of(n.value))}
        for node in walk(func.body):
            if type(node) is not cst.Call:
                continue
            first = node.args[0].value if node.args and not node.args[0].keyword and not node.args[0].star else None
            if (name := asked_of(first)) and (variable_question(node, variable)
                                              or attribute_question(node, variable)):
                asked.add(name)
            callee = self.helper_of(node)
            if callee is not None and callee.name.value not in seen:  # `kind(a)` calls `isvar(a)`
                inner = self.asked_params(callee, variable, seen | {func.name.value})
                asked |= {name for position, arg in self.arguments(node, callee)
                          if position in inner and (name := asked_of(arg))}
        return asked

    def helper_of(self, call: cst.Call) -> cst.FunctionDef | None:
        func = call.func
        if type(func) is cst.Name:
            return self.helpers.get(func.value)
        path = self_path(func, self.me)
        return self.helpers.get(f"self.{path[0]}") if path and len(path) == 1 else None

    def child_step(self, call: cst.Call) -> ArgumentUse | None:
        """``self.proj(x)`` (its ``__call__``, else ``update``) or ``self.net.proj.read(x)``: the
        method of a child model of the file the call runs."""
        path = self_path(call.func, self.me)
        if not path or len(path) < (1 if path[-1] in self.known.children else 2):
            return None
        known = self.known
        for name in path[:-1]:
            if name not in known.children:
                return None
            known = known.children[name]
        if path[-1] in known.children:
            steps = known.children[path[-1]].steps
            return steps.get("__call__") or steps.get("update")
        return known.steps.get(path[-1])

    @staticmethod
    def arguments(call: cst.Call, helper: cst.FunctionDef) -> list[tuple[str, cst.BaseExpression]]:
        """``(parameter name, argument)`` for the plain arguments of a call of ``helper``."""
        params = [p.name.value for p in (*helper.params.posonly_params, *helper.params.params)]
        if type(call.func) is cst.Attribute:
            params = params[1:]  # self
        named = param_names(helper.params)
        rest, keywords = (q.name.value if type(q) is cst.Param else None
                          for q in (helper.params.star_arg, helper.params.star_kwarg))
        out = []
        for i, arg in enumerate(call.args):
            if arg.star:
                break
            if arg.keyword is not None:
                key = arg.keyword.value
                if key in named or keywords:  # (one `**kwargs` gathers: its name stands for each)
                    out.append((key if key in named else keywords, arg.value))
            elif i < len(params) or rest:  # (`*args` gathers the rest: its name stands for each)
                out.append((params[i] if i < len(params) else rest, arg.value))
        return out

    def check_helper_call(self, call: cst.Call) -> None:
        """A Variable handed to a helper of the file or to a child model's method: the batched code
        hands over each example's value, an array, so a change in place or a ``.value`` there would
        not mean what it meant."""
        helper = self.helper_of(call)
        if helper is not None:
            use, receiver = self.argument_use(helper, f"{helper.name.value}()"), "a helper"
        else:
            use, receiver = self.child_step(call), "a child's step"
            if use is None:
                return
        for param, arg in self.arguments(call, use.method):
            path = self_path(arg, self.me)
            item = path is None and type(arg) is cst.Subscript and self.known.container(self_path(arg.value, self.me))
            if not (item or self.handed_variable(path)):
                continue
            dotted = cst.Module([]).code_for_node(arg)[len(self.me) + 1:] if item else ".".join(path)
            own = item or self.known.variable(path)
            if param in use.changed:
                self.report(arg, "BFY213", f"{use.name} changes its argument '{param}' in place, and "
                            f"is given self.{dotted}: the Variable would be changed behind batchify's "
                            f"back; return the new value from {use.name} and assign it "
                            f"(self.{dotted}.value = ...)")
            elif param in use.value_read:  # the batched code hands over each example's value, an array
                self.report(arg, "BFY213", f"{use.name} reads {param}.value, and is given self.{dotted}, "
                            f"the Variable object; batchify hands {receiver} each example's value, which has "
                            f"no .value. Read '{param}' itself in {use.name} ({param}.value -> {param}: a "
                            f"Variable computes as its value, so the original keeps its meaning)")
            elif param in use.object_asked and own or param in use.variable_asked:
                # (a path under a built-in may be an object, whose view answers type() and isinstance() as the
                # object does: refused when asked as only a Variable is, `isinstance(a, bm.Variable)`)
                which = "the" if own else "maybe a"
                self.report(arg, "BFY213", f"{use.name} asks what '{param}' is (isinstance, type, hasattr or "
                            f"__class__), and is given self.{dotted}, {which} Variable object; batchify hands "
                            f"{receiver} each example's value, an array, which would answer differently. Ask it "
                            f"of self.{dotted} where the step reads it, or hand {use.name} the answer")


def module_lambdas(module: cst.Module) -> dict[str, cst.FunctionDef]:
    """``kind = lambda a: ...`` at the top of the file, bound once: a function of the file as a ``def`` would
    be (``def kind(a): return ...``), for what the alias checks ask of the functions a Variable is handed to."""
    bound: dict[str, list[cst.BaseExpression]] = {}
    for statement in module.body:
        for small in statement.body if type(statement) is cst.SimpleStatementLine else ():
            if type(small) is cst.Assign:
                for target in small.targets:
                    if type(target.target) is cst.Name:
                        bound.setdefault(target.target.value, []).append(small.value)
    return {name: cst.FunctionDef(cst.Name(name), values[0].params, cst.IndentedBlock(
                [cst.SimpleStatementLine([cst.Return(values[0].body)])]))
            for name, values in bound.items() if len(values) == 1 and type(values[0]) is cst.Lambda}


def object_question(call: cst.Call) -> str | None:
    """``"isinstance"`` of ``isinstance(...)`` or ``builtins.isinstance(...)``; likewise ``type``, ``hasattr``."""
    func = call.func
    if type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "builtins":
        func = func.attr
    return func.value if type(func) is cst.Name and func.value in names.OBJECT_QUESTIONS else None


def attribute_question(call: cst.Call, variable: bool = False) -> bool:
    """``getattr(v, "__class__")`` or ``getattr(v, "value")``: what only the Variable object answers so (with
    ``variable``, ``"value"`` only: one example's view of an object has the object's ``__class__``)."""
    if not (type(call.func) is cst.Name and call.func.value == "getattr" and len(call.args) >= 2):
        return False
    asked = call.args[1].value
    return type(asked) is cst.SimpleString and asked.evaluated_value in (
        names.VARIABLE_ONLY_ATTRIBUTES | ({"__class__"} if not variable else set()))


def variable_question(call: cst.Call, variable: bool = False) -> bool:
    """Whether a Variable and its value (an array) may answer ``call`` differently: ``type(v)``;
    ``isinstance(v, C)`` unless every class in ``C`` is a plain Python type (``isinstance(v, float)`` is False
    of both; ``bm.Array``, ``jax.Array`` or a local class may not be); ``hasattr(v, "value")``. With
    ``variable``, for what may be a Variable or an object inside a built-in (whose view answers ``type()``
    and ``isinstance()`` as the object): ``isinstance(v, C)`` only of a class spelled like a Variable's
    (``bm.Variable``, ``(bm.TrainVar, float)``, ``bm.Array``), ``hasattr(v, "value")``; not ``type(v)``."""
    kind = object_question(call)
    if kind is None or not call.args:
        return False
    if kind == "type":
        return len(call.args) == 1 and not variable
    if len(call.args) < 2:
        return False
    asked = call.args[1].value
    if kind == "hasattr":
        return type(asked) is not cst.SimpleString or asked.evaluated_value in names.VARIABLE_ONLY_ATTRIBUTES
    if variable:
        return any(type(n) is cst.Name and re.search(r"Var|Parameter|State|BrainPyObject|Base|Array", n.value)
                   for n in walk(asked))
    classes = [e.value for e in asked.elements] if type(asked) is cst.Tuple else [asked]
    return not all(type(c) is cst.Name and c.value in names.PLAIN_TYPES for c in classes)


def returned_params(helper: cst.FunctionDef) -> set[str]:
    """The parameters a function may return as they are: ``return v``, ``return v if c else w``."""
    params = {p.name.value for p in (*helper.params.posonly_params, *helper.params.params)}

    def names(expr: cst.BaseExpression | None) -> set[str]:
        if type(expr) is cst.IfExp:
            return names(expr.body) | names(expr.orelse)
        if type(expr) is cst.BooleanOperation:
            return names(expr.left) | names(expr.right)
        return {expr.value} & params if type(expr) is cst.Name else set()

    return {n for node in walk(helper.body) if type(node) is cst.Return for n in names(node.value)}


class _Positioned(Transformer):
    """A rewrite of a method's nodes whose new nodes stand at the places of those they replace."""

    owner: Normaliser

    def on_leave(self, original_node, updated_node):
        result = super().on_leave(original_node, updated_node)
        if result is not original_node and is_node(result):
            self.owner.inherit(result, original_node)
        return result

    def clone(self, node: cst.CSTNode) -> cst.CSTNode:
        """A copy of ``node`` whose every node stands where its original does."""
        copy = node.deep_clone()
        for new, old in zip(walk(copy), walk(node)):
            self.owner.inherit(new, old)
        return copy


class _Rename(_Positioned):
    """Renames Name nodes: those ``by_id`` holds (``id(Name) -> new name``), or every name ``by_name`` maps."""

    def __init__(self, owner: Normaliser, by_id: dict[int, str] | None = None, by_name: dict[str, str] | None = None):
        super().__init__()
        self.owner, self.by_id, self.by_name = owner, by_id or {}, by_name or {}

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        new = self.by_id.get(id(original_node)) or self.by_name.get(original_node.value)
        return updated_node if new is None else updated_node.with_changes(value=new)


class _Unroll(_Positioned):
    """Unrolls ``Normaliser.model_loops``: each loop becomes its body once per model, the loop name
    replaced by the model (each copy's nodes at the positions of the nodes they copy)."""

    def __init__(self, owner: Normaliser, loops: dict[int, list[cst.BaseExpression]]):
        super().__init__()
        self.owner = owner
        self.loops = loops

    def leave_For(self, original_node: cst.For, updated_node: cst.For):
        models = self.loops.get(id(original_node))
        if models is None:
            return updated_node
        body = updated_node.body
        statements = (list(body.body) if type(body) is cst.IndentedBlock
                      else [cst.SimpleStatementLine(list(body.body))])
        name = original_node.target.value
        copies = [self.clone(stmt).visit(_Substitute(self.owner, name, model)) for model in models
                  for stmt in statements]
        if copies:  # the loop's own comments stay above its first copy
            copies[0] = copies[0].with_changes(leading_lines=[*updated_node.leading_lines, *copies[0].leading_lines])
        return cst.FlattenSentinel(copies)

    def leave_ListComp(self, original_node: cst.ListComp, updated_node: cst.ListComp):
        items = self.expanded(original_node, updated_node)
        return updated_node if items is None else cst.List(items, lpar=updated_node.lpar, rpar=updated_node.rpar)

    def leave_GeneratorExp(self, original_node: cst.GeneratorExp, updated_node: cst.GeneratorExp):
        items = self.expanded(original_node, updated_node)
        return updated_node if items is None else cst.Tuple(items)  # (in its own parentheses, as an argument too)

    def expanded(self, original_node, updated_node) -> list[cst.Element] | None:
        models = self.loops.get(id(original_node))
        if models is None:
            return None
        name = original_node.for_in.target.value
        return [cst.Element(self.clone(updated_node.elt).visit(_Substitute(self.owner, name, model)))
                for model in models]

    def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript):
        models = self.loops.get(id(original_node))
        return updated_node if models is None else self.clone(models[0])


class _Substitute(_Positioned):
    """``name`` -> a copy of ``model`` (at the model's place in the loop header)."""

    def __init__(self, owner: Normaliser, name: str, model: cst.BaseExpression):
        super().__init__()
        self.owner, self.name, self.model = owner, name, model

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.Attribute:
        return updated_node.with_changes(attr=original_node.attr)  # (`x.name`: an attribute, not the loop name)

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        return updated_node.with_changes(keyword=original_node.keyword)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self.clone(self.model) if original_node.value == self.name else updated_node


class _Inline(_Positioned):
    """Replaces aliases by their Variable and getattr/setattr/fill by the plain forms."""

    def __init__(self, owner: Normaliser, aliases: dict, removed: dict[int, list[int]], loops: dict[int, str]):
        super().__init__()
        self.owner = owner
        self.aliases = aliases
        self.removed = removed
        self.loops = loops  # `for tr in self.traces` loops to run by index
        self.items: dict[str, cst.BaseExpression] = {}  # loop name -> `self.traces[tr_index]`
        self.skip: set[int] = set()  # Name nodes that are binding targets

    def visit_For(self, node: cst.For) -> bool:
        if id(node) in self.loops:
            index = cst.Name(self.loops[id(node)])
            self.items[node.target.value] = cst.Subscript(node.iter, [cst.SubscriptElement(cst.Index(index))])
            self.skip.add(id(node.target))
        return True

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For:
        if id(original_node) not in self.loops:
            return updated_node
        self.items.pop(original_node.target.value, None)
        length = cst.Call(cst.Name("len"), [cst.Arg(original_node.iter)])
        return updated_node.with_changes(target=cst.Name(self.loops[id(original_node)]),
                                         iter=cst.Call(cst.Name("range"), [cst.Arg(length)]))

    def leave_BinaryOperation(self, original_node: cst.BinaryOperation,
                              updated_node: cst.BinaryOperation) -> cst.BaseExpression:
        """``x >> self.neu1 >> self.syn1`` is ``self.syn1(self.neu1(x))``: child calls, as the rules know them."""
        if not self.owner.piped_module(original_node):
            return updated_node
        return cst.Call(updated_node.right, [cst.Arg(updated_node.left)], lpar=updated_node.lpar,
                        rpar=updated_node.rpar)

    # Names that are not the alias: an attribute (`self.V` beside `V = self.V`), a keyword (`f(u=u)`),
    # a parameter, and anything a nested function or lambda binds as a parameter of the same name.
    def visit_Attribute(self, node: cst.Attribute) -> bool:
        self.skip.add(id(node.attr))
        return True

    def visit_Arg(self, node: cst.Arg) -> bool:
        if node.keyword is not None:
            self.skip.add(id(node.keyword))
        return True

    def visit_Param(self, node: cst.Param) -> bool:
        self.skip.add(id(node.name))
        return True

    def shadowed(self, node: cst.FunctionDef | cst.Lambda) -> None:
        bound = param_names(node.params)
        if node is not self.owner.current:
            self.skip.update(id(n) for n in walk(node.body) if type(n) is cst.Name and n.value in bound)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.shadowed(node)
        return True

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.shadowed(node)
        return True

    def visit_Assign(self, node: cst.Assign) -> bool:
        for t in node.targets:  # the names an assignment binds (not `v` in `v.value = e`)
            targets = [e.value for e in t.target.elements] if type(t.target) in (cst.Tuple, cst.List) else [t.target]
            self.skip.update(id(n) for n in targets if type(n) is cst.Name)
        return True

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        if original_node.value in self.items and id(original_node) not in self.skip:
            return self.items[original_node.value]
        if original_node.value in self.aliases and id(original_node) not in self.skip:
            return path_expr(self.owner.me, self.aliases[original_node.value][0])
        return updated_node

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign):
        drop = self.removed.get(id(original_node))
        # `v += e` targets are handled by leave_AugAssign; alias targets of plain assignments here.
        target = updated_node.targets[0].target if len(updated_node.targets) == 1 else None
        if type(target) is cst.Name and target.value in self.aliases and drop:
            return cst.RemovalSentinel.REMOVE
        if drop and type(target) in (cst.Tuple, cst.List):
            keep = [i for i in range(len(target.elements)) if i not in drop]
            if not keep:
                return cst.RemovalSentinel.REMOVE
            t_el = [target.elements[i].value for i in keep]
            v_el = [updated_node.value.elements[i].value for i in keep]
            if len(keep) == 1:
                return updated_node.with_changes(targets=[cst.AssignTarget(t_el[0])], value=v_el[0])
            return updated_node.with_changes(
                targets=[cst.AssignTarget(cst.Tuple([cst.Element(t) for t in t_el], lpar=[], rpar=[]))],
                value=cst.Tuple([cst.Element(v) for v in v_el], lpar=[], rpar=[]))
        return updated_node

    def leave_AugAssign(self, original_node: cst.AugAssign, updated_node: cst.AugAssign) -> cst.AugAssign:
        target = original_node.target
        if type(target) is cst.Name and target.value in self.aliases:
            return updated_node.with_changes(target=path_expr(self.owner.me, self.aliases[target.value][0]))
        return updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        me = self.owner.me
        if self.owner.is_self_call(updated_node.func):  # `self(x)`, `self.__call__(x)` (BrainPy's)
            return updated_node.with_changes(func=cst.Attribute(cst.Name(me), cst.Name(self.owner.self_method())))
        if self.owner.self_as_body(updated_node):  # `bm.for_loop(self, xs)`: its steps are self(x)
            body = updated_node.args[0]
            updated_node = updated_node.with_changes(args=[body.with_changes(value=cst.Attribute(
                cst.Name(me), cst.Name(self.owner.self_method()))), *updated_node.args[1:]])
        got = constant_name(updated_node, me, "getattr", (2,))
        if isinstance(got, str):
            return path_expr(me, [got])
        if got is False and self.owner.known.fields:
            self.owner.report(original_node, "BFY213", "getattr(self, ...) with a computed name may reach a "
                              "Variable batchify cannot see; name the attribute (self.NAME)")
        if constant_name(updated_node, me, "setattr", (3,)) is False and self.owner.known.fields:
            self.owner.report(original_node, "BFY213", "setattr(self, ...) with a computed name may write a "
                              "Variable batchify cannot see; assign the attribute (self.NAME = ...)")
        self.owner.check_helper_call(updated_node)
        func = updated_node.func
        if type(func) is cst.Attribute and func.attr.value == "fill_diagonal" and updated_node.args and not any(
                a.keyword and a.keyword.value == "inplace" and type(a.value) is cst.Name and a.value.value == "False"
                for a in updated_node.args):
            target = updated_node.args[0].value
            path = self_path(target.value if type(target) is cst.Attribute and target.attr.value == "value"
                             else target, me)
            if path is not None and self.owner.known.variable(path):
                name = ".".join(path)
                spelled = cst.Module([]).code_for_node(func)
                self.owner.report(original_node, "BFY205", f"{spelled}(self.{name}, ...) fills the Variable in "
                                  "place, which batchify has no rule for; assign the filled copy "
                                  f"(self.{name}.value = bm.fill_diagonal(self.{name}, ..., inplace=False))")
        if type(func) is cst.Attribute:
            path = self_path(func.value, me)
            if path is not None and self.owner.known.variable(path) and in_place_method(func.attr.value):
                self.owner.report(original_node, "BFY205", f"self.{'.'.join(path)}.{func.attr.value}() changes "
                                  "the Variable in place, which batchify has no rule for; assign the new value "
                                  f"(self.{'.'.join(path)}.value = ...)")
        return updated_node

    def leave_SimpleStatementLine(self, original_node, updated_node):
        """``setattr(self, "V", e)`` and ``self.U.fill(e)`` as statements: plain writes."""
        if len(updated_node.body) != 1 or type(updated_node.body[0]) is not cst.Expr:
            return updated_node
        call = updated_node.body[0].value
        if type(call) is not cst.Call:
            return updated_node
        me = self.owner.me
        name = constant_name(call, me, "setattr", (3,))
        if isinstance(name, str):
            return updated_node.with_changes(body=[cst.Assign([cst.AssignTarget(path_expr(me, [name]))],
                                                              call.args[2].value)])
        func = call.func
        if type(func) is cst.Attribute:
            path = self_path(func.value, me)
            method = func.attr.value
            if path is not None and self.owner.known.variable(path) and method in {**FILL_METHODS, **ZERO_METHODS}:
                current = cst.Attribute(path_expr(me, path), cst.Name("value"))
                maker = cst.Attribute(cst.Name("jnp"), cst.Name({**FILL_METHODS, **ZERO_METHODS}[method]))
                args = [cst.Arg(current)] + ([cst.Arg(call.args[0].value)] if method in FILL_METHODS and call.args
                                             else [])
                return updated_node.with_changes(body=[cst.Assign(
                    [cst.AssignTarget(cst.Attribute(path_expr(me, path), cst.Name("value")))], cst.Call(maker, args))])
        return updated_node


# Python side effects: in the original they run at every step; in the batched code, once, when
# the step is traced. Refused in stepping methods (BFY214).
SEEDS = frozenset({"brainpy.math.random.seed", "brainpy.math.seed", "numpy.random.seed", "random.seed",
                   "brainstate.random.seed"})
MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "add", "update", "setdefault",
                      "discard", "popitem", "sort", "reverse"})


def side_effects(func: cst.FunctionDef, me: str | None, module_data: set[str],
                 plain_attribute: Callable[[str], bool], qualified: Callable[[cst.CSTNode], set[str]],
                 report: Callable[[cst.CSTNode, str, str], None]) -> None:
    """Report what a stepping method does besides computing: printing, reseeding a global stream,
    writing module-level objects or plain attributes of ``self`` (lists it appends to)."""
    nodes = list(walk(func.body))
    local = set(bound_names(func, nodes))
    method = func.name.value

    def global_root(node: cst.CSTNode) -> str | None:
        while type(node) in (cst.Attribute, cst.Subscript):
            node = node.value
        if type(node) is cst.Name and node.value in module_data and node.value not in local:
            return node.value
        return None

    def self_plain(node: cst.CSTNode) -> str | None:
        while type(node) is cst.Subscript:
            node = node.value
        path = self_path(node, me) if me else None
        return path[0] if path and len(path) == 1 and plain_attribute(path[0]) else None

    once = f"in the original it happens at every step; in the batched code once, when {method}() is traced"
    # ``global X`` (or ``nonlocal X`` in the method itself, for a class defined in a function) is a
    # side effect only when X is written: the write outlives the step. A closure's ``nonlocal``
    # names a local of the method, made anew at every call.
    nested = {id(n) for d in nodes if type(d) in (cst.FunctionDef, cst.Lambda) for n in walk(d.body)}
    written = set(bound_names(func, [n for n in nodes if type(n) not in (cst.Global, cst.Nonlocal)]))
    written |= {n.target.value for n in nodes if type(n) is cst.AugAssign and type(n.target) is cst.Name}
    for node in nodes:
        if type(node) is cst.Global or (type(node) is cst.Nonlocal and id(node) not in nested):
            names = [n.name.value for n in node.names if n.name.value in written]
            if names:
                kind = "global" if type(node) is cst.Global else "nonlocal"
                report(node, "BFY214", f"{method}() declares {', '.join(repr(n) for n in names)} {kind} and "
                       f"writes it: {once}; keep such state in a bm.Variable")
        for el in assigned(node):
            root = global_root(el) if type(el) in (cst.Attribute, cst.Subscript) else None
            if root:
                report(el, "BFY214", f"{method}() writes the module-level object '{root}': {once}; keep "
                       "such state in a bm.Variable of the model")
        if type(node) is not cst.Call:
            continue
        names = qualified(node.func)
        if names & {"builtins.open", "builtins.input"}:
            report(node, "BFY214", f"{sorted(names & {'builtins.open', 'builtins.input'})[0][9:]}() in {method}(): "
                   f"file or terminal I/O {once}; do it outside the batched code")
        if "builtins.print" in names:
            report(node, "BFY214", f"print() in {method}(): {once} (under bm.jit the original prints once "
                   "too); use jax.debug.print to print traced values at every step")
        if names & SEEDS:
            report(node, "BFY214", f"{sorted(names & SEEDS)[0]}() in {method}() reseeds a global stream: {once}, "
                   "and every example draws from its own key; seed before running the model")
        func = node.func
        if type(func) is cst.Attribute and func.attr.value in MUTATORS:
            root = global_root(func.value)
            attribute = self_plain(func.value)
            if root or attribute:
                what = f"the module-level object '{root}'" if root else f"self.{attribute}, a plain attribute"
                report(node, "BFY214", f"{method}() changes {what} ({func.attr.value}): {once}; keep such state "
                       "in a bm.Variable, or collect outputs by returning them")
