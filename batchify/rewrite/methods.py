"""Stage 3: rewrite a stateful method into a pure single-example function.

``def update(self, x)`` that reads and writes ``self.V`` becomes
``def update_pure(self, params, state, x)`` that reads ``state.V`` / ``params.w`` and
returns ``(new_state, result)``:

- reads ``self.V`` / ``self.V.value`` / ``self.child.V``  ->  ``state.V`` / ``state.child.V``
  (weights read from ``params``);
- writes ``self.V.value = e``, ``self.V = e``, ``self.V += e``, ``self.V[i] = e``,
  ``self.V.update(e)``  ->  ``state = state._replace(V=...)``;
- calls of stateful methods, own (``self.m(x)``, ``super().m(x)``) or a child's
  (``self.child(x)``, ``self.child.m(x)``), are moved in front of the statement and
  thread the state: ``state, y = self.m_pure(params, state, x)``;
- ``return e``  ->  ``return state, e``.

State is rebound, never mutated, so every read sees the latest write, also inside
closures and on every path through ``if``/``for``; that is what keeps the meaning of
the single-example body under ``jax.vmap``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import libcst as cst
from libcst.metadata import QualifiedNameSource

from batchify import names
from batchify.aliases import object_question
from batchify.analyse import deterministic_initializer, global_stream_draw, is_none, is_super_call, self_name_of
from batchify.cstwalk import Transformer, field_text, self_path, walk
from batchify.diagnostics import Diagnostic
from batchify.ir import Method, ModelClass, ModuleIR
from batchify.names import pure_name
from batchify.scopes import COMPREHENSIONS

AUG_OPS: dict[type, type] = {
    cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide, cst.FloorDivideAssign: cst.FloorDivide, cst.ModuloAssign: cst.Modulo,
    cst.PowerAssign: cst.Power, cst.MatrixMultiplyAssign: cst.MatrixMultiply, cst.BitAndAssign: cst.BitAnd,
    cst.BitOrAssign: cst.BitOr, cst.BitXorAssign: cst.BitXor, cst.LeftShiftAssign: cst.LeftShift,
    cst.RightShiftAssign: cst.RightShift,
}


def binds(params: cst.Parameters, positional: int, keywords: set[str]) -> bool:
    """Whether a call with ``positional`` arguments (after ``self``) and these keywords binds to ``params``."""
    ordered = [*params.posonly_params, *params.params][1:]
    if positional > len(ordered) and type(params.star_arg) is not cst.Param:
        return False
    taken = {p.name.value for p in ordered[:positional]}
    named = {p.name.value for p in (*params.params, *params.kwonly_params)} - taken
    if any(k not in named and type(params.star_kwarg) is not cst.Param for k in keywords) or keywords & taken:
        return False
    return all(p.default is not None or p.name.value in keywords
               for p in (*ordered[positional:], *params.kwonly_params))


def shared_dict_expression(node: cst.BaseExpression) -> bool:
    """An argument that is BrainPy's shared dict: a ``tdi`` handed on, ``bp.share.get_shargs()``, a dict."""
    if type(node) is cst.Name:
        return node.value in names.SHARED_DICT_PARAMS
    if type(node) is cst.Call:
        func = node.func
        return (type(func) is cst.Attribute and func.attr.value == "get_shargs") or (
            type(func) is cst.Name and func.value == "dict")
    return type(node) is cst.Dict


def called_item(func: cst.BaseExpression) -> cst.Subscript | None:
    """The item a call runs, ``self.seq[0]`` of ``self.seq[0](x)`` or ``self.seq[0].update(x)``; None
    for a method of a Variable's value read from it (``self.seq[0].V.value.clip(...)``), which is a
    read of the item's Variable there, not a call of the item."""
    value_read = False
    while type(func) is cst.Attribute:
        func = func.value
        value_read = value_read or (type(func) is cst.Attribute and func.attr.value == "value")
    return func if type(func) is cst.Subscript and not value_read else None


def name(value: str) -> cst.Name:
    return cst.Name(value)


def runtime(member: str) -> cst.Attribute:
    """``bfy.member``: a helper of ``batchify.runtime``, which every generated module imports as ``bfy``."""
    return cst.Attribute(cst.Name(names.RUNTIME), cst.Name(member))


def attr(base: cst.BaseExpression, *parts: str) -> cst.BaseExpression:
    for part in parts:
        base = cst.Attribute(base, cst.Name(part))
    return base


def line(*smalls: cst.BaseSmallStatement) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(list(smalls))


def assign(targets: Sequence[str], value: cst.BaseExpression) -> cst.SimpleStatementLine:
    target: cst.BaseAssignTargetExpression
    if len(targets) == 1:
        target = name(targets[0])
    else:
        target = cst.Tuple([cst.Element(name(t)) for t in targets], lpar=[], rpar=[])
    return line(cst.Assign([cst.AssignTarget(target)], value))


def keyword_arg(keyword: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value, keyword=name(keyword), equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))


def call(func: cst.BaseExpression, args: Sequence[cst.Arg]) -> cst.Call:
    return cst.Call(func, [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args])


class Namespace:
    """Fresh local names that never shadow a name the method already uses."""

    def __init__(self, node: cst.CSTNode):
        nodes = list(walk(node))
        attributes = {id(n.attr) for n in nodes if type(n) is cst.Attribute}  # `x.value` binds no `value`
        self.used = {n.value for n in nodes if type(n) is cst.Name and id(n) not in attributes}

    def fresh(self, base: str) -> str:
        candidate, n = base, 1
        while candidate in self.used:
            n += 1
            candidate = f"{base}_{n}"
        self.used.add(candidate)
        return candidate


@dataclass(frozen=True)
class FieldRef:
    """A field reached from ``self``: ``children`` is the path of child attributes before it."""

    children: tuple[str, ...]
    name: str
    kind: str
    rest: tuple[str, ...]  # attributes after the field, ``.value`` removed
    container: str | None = None  # "list" / "dict" for a bm.VarList / bm.VarDict


class ItemIndex(NamedTuple):
    """The index of a write into an item of a bm.VarList / VarDict: ``self.xs[key][elements] = e``."""

    key: cst.BaseExpression
    elements: Sequence[cst.SubscriptElement]


@dataclass(frozen=True)
class LibraryRef:
    """An attribute of a built-in held as library code: ``self.N.spike`` -> ``("N", "spike")``."""

    children: tuple[str, ...]  # child attributes before the built-in (reaching into a child's: refused)
    name: str
    rest: tuple[str, ...]  # attributes after the built-in, a trailing ``.value`` removed

    @property
    def dotted(self) -> str:
        return ".".join((self.name, *self.rest))


@dataclass
class Context:
    ir: ModuleIR
    cls: ModelClass
    method: Method
    self_name: str
    params: str
    state: str
    ns: Namespace
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # Nested functions given to bm.for_loop / bm.cond that change state: rewritten to take and
    # return the state, ``def body(state, x) -> (state, y)``.
    closures: set[str] = field(default_factory=set)
    members_of: dict = field(default_factory=dict)  # class name -> (fields, children, built-ins)
    masks: frozenset[str] = frozenset()  # locals that only ever hold a boolean mask (``mask_locals``)
    items: frozenset[str] = frozenset()  # locals that only ever hold a VarList / VarDict item (``item_locals``)
    shares_state: frozenset[int] = frozenset()  # `r *= g` on a local holding the state's object (``state_sharing_updates``)
    # `V` of `V = self.N.V`, read after a call that may step the built-in: the chain it names, read again
    # there (``check_builtin_locals``), as the original's name sees the Variable live
    live_names: dict[int, cst.BaseExpression] = field(default_factory=dict)
    # `V` of `V = self.N.V`, each read the binding it has is known at: the chain it names, for `id(V)` and
    # `V is ...`, which see the Variable object (``check_builtin_locals``, ``held_object``)
    object_names: dict[int, cst.BaseExpression] = field(default_factory=dict)
    # reads of a local bound to a chain whose index is a name bound again in the method: which object
    # `id(V)` and `V is ...` see is not something the text says there (refused: ``unfollowed_identity``)
    unfollowed_objects: set[int] = field(default_factory=set)
    # The source statement being rewritten: where a diagnostic on a node the rewrite built points
    statement: cst.CSTNode | None = None

    def report(self, node: cst.CSTNode, code: str, message: str) -> None:
        pos = self.ir.positions.get(node) or self.ir.positions.get(self.statement)
        line_no, col = (pos.start.line, pos.start.column + 1) if pos else (1, 1)
        end = (pos.end.line, pos.end.column + 1) if pos else (None, None)
        self.diagnostics.append(Diagnostic(self.ir.path, line_no, col, code, message, *end))

    def resolve(self, path: Sequence[str]) -> FieldRef | tuple[tuple[str, ...], ModelClass, tuple[str, ...]] | None:
        """Follow ``path`` through children; a FieldRef, or (children, child class, rest) for a child."""
        cls, children = self.cls, ()
        for i, part in enumerate(path):
            fields, kids, libraries = self.members(cls)
            if part in libraries:
                rest = tuple(path[i + 1:])
                return LibraryRef(children, part, rest[:-1] if rest[-1:] == ("value",) else rest)
            if part in fields:
                rest = tuple(path[i + 1:])
                if rest[:1] == ("value",):
                    rest = rest[1:]
                return FieldRef(children, part, fields[part].kind, rest, fields[part].container)
            if part in kids:
                children, cls = children + (part,), kids[part]
                continue
            return (children, cls, tuple(path[i:])) if children else None
        return children, cls, ()

    def members(self, cls: ModelClass) -> tuple[dict, dict, tuple[str, ...]]:
        """A class's fields, children and built-ins, as ``resolve`` reads them at every attribute
        (kept: the classes are final by the rewrite stage)."""
        found = self.members_of.get(cls.name)
        if found is None:
            found = self.members_of[cls.name] = (self.ir.field_map(cls), self.ir.child_map(cls),
                                                 self.ir.all_libraries(cls))
        return found

    def library(self, method: str, *args: cst.BaseExpression) -> cst.Call:
        """``self.library.<method>(...)``: the class's built-ins, run with one example's values bound."""
        return cst.Call(attr(name(self.self_name), "library", method), [cst.Arg(a) for a in args])

    def library_read(self, ref: LibraryRef) -> cst.BaseExpression:
        """``self.library.read(params, state, "N.spike")``; a child's built-in (``self.l1.N.spike``) is
        read through the child's library, from the child's params and state."""
        return cst.Call(attr(name(self.self_name), *ref.children, "library", "read"),
                        [cst.Arg(attr(name(self.params), *ref.children)), cst.Arg(attr(name(self.state), *ref.children)),
                         cst.Arg(cst.SimpleString(f'"{ref.dotted}"'))])

    def library_write(self, ref: LibraryRef, value: cst.BaseExpression) -> cst.SimpleStatementLine:
        return assign([self.state], self.library("write", name(self.state), cst.SimpleString(f'"{ref.dotted}"'),
                                                 value))

    def field_expr(self, ref: FieldRef, with_rest: bool = True) -> cst.BaseExpression:
        root = self.state if ref.kind == "state" else self.params
        return attr(name(root), *ref.children, ref.name, *(ref.rest if with_rest else ()))

    def replace_state(self, children: tuple[str, ...], updates: dict[str, cst.BaseExpression]) -> cst.SimpleStatementLine:
        """``state = state._replace(c=state.c._replace(V=value))`` for a write under ``children``."""

        def build(depth: int) -> cst.BaseExpression:
            owner = attr(name(self.state), *children[:depth])
            if depth == len(children):
                kwargs = updates
            else:
                kwargs = {children[depth]: build(depth + 1)}
            return cst.Call(attr(owner, "_replace"), [keyword_arg(k, v) for k, v in kwargs.items()])

        return assign([self.state], build(0))


class FStringQuotes(cst.CSTTransformer):
    """A string inside an f-string's replacement field takes the other quote where it has the f-string's
    own: the rewrite puts ``self.library.read(..., "N.V")`` there (``f"{self.N.V.shape}"``), and the
    same quote inside is Python 3.12's grammar (PEP 701), a SyntaxError on 3.11, which we support."""

    def __init__(self) -> None:
        super().__init__()
        self.quotes: list[str] = []

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self.quotes.append(node.start[-1])

    def leave_FormattedString(self, original: cst.FormattedString, updated: cst.FormattedString) -> cst.FormattedString:
        self.quotes.pop()
        return updated

    def leave_SimpleString(self, original: cst.SimpleString, updated: cst.SimpleString) -> cst.SimpleString:
        if not self.quotes or updated.quote not in ('"', "'"):
            return updated
        other = "'" if updated.quote == '"' else '"'
        body = updated.value[len(updated.prefix) + 1:-1]
        if updated.quote in self.quotes and other not in self.quotes and other not in body and "\\" not in body:
            return updated.with_changes(value=f"{updated.prefix}{other}{body}{other}")
        return updated


class ExprRewriter(Transformer):
    """Rewrites reads in one expression and moves stateful calls out of it (into ``pre``)."""

    # Inside these, a call may not run at all or run many times, so it cannot be moved out.
    NO_HOIST = frozenset({cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.IfExp,
                          cst.BooleanOperation, cst.FunctionDef, cst.ClassDef})

    def __init__(self, ctx: Context, hoist: bool = True):
        super().__init__()
        self.ctx = ctx
        self.pre: list[cst.SimpleStatementLine] = []
        self.hoisted: dict[str, Callable[[str], list[cst.SimpleStatementLine]]] = {}
        self.blocked = 0 if hoist else 1
        # Calls that are the whole body of a lambda given to BrainPy's control flow
        # (``bm.for_loop(lambda i: self.step(i, x), xs)``): the lambda carries the state instead.
        self.deferred: set[int] = set()
        # State read so far (node, the children it lies under) and the calls moved out that change
        # state (node, the child they run on): a read Python makes before such a call must not see
        # what the call wrote (``read_before_call``).
        self.state_reads: list[tuple[cst.CSTNode, tuple[str, ...], str]] = []  # (node, children, field)
        # Calls that change state: (node, children, the fields they may write or None for any).
        self.writers: list[tuple[cst.CSTNode, tuple[str, ...], frozenset[str] | None]] = []
        # ``self.seq[-1]`` of a built-in: read as one example's item when an attribute of it is read
        # (``items``), called through the library when it is called (``called_items``); the reads made.
        self.items: set[int] = set()
        self.called_items: set[int] = set()
        self.item_reads: set[int] = set()
        self.written: set[int] = set()  # subscripts inside an assignment's targets
        # `self.rng` of `self.rng.normal(...)` (a draw, ``random_draw``) or of `self.rng is None`: not refused
        self.stream_kept: set[int] = set()
        # Spans of the calls in this expression that may change a built-in's state (``changing_calls``):
        # a read of a built-in that Python makes before one is taken in front of it (``builtin_read``).
        self.changing_calls: list[tuple[tuple[int, int], tuple[int, int]]] = []
        self.call_funcs: set[int] = set()  # the ``func`` of every call (`self.N.V.mean` is called, not read)
        self.parents: dict[int, cst.CSTNode] = {}  # (of the expression's nodes: ``consumed_at``)
        self.pre_at: dict[int, int] = {}  # a call -> the length of ``pre`` when it was entered
        self.arg_pre_at: dict[int, int] = {}  # an argument -> the same

    def on_visit(self, node: cst.CSTNode) -> bool:
        if type(node) in self.NO_HOIST:
            self.blocked += 1
        return super().on_visit(node)

    def on_leave(self, original_node, updated_node):
        result = super().on_leave(original_node, updated_node)
        if type(original_node) in self.NO_HOIST:
            self.blocked -= 1
        return result

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        """``V`` of ``V = self.N.V`` after a call that may have stepped N: ``self.N.V`` read again here."""
        chain = self.ctx.live_names.get(id(original_node))
        if chain is None:
            return updated_node
        read = chain.visit(ExprRewriter(self.ctx, hoist=False))
        if self.read_before_a_change(original_node):  # (before another such call in this statement)
            return self.read_first(original_node.value, read)
        return read

    def visit_Comparison(self, node: cst.Comparison) -> bool:
        """``self.rng is not None``: a test of which object the attribute holds, not a use of the stream."""
        if all(type(t.operator) in (cst.Is, cst.IsNot) for t in node.comparisons):
            self.stream_kept.update(id(n) for n in (node.left, *(t.comparator for t in node.comparisons)))
        return True

    def visit_Call(self, node: cst.Call) -> bool:
        self.call_funcs.add(id(node.func))
        self.pre_at[id(node)] = len(self.pre)  # (what its arguments move in front comes after this)
        if global_stream_draw(node.func, self.ctx.self_name, self.ctx.ir.all_global_streams(self.ctx.cls),
                              self.ctx.ir.all_global_samplers(self.ctx.cls)):
            self.stream_kept.add(id(node.func.value if self_path(node.func, self.ctx.self_name)[1:] else node.func))
        item = called_item(node.func)
        if item is not None:
            self.called_items.add(id(item))
        if {q.name for q in self.ctx.ir.qualified.get(node.func, ())} & names.CONTROL_FLOW:
            bodies = [a.value for a in node.args]
            bodies += [el.value for a in node.args if type(a.value) in (cst.List, cst.Tuple) for el in a.value.elements]
            for body in bodies:
                if type(body) is cst.Lambda and type(body.body) is cst.Call and self.body_target(body.body.func):
                    self.deferred.add(id(body.body))
        return True

    def body_target(self, func: cst.BaseExpression) -> tuple[cst.BaseExpression, bool] | None:
        """What a call of ``func`` runs with the state: ``(self.m_pure, True)`` for a stateful method
        (it takes params and state), ``(body, False)`` for a closure that carries the state; None otherwise."""
        ctx = self.ctx
        if type(func) is cst.Name and func.value in ctx.closures:
            return func, False
        path = self_path(func, ctx.self_name)
        if path and len(path) == 1 and path[0] in ctx.cls.stateful:
            return attr(name(ctx.self_name), pure_name(path[0])), True
        return None

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        """The outermost attribute of a chain is visited first: a chain into a built-in is read whole."""
        if type(node.value) is cst.Subscript:
            self.items.add(id(node.value))
        path = self_path(node, self.ctx.self_name)
        return not (path and isinstance(self.ctx.resolve(path), LibraryRef))

    def item_of_builtin(self, node: cst.Subscript) -> LibraryRef | None:
        """``self.seq[-1]``: an item of a built-in itself (a ``bp.Sequential``'s layer), not of its Variable."""
        path = self_path(node.value, self.ctx.self_name)
        ref = self.ctx.resolve(path) if path else None
        return ref if isinstance(ref, LibraryRef) and not ref.rest else None

    def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript) -> cst.BaseExpression:
        """``self.seq[-1].spike`` -> ``self.library.read(params, state, "seq")[-1].spike``: the item as one
        example sees it (a call of it goes through the library: ``builtin_call``)."""
        if id(original_node) not in self.items or id(original_node) in self.called_items:
            return updated_node
        ref = self.item_of_builtin(original_node)
        if ref is None:
            return updated_node
        shown = self.ctx.ir.module.code_for_node(original_node)
        if id(original_node) in self.written:
            self.ctx.report(original_node, "BFY205", f"a Variable of {shown}, an item of the built-in "
                            f"self.{ref.dotted}, is written in {self.ctx.method.name}(): batchify writes a built-in's "
                            "Variables by their attribute path only; change it in that layer's own step, or hold "
                            "the layer on an attribute of its own and write self.NAME.V")
            return updated_node
        if any(type(element.slice) is cst.Slice for element in original_node.slice):
            self.ctx.report(original_node, "BFY213", f"{shown} is a view the built-in makes when sliced, not a "
                            "model it holds, which batchify cannot follow; slice the Variable instead "
                            f"(self.{ref.dotted}.V[...])")
            return updated_node
        # (a child's built-in is read through the child's library, as ``builtin_read`` reads one)
        read = self.ctx.library_read(ref)
        if self.read_before_a_change(original_node):  # (in front of the call, as ``builtin_read`` takes one)
            read = self.read_first(ref.name, read)
        self.item_reads.add(id(read))
        return updated_node.with_changes(value=read)

    # The read rules, tried in order on every attribute; the first that gives a node wins (batchify.rules).
    ATTRIBUTE_RULES = ("call_result_value", "container_item_read", "variable_class", "state_read", "builtin_read",
                       "mode_read", "property_read")

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        self.refuse_global_key(original_node)
        path = self_path(original_node, self.ctx.self_name)
        self.refuse_stream_use(original_node, path)
        ref = self.ctx.resolve(path) if path else None
        for rule in self.ATTRIBUTE_RULES:
            out = getattr(self, rule)(original_node, updated_node, path, ref)
            if out is not None:
                return out
        return updated_node  # constants and methods stay on self; analysis reported unknown `.value`s

    def call_result_value(self, original_node, updated_node, path, ref) -> cst.BaseExpression | None:
        """``self._step(x).value`` -> ``_step_out``: what a call moved in front hands back is one
        example's array (the Variable the original's method returned, as its value), which has no
        ``.value``; the original read the Variable's value right there, which this is."""
        if (original_node.attr.value == "value" and type(original_node.value) is cst.Call
                and type(updated_node.value) is cst.Name and updated_node.value.value in self.hoisted):
            return updated_node.value
        return None

    def container_item_read(self, original_node, updated_node, path, ref) -> cst.BaseExpression | None:
        """``self.xs[i].value`` of a bm.VarList / VarDict -> ``state.xs[i]``: the item is an array; so is
        a local holding one (``for t in self.xs: ... t.value``) -> ``t``."""
        if original_node.attr.value != "value":
            return None
        if type(original_node.value) is cst.Name and original_node.value.value in self.ctx.items:
            return updated_node.value
        if type(original_node.value) is cst.Subscript:
            base = self_path(original_node.value.value, self.ctx.self_name)
            item = self.ctx.resolve(base) if base else None
            if isinstance(item, FieldRef) and item.container:
                return updated_node.value
        return None

    def variable_class(self, original_node, updated_node, path, ref) -> cst.BaseExpression | None:
        """``self.V.__class__``, ``self.N.V.__class__``: the class of the Variable object, as ``type(self.V)``
        (``variable_object``), where a step holds its value: asked of the Variable at the same place of the
        batched model (a built-in's: of the object there, ``self.library.resolve("N.V")``); an item of a
        ``bm.VarList`` / ``VarDict`` (``self.xs[0].__class__``), of the item there."""
        if (original_node.attr.value == "__class__" and type(original_node.value) is cst.Subscript
                and type(updated_node.value) is cst.Subscript):
            base = self_path(original_node.value.value, self.ctx.self_name)
            item = self.ctx.resolve(base) if base else None
            if isinstance(item, FieldRef) and item.container and not item.rest:
                return updated_node.with_changes(
                    value=updated_node.value.with_changes(value=original_node.value.value.deep_clone()))
        if not path or "__class__" not in path[1:] or path[path.index("__class__") - 1] == "value":
            return None
        if isinstance(ref, FieldRef):
            if ref.rest[:1] != ("__class__",) or ref.container:
                return None
            # (`self.V.__class__.__name__`: its `self.V.__class__` was kept already)
            return original_node.deep_clone() if original_node.attr.value == "__class__" else updated_node
        if original_node.attr.value != "__class__":
            return None
        held = self.held_object(original_node.value, updated_node.value)
        return None if held is None else updated_node.with_changes(value=held)

    def state_read(self, original_node, updated_node, path, ref) -> cst.BaseExpression | None:
        """``self.V`` / ``self.V.value`` / ``self.child.V`` -> ``state.V`` / ``state.child.V``; a weight -> ``params.W``."""
        if not isinstance(ref, FieldRef):
            return None
        if ref.kind == "state":
            self.state_reads.append((original_node, tuple(ref.children), ref.name))
        return self.ctx.field_expr(ref)

    def property_read(self, original_node, updated_node, path, ref) -> cst.BaseExpression | None:
        """``self.w_eff`` of a ``@property`` that reads state or weights and changes nothing:
        ``self.w_eff_pure(params, state)[1]``, computed from this example's state and the traced weights."""
        ctx = self.ctx
        if not path or len(path) > 2:
            return None
        children, owner = (path[:1], ctx.ir.child_map(ctx.cls).get(path[0])) if len(path) == 2 else ([], ctx.cls)
        method = ctx.ir.all_methods(owner).get(path[-1]) if owner is not None else None
        if method is None or method.kind != "property" or path[-1] not in owner.readers:
            return None
        return self.reader_in_place(cst.Call(updated_node), children, path[-1], None)

    def builtin_read(self, original_node, updated_node, path, ref) -> cst.BaseExpression | None:
        """``self.N.spike`` of a built-in -> ``self.library.read(params, state, "N.spike")``; a child's
        built-in read as a monitor (``self.l1.lif.spike``) -> the child's ``library.read``. An item of a
        built-in (``self.seq[-1]``, indexed on the built-in read whole by ``leave_Subscript``): its
        Variables are already one example's values, ``self.seq[-1].V.value`` -> ``...[-1].V``."""
        if isinstance(ref, LibraryRef) and ref.rest:
            read = self.ctx.library_read(ref)
            if id(original_node) not in self.call_funcs and self.read_before_a_change(original_node):
                # `self.N.V * 2 + self.N(x)`: Python reads V before the call, which moves in front of the
                # statement; so does the read, into a name of its own, in Python's order.
                return self.read_first("_".join((ref.name, *ref.rest)), read)
            return read
        if original_node.attr.value == "value":
            node = updated_node.value
            while type(node) in (cst.Attribute, cst.Subscript):
                node = node.value
            if id(node) in self.item_reads:
                return updated_node.value
        return None

    def mode_read(self, original_node, updated_node, path, ref) -> cst.BaseExpression | None:
        """``self.mode`` -> ``bfy.example_mode(self)``: one example runs in the mode the original has
        (``isinstance(self.mode, bm.TrainingMode)`` takes the original's branch), not the batch's."""
        if path != ["mode"]:
            return None
        return cst.Call(runtime("example_mode"), [cst.Arg(name(self.ctx.self_name))])

    def find_changing_calls(self, node: cst.CSTNode) -> None:
        """The calls in ``node`` that may change a built-in's state, by where they are: a call of a built-in
        (``self.N(x)``, ``self.seq[0](x)``, ``x >> self.N``) other than of a method that only reads
        (``names.BUILTIN_READERS``), and a call of a stateful method that calls one."""
        positions = self.ctx.ir.positions
        for inner in walk(node):
            for child in inner.children:
                self.parents[id(child)] = inner
            span = positions.get(inner)
            if span is not None and self.changes_builtins(inner):
                self.changing_calls.append(((span.start.line, span.start.column), (span.end.line, span.end.column)))

    def changes_builtins(self, node: cst.CSTNode) -> bool:
        if type(node) is cst.BinaryOperation and type(node.operator) is cst.RightShift:
            path = self_path(node.right, self.ctx.self_name)
            return bool(path) and isinstance(self.ctx.resolve(path), LibraryRef)
        if type(node) is not cst.Call:
            return False
        reader = type(node.func) is cst.Attribute and node.func.attr.value in names.BUILTIN_READERS
        path = self_path(node.func, self.ctx.self_name)
        ref = self.ctx.resolve(path) if path else None
        if isinstance(ref, LibraryRef):
            return not (ref.rest and reader)
        item = called_item(node.func)
        if item is not None and self.item_of_builtin(item) is not None:
            return not reader
        if self.handed_builtin(node) is not None:
            return True
        target = self.stateful_target(node.func)
        if target is None:
            return False
        children, method_name, _ = target
        owner = self.child_class(tuple(children)) if children else self.ctx.cls
        if method_name in owner.readers:
            return False
        written = self.written_by(owner, method_name)
        return written is None or "library" in written

    # What takes a Variable object's value when it runs: an operation on it, an index, a call given it.
    CONSUMERS = (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.Subscript, cst.Call, cst.Await)

    def consumed_at(self, read: cst.CSTNode) -> cst.CSTNode | None:
        """Where Python reads the value of ``read``, a built-in's attribute (or a layer's, ``self.seq[0]``):
        a ``.value`` right there; a Variable object where the operation that takes it runs, after all its
        operands (``self.N.V + self.N(x)`` adds the value the call left, as ``Variable.__add__`` reads it
        then); None where it is handed on whole (returned, put in a tuple)."""
        node = read
        while True:
            if type(node) is cst.Attribute and node.attr.value == "value":
                return node
            parent = self.parents.get(id(node))
            if type(parent) is cst.Attribute and parent.value is node:
                node = parent
                continue
            break
        parent = self.parents.get(id(node))
        while parent is not None and not isinstance(parent, self.CONSUMERS):
            parent = self.parents.get(id(parent))
        return parent

    def read_first(self, hint: str, read: cst.BaseExpression, at: int | None = None) -> cst.Name:
        """``read`` in a name of its own, in front of the calls the statement moves out (at ``pre[at]``:
        in front of those a call's arguments moved there too)."""
        held = self.ctx.ns.fresh(hint)
        self.pre.insert(len(self.pre) if at is None else at, assign([held], read))
        return name(held)

    def deferred_code(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` sits in code that runs later than its statement (a lambda, a generator), where
        the state it would read is whatever the method holds then."""
        child = node
        while (node := self.parents.get(id(child))) is not None:
            eager = type(node) is cst.CompFor and node.iter is child and type(
                self.parents.get(id(node))) is cst.GeneratorExp  # (a generator's first iterable runs at once)
            if type(node) in (cst.Lambda, cst.GeneratorExp, cst.FunctionDef):
                return True
            child = self.parents[id(node)] if eager else node
        return False

    def read_before_a_change(self, read: cst.CSTNode, at: cst.CSTNode | None = None) -> bool:
        """Whether Python reads ``read``'s value (where ``consumed_at`` says, or at ``at``) before a call of
        ``changing_calls`` runs (outside its arguments). Where the read cannot move in front with the call
        (inside a lambda, comprehension, conditional expression), BFY215, as for the class's own state."""
        if at is None:
            at = self.consumed_at(read) if self.changing_calls else None
        where = self.ctx.ir.positions.get(at) if at is not None else None
        if where is None or not any((where.end.line, where.end.column) <= start for start, _ in self.changing_calls):
            return False
        if self.blocked:
            self.ctx.report(read, "BFY215", "this reads a built-in's value before a call in the same statement "
                            "changes it (Python reads first), inside a lambda, comprehension, conditional expression "
                            "or and/or, which batchify cannot move in front of the call: read it into a variable in a "
                            "statement of its own first")
            return False
        return True

    def library_ok(self, ref: LibraryRef, node: cst.CSTNode) -> bool:
        if ref.children:
            self.ctx.report(node, "BFY104", f"self.{'.'.join(ref.children)}.{ref.name} is a built-in held by a "
                            "child model; use it inside that child's own methods")
            return False
        return True

    def leave_BinaryOperation(self, original_node: cst.BinaryOperation,
                              updated_node: cst.BinaryOperation) -> cst.BaseExpression:
        return self.builtin_pipe(original_node, updated_node) or updated_node

    def leave_Comparison(self, original_node: cst.Comparison, updated_node: cst.Comparison) -> cst.BaseExpression:
        return self.builtin_identity(original_node, updated_node) or updated_node

    def held_object(self, original: cst.BaseExpression, updated: cst.BaseExpression) -> cst.BaseExpression | None:
        """``self.N.V``, ``self.proj.post``, ``self.seq[0].V``, ``self.proj.refs["post"].V``, or ``V`` of
        ``V = self.N.V``: an object inside a built-in, reached by attributes and items, which ``id()`` and
        ``is`` see in the original, where a step reads one example's value or view of it. It is the object
        at that place, ``self.library.resolve("proj.refs")["post"].V`` (``updated``: ``original`` rewritten,
        whose items' indices are kept)."""
        if type(original) is cst.Attribute and original.attr.value == "value":
            return None  # (`self.N.V.value`: the value, whose path drops the `.value`)
        trail = []  # the items and attributes past the built-in's path, outermost first (rewritten)
        node, new = original, updated
        while not isinstance(ref := self.ctx.resolve(self_path(node, self.ctx.self_name) or ()), LibraryRef):
            if type(node) is cst.Name and id(node) in self.ctx.object_names:  # `V` of `V = self.N.V`, `p.V`
                node = self.ctx.object_names[id(node)]
                new = node.visit(ExprRewriter(self.ctx, hoist=False))
                continue
            if type(node) not in (cst.Attribute, cst.Subscript) or type(new) is not type(node) or (
                    type(node) is cst.Attribute and node.attr.value == "value"):
                return None  # (a call, a name of the method's own; a Variable's value or an attribute of it)
            trail.append(new)
            node, new = node.value, new.value
        if (not ref.rest and not trail) or "value" in ref.rest:
            return None  # the built-in itself (the batch's view: ``bfy.unviewed``), or a Variable's value
        held = cst.Call(attr(name(self.ctx.self_name), *ref.children, "library", "resolve"),
                        [cst.Arg(cst.SimpleString(f'"{ref.dotted}"'))])
        for level in reversed(trail):
            held = level.with_changes(value=held)
        return held

    def unfollowed_identity(self, call: cst.CSTNode, expr: cst.BaseExpression) -> bool:
        """``id(V)``, ``V is W``, ``type(V)`` of a local bound to a layer picked by a name bound again in the
        method (``V = self.seq[i].V``, then ``i = 1``): which object it is where the identity is taken is not
        something the text says: BFY213. (A local bound in several places, ``V = self.N.V if c else
        self.proj.post``, is not refused: it may be an object, whose view ``bfy.unviewed`` sees through.)"""
        root = chain_root(expr)
        if id(root) not in self.ctx.unfollowed_objects:
            return False
        self.ctx.report(call, "BFY213", f"{root.value} is bound to a layer picked by a name bound again in the "
                        f"method, and batchify cannot tell which of the objects it holds where its identity or class "
                        f"is taken: the batched step holds it as one example's value or view; take it of the "
                        f"object's own path there, with the index it means (id(self.seq[0].V))")
        return True

    def builtin_identity(self, original_node: cst.Comparison, updated_node: cst.Comparison) -> cst.Comparison | None:
        """``self.proj.post is self.lif``: whether two names reach the same built-in. The batched model reaches
        a built-in through the batch's view of it and an object inside one through one example's view: two
        views of one object, which ``is`` compares as the objects behind them (``bfy.unviewed``), both sides
        (the other may be a local or an item holding either view, or the object itself)."""
        operands = [original_node.left, *(t.comparator for t in original_node.comparisons)]
        updated = [updated_node.left, *(t.comparator for t in updated_node.comparisons)]
        tested = {j for i, t in enumerate(original_node.comparisons) if type(t.operator) in (cst.Is, cst.IsNot)
                  and not any(type(e) is cst.Name and e.value in CONSTANT_NAMES for e in operands[i:i + 2])
                  for j in (i, i + 1)}  # (`is None` stays)
        if any([self.unfollowed_identity(original_node, operands[j]) for j in sorted(tested)]):
            return None
        held = {j: found for j in sorted(tested) if (found := self.held_object(operands[j], updated[j])) is not None}
        return unviewed_identity(original_node, updated_node, self.builtin_object,
                                 lambda pair: all(builtin_held(self.ctx, e) for e in pair),  # one view each
                                 held, lambda e: imported_or_builtin(self.ctx.ir, e))

    def builtin_object(self, expr: cst.BaseExpression) -> bool:
        """``self.lif``, ``self.seq[0]``, ``self.proj.post``, or a name of the method's own (a local bound to
        ``self.proj.post``, a parameter: ``self.key_of(self.proj.post)``): what the batched model may reach
        through a view of a built-in's object."""
        ctx = self.ctx
        return (builtin_held(ctx, expr) or builtin_inside(ctx, expr)
                or (holds_builtins(ctx.ir) and handed_view(ctx.ir, expr, ctx.self_name)))

    def builtin_pipe(self, original_node: cst.BinaryOperation,
                     updated_node: cst.BinaryOperation) -> cst.BaseExpression | None:
        """``x >> self.layer`` calls the built-in (BrainPy's ``__rrshift__``): a library call."""
        if type(original_node.operator) is not cst.RightShift:
            return None
        path = self_path(original_node.right, self.ctx.self_name)
        ref = self.ctx.resolve(path) if path else None
        if not isinstance(ref, LibraryRef) or not self.library_ok(ref, original_node):
            return None
        return self.library_call(original_node, original_node.right, [cst.Arg(updated_node.left)], ref)

    def library_call(self, original_node: cst.CSTNode, func: cst.BaseExpression, args: list[cst.Arg],
                     ref: LibraryRef) -> cst.BaseExpression:
        """``self.N(x)`` -> ``state, N_out = self.library.call(params, state, self.N, x)``, moved in front
        (a read of a built-in that Python makes before it moves in front with it: ``builtin_read``)."""
        ctx = self.ctx
        return self.carried_call(
            original_node, attr(name(ctx.self_name), "library", "call"),
            [cst.Arg(name(ctx.params)), cst.Arg(name(ctx.state)), cst.Arg(func), *args], f"{ref.name}_out",
            f"this call runs the built-in self.{ref.name}")

    # The call rules, tried in order; the first that gives a node wins (batchify.rules).
    CALL_RULES = ("refuse_unbatchable_random", "control_flow_call", "loop_body_call", "state_factory",
                  "variable_recreated", "random_draw", "builtin_call", "variable_object", "builtin_type", "builtin_id",
                  "builtin_argument_call", "noisy_integrator_call", "group_update_call",
                  "stateful_call")

    def visit_Arg(self, node: cst.Arg) -> bool:
        self.arg_pre_at[id(node)] = len(self.pre)
        return True

    def refuse_keywords_before_star(self, node: cst.Call) -> None:
        """``f(k=self.step(x), *self.more(x))``: Python evaluates ``*args`` before a keyword argument written
        ahead of them, and batchify moves calls (and the reads before them) in front in the order they are
        written: BFY204 where the two orders differ (a call moved in front on one side, a call or a read of
        ``self`` on the other)."""
        args = node.args
        starts = [self.arg_pre_at.get(id(a)) for a in args]
        if None in starts:
            return
        ends = [*starts[1:], len(self.pre)]

        def moved(i: int) -> bool:
            return ends[i] > starts[i]

        def state_read(n: cst.CSTNode) -> bool:  # (not a setting such as `axis=self.axis`)
            path = self_path(n, self.ctx.self_name) if type(n) is cst.Attribute else None
            return bool(path) and isinstance(self.ctx.resolve(path), (FieldRef, LibraryRef))

        def touches(i: int) -> bool:
            return any(type(n) is cst.Call or state_read(n) for n in walk(args[i].value))

        for i, early in enumerate(args):
            if early.keyword is None and early.star != "**":
                continue
            late = [j for j in range(i + 1, len(args)) if args[j].star == "*"]
            if any((moved(i) and touches(j)) or (moved(j) and touches(i)) for j in late):
                self.ctx.report(early, "BFY204", "a keyword argument written before *args: Python evaluates the "
                                "*args first, and batchify runs the calls it moves in front of the statement in the "
                                "order they are written; write the keyword argument after the *args")
                return

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        self.refuse_keywords_before_star(original_node)
        qualified = {q.name for q in self.ctx.ir.qualified.get(original_node.func, ())}
        for rule in self.CALL_RULES:
            out = getattr(self, rule)(original_node, updated_node, qualified)
            if out is not None:
                return out
        return updated_node

    def refuse_unbatchable_random(self, original_node, updated_node, qualified) -> cst.BaseExpression | None:
        """``np.random.normal(...)`` in a step would draw once, when the step is traced: BFY206."""
        if not any(q.startswith(names.UNBATCHABLE_RANDOM_PREFIXES) for q in qualified):
            return None
        self.ctx.report(original_node, "BFY206", f"{sorted(qualified)[0]} in {self.ctx.method.name}() draws once, "
                        "when the step is traced, not at every step; use bm.random instead")
        return updated_node

    def unprintable_field(self, node: cst.FormattedStringExpression, why: str) -> None:
        """``f"{self.V.shape=}"`` prints the field's text: the rewrite changed the expression, so that text
        becomes a literal in front of it (``Transformer.leave_FormattedString``), which cannot hold this one
        as Python prints it: BFY222."""
        self.ctx.report(node, "BFY222", f"a self-documenting f-string field ({{...=}}) {why}: batchify writes its "
                        "text out as a literal in front of the rewritten expression, and cannot write this one as "
                        "Python prints it; write the field on one line, without backslashes, or put the expression "
                        "in a variable first")

    def refuse_global_key(self, node: cst.Attribute) -> None:
        """``bm.random.split_key()``, ``bm.random.DEFAULT``: BrainPy's global key itself, traced once for
        the whole batch, so every example would draw the same numbers: BFY206."""
        qualified = {q.name for q in self.ctx.ir.qualified.get(node, ())} & names.GLOBAL_KEY
        if qualified:
            self.ctx.report(node, "BFY206", f"{sorted(qualified)[0]} in {self.ctx.method.name}() is BrainPy's global "
                            "key itself: traced once, every example of the batch would draw the same numbers; draw "
                            "with bm.random's samplers (bm.random.normal(...)), which batchify gives each example")

    def refuse_stream_use(self, node: cst.Attribute, path: list[str] | None) -> None:
        """``self.rng`` holding BrainPy's global stream (``bm.random.default_rng()``, ``bm.random``) used
        other than by drawing from it in place (``self.rng.normal(...)``, which takes the example's key):
        its key split (``self.rng.split_key()``), the stream under a local name or handed on, or a child's
        stream drawn from here would draw from the global key, traced once for the whole batch: BFY206."""
        if not path or len(path) > 2 or id(node) in self.stream_kept:
            return
        owner = self.ctx.ir.child_map(self.ctx.cls).get(path[0]) if len(path) == 2 else self.ctx.cls
        if owner is None:
            return
        shown, method = "self." + ".".join(path), self.ctx.method.name
        if path[-1] in self.ctx.ir.all_global_samplers(owner):
            self.ctx.report(node, "BFY206", f"{shown} holds a sampler of BrainPy's global random stream, used in "
                            f"{method}() other than by a call in place{' on a child' if len(path) == 2 else ''}: each "
                            f"example gets its own key only in a call written self.{path[-1]}(...) in a method of "
                            "the class that holds it, and through anything else every example would draw the same "
                            "numbers; call it in place")
            return
        if path[-1] not in self.ctx.ir.all_global_streams(owner):
            return
        if len(path) == 2:
            why = (f"{shown} is the child's hold of BrainPy's global random stream, drawn from in {method}() of "
                   f"its parent: each example gets its own key only in a draw written self.{path[1]}.normal(...) "
                   "(any sampler) in a method of the class that holds it; draw there, in a method of "
                   f"self.{path[0]}'s class that returns the numbers")
        else:
            why = (f"{shown} is BrainPy's global random stream, used in {method}() other than by a draw in place: "
                   f"each example gets its own key only in a draw written {shown}.normal(...) (any sampler, "
                   "without a key= of your own), and through anything else every example would draw the same "
                   "numbers; draw from it in place")
        self.ctx.report(node, "BFY206", why)

    def control_flow_call(self, original_node, updated_node, qualified) -> cst.BaseExpression | None:
        """``bm.for_loop`` / ``bm.cond`` / ``bm.while_loop`` / ``bm.ifelse`` whose closures change state."""
        if not qualified & names.CONTROL_FLOW:
            return None
        kind = next(k for k, table in (("loop", names.FOR_LOOPS), ("cond", names.CONDS),
                                       ("while", names.WHILE_LOOPS), ("ifelse", names.IFELSES)) if qualified & table)
        return self.control_flow(original_node, updated_node, kind)

    def loop_body_call(self, original_node, updated_node, qualified) -> cst.BaseExpression | None:
        """A direct call of a closure that carries the state: ``state, y = body(state, x)``."""
        func = original_node.func
        if not (type(func) is cst.Name and func.value in self.ctx.closures):
            return None
        if id(original_node) in self.deferred:
            return updated_node  # the lambda around it carries the state (carried_lambda)
        return self.carried_call(original_node, func, [cst.Arg(name(self.ctx.state)), *updated_node.args],
                                 f"{func.value}_out")

    def state_factory(self, original_node, updated_node, qualified) -> cst.BaseExpression | None:
        """``bp.init.variable_(init, size, mode)`` outside ``__init__``: one example's initial value."""
        return self.initial_value(original_node, updated_node, qualified) if qualified & names.STATE_FACTORIES else None

    def variable_recreated(self, original_node, updated_node, qualified) -> cst.BaseExpression | None:
        """``self.V = bm.Variable(e)`` in ``reset_state``: the new value, ``bm.Variable(e).value``
        (not in a lambda that only makes one: its calls stand for the Variable, ``full(0.0).value``)."""
        source = getattr(self.ctx.ir.qualified, "replaced", {}).get(original_node, original_node)  # (normalised)
        if qualified & (names.STATE_VARIABLES | names.PARAM_VARIABLES) and id(source) not in self.ctx.ir.factory_bodies:
            return attr(updated_node, "value")
        return None

    def random_draw(self, original_node, updated_node, qualified) -> cst.BaseExpression | None:
        """``bm.random.normal(...)`` without ``key=``: a key from this example's stream; so for a draw from
        the global stream held on self (``self.rng.normal(...)``, ``self.rng = bm.random.default_rng()``)."""
        if (any(names.random_sampler(q) for q in qualified) or global_stream_draw(
                original_node.func, self.ctx.self_name, self.ctx.ir.all_global_streams(self.ctx.cls),
                self.ctx.ir.all_global_samplers(self.ctx.cls))) and not any(
                a.keyword is not None and a.keyword.value == "key" for a in original_node.args):
            return self.keyed_draw(original_node, updated_node)
        return None

    def builtin_call(self, original_node, updated_node, qualified) -> cst.BaseExpression | None:
        """``self.N(x)`` / ``self.N.m(x)`` / ``self.seq[0](x)`` of a built-in:
        ``self.library.call(params, state, self.N, x)``."""
        path = self_path(original_node.func, self.ctx.self_name)
        ref = self.ctx.resolve(path) if path else None
        item = called_item(original_node.func)
        if ref is None and item is not None and (ref := self.item_of_builtin(item)) is not None:
            if not self.library_ok(ref, original_node):
                return updated_node
            return self.library_call(original_node, updated_node.func, list(updated_node.args), ref)
        if not isinstance(ref, LibraryRef):
            return None
        # A method of a Variable's value, or one that only reads of the Variable, is a read: of a child's
        # built-in too (`self.l1.lif.V.mean()`, a monitor read as `self.l1.lif.V.value` is)
        array_read = len(ref.rest) >= 2 and not self.deferred_code(original_node) and (
            ref.rest[-1] in names.CONTAINER_READERS or (ref.rest[-1] in names.ARRAY_READERS and (
                self.blocked or ref.children)))
        if not ("value" in ref.rest or array_read) and not self.library_ok(ref, original_node):
            return updated_node
        if "value" in ref.rest:  # `self.N.spike.value.astype(t)`: a method of the example's value
            at = ref.rest.index("value")
            read = LibraryRef(ref.children, ref.name, ref.rest[:at])
            value = self.ctx.library_read(read)
            dot_value = original_node.func
            while type(dot_value) is cst.Attribute and dot_value.attr.value != "value":
                dot_value = dot_value.value
            if self.read_before_a_change(dot_value):  # `self.N.V.value.max() + self.N(x)`: as builtin_read
                # (in front of what its arguments moved there: `.value` is read before them)
                value = self.read_first("_".join((read.name, *read.rest)), value, self.pre_at.get(id(original_node)))
            return updated_node.with_changes(func=attr(value, *ref.rest[at + 1:]))
        if array_read:
            # `self.N.V.mean()` where no call can move out (a conditional expression, a lambda), or of a
            # child's built-in: it changes nothing, so it is the same method of the example's value, read
            # there (in front of a call in the statement that Python runs after it; in a conditional
            # expression, BFY215)
            value = self.ctx.library_read(LibraryRef(ref.children, ref.name, ref.rest[:-1]))
            if self.read_before_a_change(original_node, at=original_node):
                value = self.read_first("_".join((ref.name, *ref.rest[:-1])), value)
            return updated_node.with_changes(func=attr(value, ref.rest[-1]))
        return self.library_call(original_node, original_node.func, list(updated_node.args), ref)

    def handed_builtin(self, node: cst.Call) -> LibraryRef | None:
        """The built-in handed whole to a function that is not the model's (``rate_of(self.lif)``,
        ``readout(self.seq[-1], x)``, ``self.fn(self.lif)`` of ``self.fn = rate_of``): the function reads,
        and may step, its Variables."""
        if any(q.name.startswith("builtins.") for q in self.ctx.ir.qualified.get(node.func, ())):
            return None  # (len(), isinstance(), ...: they do not run the built-in; getattr() is refused)
        for arg in node.args:
            value = arg.value.value if type(arg.value) is cst.Subscript else arg.value
            path = self_path(value, self.ctx.self_name)
            ref = self.ctx.resolve(path) if path else None
            if isinstance(ref, LibraryRef) and not ref.rest:
                return ref
        return None

    def variable_object(self, original_node, updated_node, qualified) -> cst.BaseExpression | None:
        """``isinstance(self.V, bm.Variable)``, ``type(self.V)``, ``isinstance(self.xs[0], bm.Variable)``,
        ``isinstance(self.N.V, bm.Variable)``: what the Variable object is, where a step holds its value (an
        array). The model's own Variable (or an item of its ``bm.VarList``) is asked at the same place of the
        batched model, a Variable of the same kind holding the batch; a built-in's, of the object at that
        place. ``hasattr()`` of one for what only a Variable has (``"value"``, ``"batch_axis"``:
        ``names.VARIABLE_ONLY_ATTRIBUTES``) would read it whole outside the step's state: BFY213; for what its
        value has too (``"shape"``) it is asked of the value."""
        args = original_node.args
        if not qualified & OBJECT_QUESTIONS or not args or args[0].keyword or args[0].star:
            return None
        if "builtins.type" in qualified and len(args) != 1:
            return None
        first, new = args[0].value, updated_node.args[0].value
        item = type(first) is cst.Subscript and type(new) is cst.Subscript
        path = self_path(first.value if item else first, self.ctx.self_name)
        ref = self.ctx.resolve(path) if path else None
        if isinstance(ref, FieldRef):
            if ref.rest or path[-1] == "value" or (item and ref.container is None):
                return None  # (a Variable's value, an element of it, or an attribute of it: what the step holds)
            held = new.with_changes(value=first.value.deep_clone()) if item else first.deep_clone()
        elif "builtins.type" in qualified or type(first) is not cst.Attribute:
            return None  # (a built-in's places: ``builtin_type``; an element of its Variable is a value)
        else:
            held = self.held_object(first, new)
            if held is None:
                return None
        if "builtins.hasattr" in qualified:
            asked = args[1].value if len(args) > 1 else None
            if not (type(asked) is cst.SimpleString and asked.evaluated_value in names.VARIABLE_ONLY_ATTRIBUTES):
                return None  # (`hasattr(self.V, "shape")`: the value has it too)
            shown = self.ctx.ir.module.code_for_node(first)
            self.ctx.report(original_node, "BFY213", f"hasattr({shown}, {asked.value}) asks the Variable object, which "
                            "the batched step holds as its value (an array, which has no such attribute), and "
                            "which it cannot read there as it is; ask it in __init__ and keep the answer on the model")
            return updated_node
        return updated_node.with_changes(args=[updated_node.args[0].with_changes(value=held),
                                               *updated_node.args[1:]])

    def builtin_type(self, original_node, updated_node, qualified) -> cst.BaseExpression | None:
        """``type(self.N)``, ``type(self.seq[0])``, ``type(self.proj.refs["syn"])``: the class of a built-in or
        of an object inside one. The batched model reaches a built-in through the batch's view of it
        (``BatchView``), and an object inside one through one example's view (``ExampleView``), which
        ``type()`` would give; a view's ``__class__`` is the object's own, as ``isinstance`` sees it."""
        args = original_node.args
        if "builtins.type" not in qualified or len(args) != 1 or args[0].keyword or args[0].star:
            return None
        if self.unfollowed_identity(original_node, args[0].value):
            return updated_node
        held = self.held_object(args[0].value, updated_node.args[0].value)
        if held is not None:  # `type(self.N.V)`, `type(V)` of `V = self.N.V`: a Variable's class, not its value's
            return updated_node.with_changes(args=[updated_node.args[0].with_changes(value=held)])
        inside = args[0].value
        while type(inside) is cst.Subscript:
            inside = inside.value
        ref = builtin_whole(self.ctx, args[0].value)
        if not ((ref is not None and not ref.rest) or builtin_part(self.ctx, inside)):
            # (`type(m)` of a name of the method's own, `type(first(ms))`: the class behind a view)
            return unviewed_arg(updated_node) if self.builtin_object(args[0].value) else None
        return cst.Attribute(value=updated_node.args[0].value, attr=cst.Name("__class__"))

    def builtin_id(self, original_node, updated_node, qualified) -> cst.BaseExpression | None:
        """``id(self.N)``, ``id(self.proj.post)``: the identity of a built-in or of an object inside one, which
        the batched model reaches through a view of it: ``id(bfy.unviewed(...))``, the object's own, as the
        constructor (which holds the objects themselves) sees it."""
        args = original_node.args
        if "builtins.id" not in qualified or len(args) != 1 or args[0].keyword or args[0].star:
            return None
        path = self_path(args[0].value, self.ctx.self_name)
        ref = self.ctx.resolve(path) if path else None
        if isinstance(ref, FieldRef) and not ref.rest and path[-1] != "value":  # `id(self.v)`: the step holds its value
            shown = self.ctx.ir.module.code_for_node(args[0].value)
            self.ctx.report(original_node, "BFY213", f"id({shown}) is the identity of a Variable, which the batched "
                            "step holds as its value (an array made anew at each step), not as the Variable; "
                            "compare what the Variable holds, or record what you need in __init__")
            return updated_node
        if self.unfollowed_identity(original_node, args[0].value):
            return updated_node
        held = self.held_object(args[0].value, updated_node.args[0].value)
        if held is not None:  # `id(self.N.V)`, `id(self.seq[0].V)`, `id(V)` of `V = self.N.V`
            return updated_node.with_changes(args=[updated_node.args[0].with_changes(value=held)])
        if not self.builtin_object(args[0].value):
            return None
        return unviewed_arg(updated_node)

    def refuse_attribute_by_name(self, node: cst.Call, qualified: set[str]) -> bool:
        """``getattr(self.N, "V")``, ``getattr(self.N.V, "value")``: a built-in's attribute reached by a name
        the rewrite cannot follow (it binds a built-in's Variables by their attribute path): BFY213."""
        if not qualified & {"builtins.getattr", "builtins.setattr", "builtins.vars"} or not node.args:
            return False
        value = node.args[0].value
        path = self_path(value, self.ctx.self_name)
        if not (isinstance(self.ctx.resolve(path) if path else None, LibraryRef) or builtin_part(self.ctx, value)):
            return False
        whole = self.ctx.ir.module.code_for_node(value)
        named = node.args[1].value if len(node.args) > 1 else None
        attribute = named.evaluated_value if type(named) is cst.SimpleString else "NAME"
        self.ctx.report(node, "BFY213", f"{self.ctx.ir.module.code_for_node(node.func)}() reaches the built-in's "
                        f"{whole} by a name batchify cannot follow (its Variables are bound by their attribute "
                        f"path); write the attribute itself ({whole}.{attribute})")
        return True

    def model_method(self, func: cst.BaseExpression) -> bool:
        """``self.drive``, ``self.child.step``, ``super().update``: a method of the model or of a child."""
        if is_super_call(func):
            return True
        path = self_path(func, self.ctx.self_name)
        if not path:
            return False
        return (len(path) == 1 and path[0] in self.ctx.ir.all_methods(self.ctx.cls)) or isinstance(
            self.ctx.resolve(path), tuple)

    def builtin_argument_call(self, original_node, updated_node, qualified) -> cst.BaseExpression | None:
        """``rate_of(self.lif)``, a function of the file or another module given a built-in:
        ``state, rate_of_out = self.library.call(params, state, rate_of, self.lif)``, run with one
        example's values bound into the built-in's Variables, as a call of the built-in is."""
        if self.refuse_attribute_by_name(original_node, qualified):
            return updated_node
        if qualified & {"functools.partial", "functools.partialmethod"}:  # (it keeps the built-in to call later)
            how = f"is bound by {self.ctx.ir.module.code_for_node(original_node.func)}()"
            if any([builtin_object(self.ctx, arg.value, how) for arg in original_node.args]):
                return updated_node
        ref = self.handed_builtin(original_node)
        if ref is not None and self.model_method(original_node.func):
            shown = self.ctx.ir.module.code_for_node(original_node.func)
            self.ctx.report(original_node, "BFY213", f"the built-in self.{'.'.join((*ref.children, ref.name))} is "
                            f"handed to {shown}(), a method of the model: batchify follows a built-in only through "
                            "self, where each example's Variables are bound, not under a parameter's name; read "
                            f"or call self.{'.'.join((*ref.children, ref.name))} inside the method instead")
            return updated_node
        if ref is None or not self.library_ok(ref, original_node):
            return None
        func = updated_node.func
        hint = func.value if type(func) is cst.Name else func.attr.value if type(func) is cst.Attribute else ref.name
        ctx = self.ctx
        return self.carried_call(
            original_node, attr(name(ctx.self_name), "library", "call"),
            [cst.Arg(name(ctx.params)), cst.Arg(name(ctx.state)), cst.Arg(func), *updated_node.args], f"{hint}_out",
            f"this call hands it the built-in self.{ref.name}")

    def group_update_call(self, original_node, updated_node, qualified) -> cst.BaseExpression | None:
        """``super().update()`` in a BrainPy group of built-ins whose own update runs the group's (``class
        Net(bp.DynSysGroup)``, ``self.N.V.value += x; super().update()``): ``state, update_out =
        self.library.call(params, state, super().update)``, BrainPy's group update with one example's values
        bound into the built-ins, as for a group with no update of its own (``classes.GROUP_UPDATE``)."""
        func, ctx = original_node.func, self.ctx
        if not (is_super_call(func) and func.attr.value == "update") or self.stateful_target(func) is not None:
            return None
        chain = ctx.ir.chain(ctx.cls)
        if not ctx.ir.all_libraries(ctx.cls) or chain[0].updateless:
            return None
        children = ctx.ir.all_children(ctx.cls)
        if children:
            ctx.report(original_node, "BFY220", "super().update() runs BrainPy's group update over every child, "
                       f"and this group holds models of this file (self.{children[0].name}) beside BrainPy "
                       "built-ins: batchify steps its own models by their pure methods and the built-ins through "
                       "one example's library call, not both in one BrainPy update; call each child in update "
                       f"instead (self.{children[0].name}(...))")
            return updated_node
        if chain[0] is not ctx.cls:  # (a base of the file generated `update` itself: BrainPy's is past it)
            func = cst.parse_expression(f"super({chain[0].batched_name}, {ctx.self_name}).update")
        else:
            func = updated_node.func
        return self.carried_call(original_node, attr(name(ctx.self_name), "library", "call"),
                                 [cst.Arg(name(ctx.params)), cst.Arg(name(ctx.state)), cst.Arg(func),
                                  *updated_node.args], "update_out", "this call runs the group's built-ins")

    def noisy_integrator_call(self, original_node, updated_node, qualified) -> cst.BaseExpression | None:
        """``self.integral(V, t)`` of a ``bp.sdeint`` integrator: its noise from this example's stream."""
        path = self_path(original_node.func, self.ctx.self_name)
        noisy = {n for c in self.ctx.ir.chain(self.ctx.cls) for n in c.noisy_integrators}
        if path and len(path) == 1 and path[0] in noisy:
            return self.rng_call(original_node, original_node.func, list(updated_node.args), "stochastic integrator")
        return None

    def stateful_call(self, original_node, updated_node, qualified) -> cst.BaseExpression | None:
        """A call of a stateful method, own (``self.m(x)``, ``super().m(x)``) or a child's (``self.c(x)``)."""
        ctx = self.ctx
        target = self.stateful_target(original_node.func)
        if target is None:
            return None
        if id(original_node) in self.deferred:
            return updated_node  # the lambda around it carries the state (carried_lambda)
        children, method_name, via_super = target
        owner_cls = self.child_class(children) if children else ctx.cls
        if self.blocked and method_name not in owner_cls.readers:
            ctx.report(original_node, "BFY204", "this call changes state, but it sits inside a lambda, "
                       "comprehension, conditional expression, and/or, while test or elif test; "
                       "assign its result to a variable in a statement of its own first")
            return updated_node
        if self.blocked:
            return self.reader_in_place(updated_node, children, method_name, via_super)
        if method_name not in owner_cls.readers:
            written = self.written_by(owner_cls, method_name)
            self.read_before_call(original_node, tuple(children), written)
            self.writers.append((original_node, tuple(children), written))
        return (self.child_call if children else self.own_call)(updated_node, children, method_name, via_super)

    def written_by(self, cls: ModelClass, method: str) -> frozenset[str] | None:
        """The fields of ``cls`` a call of ``method`` may write, through the methods it calls (each name
        as every class of the chain defines it, for ``super()``); None where it calls a child or a
        built-in, which may change anything under them."""
        methods = [c.methods for c in self.ctx.ir.chain(cls)]
        libraries = set(self.ctx.ir.all_libraries(cls))
        written, seen, todo = set(), set(), [method]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for found in (m[name] for m in methods if name in m):
                if found.child_calls:
                    return None
                if found.reads & libraries:  # built-in code may change the built-ins' state, and the own
                    # Variables handed to them (`bm.LengthDelay(self.x)`), nothing else of this class
                    written |= {"library", *(f for c in self.ctx.ir.chain(cls) for f in c.library_fields)}
                written |= found.writes
                todo.extend(found.self_calls)
        return frozenset(written)

    def read_before_call(self, call_node: cst.Call, children: tuple[str, ...],
                         written: frozenset[str] | None = None) -> None:
        """``self.V + self.step(x)``: Python reads V before ``step`` changes it, but the call moves in
        front of the statement, so the read would see the new V: BFY215 (a read inside the call's
        own arguments moves with it and is fine; so is a read of what the call never writes, such as
        ``self.V + self.noise()`` where ``noise`` only draws). ``written``: what the call may write."""
        positions = self.ctx.ir.positions
        span = positions.get(call_node)
        for read, under, field_name in self.state_reads:
            where = positions.get(read)
            if span is None or where is None or under[:len(children)] != children:
                continue
            if written is not None and (under[len(children):] or field_name not in written):
                continue  # the call changes no field this reads (it draws, or writes others)
            if (span.start.line, span.start.column) <= (where.start.line, where.start.column) and \
                    (where.end.line, where.end.column) <= (span.end.line, span.end.column):
                continue  # an argument of the call
            self.ctx.report(read, "BFY215", "this reads state before a call in the same statement changes it "
                            "(Python reads first); batchify moves the call in front of the statement, so the read "
                            "would see the new value: read it into a variable in a statement of its own first")
            return

    def reader_in_place(self, updated_node, children, method_name, via_super) -> cst.BaseExpression:
        """A method that changes nothing, where a call cannot be moved (a lambda): ``self.m_pure(params, state, x)[1]``."""
        ctx = self.ctx
        params_in, state_in = attr(name(ctx.params), *children), attr(name(ctx.state), *children)
        owner = via_super if via_super is not None else attr(name(ctx.self_name), *children)
        pure = call(attr(owner, pure_name(method_name)), [cst.Arg(params_in), cst.Arg(state_in), *updated_node.args])
        return cst.Subscript(pure, [cst.SubscriptElement(cst.Index(cst.Integer("1")))])

    def shared_first(self, cls: ModelClass, method_name: str, args: list[cst.Arg]) -> list[cst.Arg]:
        """``self.c(x)`` of an ``update(self, tdi, x)``: BrainPy hands such an update ``bp.share``'s
        arguments first where the call gives none (``DynamicalSystem._compatible_update``: by the
        parameter's name ``tdi``/``sh``/``sha`` unless a shared dict comes first, else when the call does
        not bind without them); the pure call passes them too."""
        method = self.ctx.ir.all_methods(cls).get(method_name)
        if method_name != "update" or method is None or method.kind != "method" or any(a.star for a in args):
            return args
        params = method.node.params
        first = [*params.posonly_params, *params.params][1:2]
        if not first:
            return args
        keywords = {a.keyword.value for a in args if a.keyword is not None}
        positional = len(args) - len(keywords)
        given_dict = positional and shared_dict_expression(args[0].value)
        if first[0].name.value in names.SHARED_DICT_PARAMS:
            missing = not given_dict and first[0].name.value not in keywords
        else:
            missing = (not given_dict and not binds(params, positional, keywords)
                       and binds(params, positional + 1, keywords))
        if not missing:
            return args
        shargs = cst.Call(attr(name("bp"), "share", "get_shargs"))
        return [cst.Arg(shargs), *args]

    def own_call(self, updated_node, children, method_name, via_super) -> cst.BaseExpression:
        """``y = self.m(x)`` -> ``state, y = self.m_pure(params, state, x)``, moved in front of the statement."""
        ctx = self.ctx
        tmp = ctx.ns.fresh(f"{pure_name(method_name)[:-len('_pure')]}_out")  # (`__call__`: call_out)
        args = self.shared_first(ctx.cls if via_super is None else ctx.ir.classes[ctx.cls.model_base or ctx.cls.name],
                                 method_name, list(updated_node.args))

        def build(out: str) -> list[cst.SimpleStatementLine]:
            owner = via_super if via_super is not None else name(ctx.self_name)
            value = call(attr(owner, pure_name(method_name)), [cst.Arg(name(ctx.params)), cst.Arg(name(ctx.state)), *args])
            return [assign([ctx.state, out], value)]

        self.hoisted[tmp] = build
        self.pre.extend(build(tmp))
        return name(tmp)

    def child_call(self, updated_node, children, method_name, via_super) -> cst.BaseExpression:
        """``self.c(x)`` -> ``c_state, c_out = self.c.update_pure(params.c, state.c, x)`` then
        ``state = state._replace(c=c_state)``; a child drawing random numbers takes the example's key."""
        ctx = self.ctx
        random_child = self.child_class(children).random
        tmp = ctx.ns.fresh(f"{children[-1]}_out")
        args = self.shared_first(self.child_class(children), method_name, list(updated_node.args))
        child_state = ctx.ns.fresh(f"{children[-1]}_state")

        def build(out: str) -> list[cst.SimpleStatementLine]:
            child_in: cst.BaseExpression = attr(name(ctx.state), *children)
            if random_child:  # the child draws from this example's stream and hands it back
                child_in = cst.Call(attr(child_in, "_replace"), [keyword_arg("rng_key", attr(name(ctx.state), "rng_key"))])
            value = call(attr(name(ctx.self_name), *children, pure_name(method_name)),
                         [cst.Arg(attr(name(ctx.params), *children)), cst.Arg(child_in), *args])
            lines = [assign([child_state, out], value)]
            key_back = {"rng_key": attr(name(child_state), "rng_key")} if random_child else {}
            if len(children) == 1:
                lines.append(ctx.replace_state((), {children[0]: name(child_state), **key_back}))
            else:
                lines.append(ctx.replace_state(children[:-1], {children[-1]: name(child_state)}))
                if key_back:
                    lines.append(ctx.replace_state((), key_back))
            return lines

        self.hoisted[tmp] = build
        self.pre.extend(build(tmp))
        return name(tmp)

    def initial_value(self, original_node: cst.Call, updated_node: cst.Call, qualified) -> cst.BaseExpression:
        """``bp.init.variable_(init, sizes, batch_or_mode)`` -> ``bfy.initial_value(init, sizes,
        batch_or_mode)``: the value of the Variable the original creates, a batch axis its batch
        size or mode adds included (vmap adds the batch's own in front)."""
        args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in updated_node.args]
        if names.INIT_VARIABLE in qualified:
            args = self.init_variable_arguments(args, original_node)
        elif not qualified & {q for q in names.STATE_FACTORIES if q.endswith("_")}:
            # ``bp.init.variable(init, batch_or_mode, sizes)``: its positional order, as keywords
            keywords = ("init", "batch_or_mode", "sizes", "batch_axis")
            args = [a.with_changes(keyword=name(keywords[i]), equal=cst.AssignEqual(
                        cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
                    if a.keyword is None and not a.star and 0 < i < len(keywords) else a
                    for i, a in enumerate(args)]
        if deterministic_initializer(original_node, lambda n: {q.name for q in self.ctx.ir.qualified.get(n, ())}):
            return cst.Call(runtime("initial_value"), args)
        # A random initializer (bp.init.Normal(), bm.random.rand) draws from this example's stream.
        return self.rng_call(original_node, runtime("initial_value"), args, "initial value")

    def init_variable_arguments(self, args: list[cst.Arg], original_node: cst.Call) -> list[cst.Arg]:
        """``self.init_variable(init, batch_or_mode, shape=None, sharding=None)`` as ``initial_value``'s
        ``(init, sizes, batch_or_mode, axis_names=...)``: the shape defaults to ``self.varshape``, as in BrainPy."""
        def keyword(arg: cst.Arg, word: str) -> cst.Arg:
            return arg.with_changes(keyword=name(word), equal=cst.AssignEqual(
                cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))

        if any(a.star for a in args):  # `self.init_variable(*spec)`: which argument is which is not known
            self.ctx.report(original_node, "BFY205", "self.init_variable(...) with unpacked arguments: give its "
                            "arguments one by one (init, batch_or_mode, shape=...)")
            return args
        renamed = {"var_data": "init", "batch_or_mode": "batch_or_mode", "shape": "sizes", "sharding": "axis_names"}
        positional = ("init", "batch_or_mode", "sizes", "axis_names")
        out = [keyword(a, positional[i]) if a.keyword is None and i > 0 else
               keyword(a, renamed.get(a.keyword.value, a.keyword.value)) if a.keyword is not None else a
               for i, a in enumerate(args)]
        if not any(a.keyword is not None and a.keyword.value == "sizes" for a in out):
            out.insert(1, keyword(cst.Arg(attr(name(self.ctx.self_name), "varshape")), "sizes"))
        return out

    def carried_body(self, node: cst.BaseExpression, updated: cst.BaseExpression | None = None) -> cst.BaseExpression | None:
        """A loop or branch body that changes state, as ``f(state, *x) -> (state, y)``; None if it
        changes none."""
        ctx = self.ctx
        if type(node) is cst.Name and node.value in ctx.closures:
            return node
        if type(node) is cst.Call and "functools.partial" in {q.name for q in ctx.ir.qualified.get(node.func, ())}:
            return self.carried_partial(node, updated if type(updated) is cst.Call else node)
        if type(node) is cst.Lambda and id(node.body) in self.deferred:
            return self.carried_lambda(node, updated if type(updated) is cst.Lambda else node)
        path = self_path(node, ctx.self_name)
        if path and len(path) == 1 and path[0] in ctx.cls.stateful:  # `self.step`, a stateful method
            args = ctx.ns.fresh("args")
            return cst.Lambda(cst.Parameters(params=[cst.Param(name(ctx.state))],
                                             star_arg=cst.Param(name(args), star="*")), call(
                attr(name(ctx.self_name), pure_name(path[0])),
                [cst.Arg(name(ctx.params)), cst.Arg(name(ctx.state)), cst.Arg(name(args), star="*")]))
        return None

    def carried_lambda(self, node: cst.Lambda, updated: cst.Lambda) -> cst.BaseExpression:
        """``lambda i: self.step(i, x)`` as a body: ``lambda state, i: self.step_pure(params, state, i, x)``."""
        ctx = self.ctx
        func, pure = self.body_target(node.body.func)
        head = [cst.Arg(name(ctx.params)), cst.Arg(name(ctx.state))] if pure else [cst.Arg(name(ctx.state))]
        args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in updated.body.args]
        params = updated.params.with_changes(params=[cst.Param(name(ctx.state)), *updated.params.params])
        return updated.with_changes(params=params, body=call(func, [*head, *args]))

    def carried_partial(self, node: cst.Call, updated: cst.Call) -> cst.BaseExpression | None:
        """``functools.partial(self.step, x=x)`` (or of a closure) as a body: ``lambda state, *args:
        self.step_pure(params, state, *args, x=x)``, the bound arguments read as any argument is."""
        ctx = self.ctx
        if not node.args or node.args[0].keyword is not None or node.args[0].star:
            return None
        target = node.args[0].value
        path = self_path(target, ctx.self_name)
        if type(target) is cst.Name and target.value in ctx.closures:
            func, head = target, [cst.Arg(name(ctx.state))]
        elif path and len(path) == 1 and path[0] in ctx.cls.stateful:
            func = attr(name(ctx.self_name), pure_name(path[0]))
            head = [cst.Arg(name(ctx.params)), cst.Arg(name(ctx.state))]
        else:
            return None
        bound = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in updated.args[1:]]  # reads rewritten
        positional = [a for a in bound if a.keyword is None]
        keywords = [a for a in bound if a.keyword is not None]
        args = ctx.ns.fresh("args")
        return cst.Lambda(cst.Parameters(params=[cst.Param(name(ctx.state))], star_arg=cst.Param(name(args), star="*")),
                          call(func, [*head, *positional, cst.Arg(name(args), star="*"), *keywords]))

    def control_flow(self, original_node: cst.Call, updated_node: cst.Call, kind: str) -> cst.BaseExpression | None:
        """BrainPy control flow whose closures change state, in carry-passing form:
        ``bm.for_loop(body, xs)`` -> ``state, ys = bfy.for_loop(body, state, xs)``,
        ``bm.cond(p, f, g, x)`` -> ``state, y = bfy.cond(p, f, g, state, x)``,
        ``bm.while_loop(body, cond, x)`` -> ``state, x = bfy.while_loop(body, cond, state, x)``,
        ``bm.ifelse(conds, [f, g, h], x)`` -> ``state, y = bfy.ifelse(conds, [f, g, h], state, x)``."""
        ctx = self.ctx
        signature = {"loop": ("body_fun", "operands"), "cond": ("pred", "true_fun", "false_fun", "operands"),
                     "while": ("body_fun", "cond_fun", "operands"),
                     "ifelse": ("conditions", "branches", "operands")}[kind]

        def by_name(call_node: cst.Call) -> dict[str, cst.Arg]:
            return {(a.keyword.value if a.keyword is not None else signature[i] if i < len(signature) else f"_{i}"): a
                    for i, a in enumerate(call_node.args)}

        given, original_args = by_name(updated_node), by_name(original_node)
        if kind == "ifelse":
            listed = original_args.get("branches")
            if listed is None or type(listed.value) not in (cst.List, cst.Tuple):
                return None
            bodies = [(el.value, new.value) for el, new in zip(listed.value.elements, given["branches"].value.elements)]
        else:
            names_ = {"loop": ["body_fun"], "cond": ["true_fun", "false_fun"], "while": ["body_fun", "cond_fun"]}[kind]
            bodies = [(original_args[b].value, given[b].value) for b in names_ if b in original_args]
        carried = [self.carried_body(old, new) for old, new in bodies]
        for old, _ in bodies:  # `bm.for_loop(self.cell.step_run, xs)`: a child's method, not carried
            target = self.stateful_target(old) if type(old) is cst.Attribute else None
            if target is not None and target[0]:
                shown = ".".join([ctx.self_name, *self_path(old, ctx.self_name)])
                ctx.report(old, "BFY204", f"{shown}, a stateful method of a child model, is handed to bm control "
                           "flow: batchify carries the state through the bodies of this class's own methods only; "
                           f"wrap it in one (def {target[1]}_of_child(self, *args): return {shown}(*args)) and hand "
                           f"self.{target[1]}_of_child")
                return None
        if not any(carried):
            return None
        if self.blocked:
            ctx.report(original_node, "BFY204", "this loop or branch changes state, but it sits inside a lambda, "
                       "comprehension, conditional expression, and/or, while test or elif test; assign its result "
                       "in a statement of its own first")
            return None
        kept = {"reverse", "unroll"} if kind == "loop" else set()
        unknown = set(given) - set(signature) - kept - {"jit", "progress_bar", "remat", "unroll_kwargs"}
        if unknown or ("operands" not in given and kind in ("loop", "while")):
            ctx.report(original_node, "BFY204", f"bm control flow with these arguments ({', '.join(sorted(given))}) "
                       "cannot carry the state; pass the bodies and the operands")
            return None
        functions = [c or cst.Call(runtime("stateless"), [cst.Arg(new)]) for c, (_, new) in zip(carried, bodies)]
        operands = given["operands"].value if "operands" in given else cst.Tuple([])
        state = cst.Arg(name(ctx.state))
        if kind == "loop":
            args = [cst.Arg(functions[0]), state, cst.Arg(operands),
                    *[keyword_arg(k, given[k].value) for k in ("reverse", "unroll") if k in given]]
            return self.carried_call(original_node, runtime("for_loop"), args, "loop_out")
        if kind == "cond":
            args = [cst.Arg(given["pred"].value), *map(cst.Arg, functions), state, cst.Arg(operands)]
            return self.carried_call(original_node, runtime("cond"), args, "branch_out")
        if kind == "while":
            args = [*map(cst.Arg, functions), state, cst.Arg(operands)]
            return self.carried_call(original_node, runtime("while_loop"), args, "loop_out")
        branches = cst.List([cst.Element(f) for f in functions])
        args = [cst.Arg(given["conditions"].value), cst.Arg(branches), state, cst.Arg(operands)]
        return self.carried_call(original_node, runtime("ifelse"), args, "branch_out")

    def carried_call(self, original_node: cst.CSTNode, func: cst.BaseExpression, args: list[cst.Arg], out: str,
                     what: str = "this call changes state") -> cst.BaseExpression:
        """``state, out = func(*args)`` (the state among the arguments), moved in front of the statement;
        refused (BFY204) where the call might not run, or run many times."""
        ctx = self.ctx
        if self.blocked:
            ctx.report(original_node, "BFY204", f"{what}, but it sits inside a lambda, comprehension, conditional "
                       "expression, and/or, while test or elif test; assign its result to a variable in a "
                       "statement of its own first")
            return original_node
        tmp = ctx.ns.fresh(out)

        def build(target: str) -> list[cst.SimpleStatementLine]:
            return [assign([ctx.state, target], call(func, args))]

        self.hoisted[tmp] = build
        self.pre.extend(build(tmp))
        return name(tmp)

    def rng_call(self, original_node: cst.Call, func: cst.BaseExpression, args: list[cst.Arg],
                 what: str) -> cst.BaseExpression:
        """``f(x)`` that draws from BrainPy's global stream -> ``state, drawn = bfy.with_rng(state, f, x)``,
        moved in front: it draws from this example's key, advanced exactly as the global one."""
        return self.carried_call(original_node, runtime("with_rng"),
                                 [cst.Arg(name(self.ctx.state)), cst.Arg(func), *args], "drawn",
                                 f"this {what} draws random numbers")

    def keyed_draw(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        """``bm.random.normal(...)`` -> ``bm.random.normal(..., key=key)`` with ``state, key = bfy.next_key(state)``
        in front: the draw comes from this example's stream, advanced as BrainPy advances its global one."""
        ctx = self.ctx
        if self.blocked:
            ctx.report(original_node, "BFY204", "this random draw advances the random state, but it sits inside a "
                       "lambda, comprehension, conditional expression, and/or, while test or elif test; "
                       "draw into a variable in a statement of its own first")
            return updated_node
        key = ctx.ns.fresh("key")
        self.pre.append(assign([ctx.state, key], cst.Call(runtime("next_key"), [cst.Arg(name(ctx.state))])))
        args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in updated_node.args]
        args.append(cst.Arg(name(key), keyword=name("key"),
                            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))))
        return updated_node.with_changes(args=args)

    def child_class(self, children: tuple[str, ...]) -> ModelClass:
        cls = self.ctx.cls
        for child in children:
            cls = self.ctx.ir.child_map(cls)[child]
        return cls

    def stateful_target(self, func: cst.BaseExpression) -> tuple[tuple[str, ...], str, cst.Call | None] | None:
        """``(children, method, super_call)`` of a call of a stateful method, else None; ``super_call`` is
        the ``super(...)`` a call through it names, kept with its arguments (``super(Mid, self).update``
        skips Mid's own update: a bare ``super()`` would run it)."""
        ctx = self.ctx
        if is_super_call(func):
            named = func.value.args[0].value if func.value.args else None
            start = named.value if type(named) is cst.Name and named.value in ctx.ir.classes else ctx.cls.name
            base = ctx.ir.classes[start].model_base
            if base and func.attr.value in ctx.ir.classes[base].stateful:
                return (), func.attr.value, func.value
            return None
        path = self_path(func, ctx.self_name)
        if path is None:
            return None
        if len(path) == 1 and path[0] in ctx.cls.stateful:
            return (), path[0], None
        ref = ctx.resolve(path)
        if isinstance(ref, tuple):
            children, child_cls, rest = ref
            # ``self.c(x)`` runs the child's own ``__call__`` where it defines one, else (BrainPy's) update.
            called = "__call__" if "__call__" in ctx.ir.all_methods(child_cls) else "update"
            method_name = rest[0] if len(rest) == 1 else (called if not rest else None)
            if method_name is not None and method_name in child_cls.stateful:
                return children, method_name, None
        return None


def identity_tested(expr: cst.CSTNode) -> set[int]:
    """Ids of the nodes under an operand of ``is`` / ``is not`` or an argument of ``id()`` / ``type()`` in
    ``expr``: which object it is, the same for every example, whatever the object holds."""
    under = [c.left if type(c.comparisons[0].operator) in (cst.Is, cst.IsNot) else None for c in walk(expr)
             if type(c) is cst.Comparison]
    under += [t.comparator for c in walk(expr) if type(c) is cst.Comparison for k, t in enumerate(c.comparisons)
              if type(t.operator) in (cst.Is, cst.IsNot)
              or (k + 1 < len(c.comparisons) and type(c.comparisons[k + 1].operator) in (cst.Is, cst.IsNot))]
    under += [a.value for n in walk(expr) if type(n) is cst.Call and type(n.func) is cst.Name
              and n.func.value in ("id", "type") for a in n.args]
    return {id(n) for u in under if u is not None for n in walk(u)}


def presence_tested(expr: cst.CSTNode) -> set[int]:
    """Ids of the nodes ``X is None`` / ``X is not None`` tests in ``expr`` (``X`` and all under it):
    whether the constructor built ``self.b`` is the same for every example, whatever ``b`` holds."""
    return {id(n) for c in walk(expr) if type(c) is cst.Comparison and all(
        type(t.operator) in (cst.Is, cst.IsNot) and is_none(t.comparator) for t in c.comparisons) for n in walk(c.left)}


def sized_args(expr: cst.CSTNode) -> list[cst.BaseExpression]:
    """The arguments of ``len(...)`` and ``isinstance(...)`` in ``expr``: what they tell of a Variable (its
    length, its type) is the same for every example."""
    return [a.value for n in walk(expr) if type(n) is cst.Call and type(n.func) is cst.Name
            and n.func.value in ("len", "isinstance") for a in n.args]


def asked_args(expr: cst.CSTNode) -> list[cst.BaseExpression]:
    """The first arguments of ``isinstance(...)``, ``hasattr(...)`` and ``type(...)`` in ``expr``, all of which
    (``self.xs[0]``) is asked only what it is, the same for every example (not what it holds)."""
    return [n.args[0].value for n in walk(expr) if type(n) is cst.Call and object_question(n) and n.args]


class MethodRewriter:
    STATIC = frozenset({"shape", "ndim", "dtype", "size", "batch_axis", "__class__"})  # the same for every example

    def __init__(self, ctx: Context):
        self.ctx = ctx
        # Locals holding a value computed from the state (``v = self.V.sum()``, ``y = self.step(x)``):
        # each example's own, so a Python ``if`` on one cannot be taken for the batch (BFY210).
        self.traced: set[str] = set()

    def configuration(self, ref: LibraryRef) -> bool:
        """``self.N.num``, ``self.N.V.shape``: a built-in's attribute that is the same for every example."""
        return bool(ref.rest[:1] and ref.rest[0] in names.BUILTIN_CONFIG or set(ref.rest) & self.STATIC)

    def from_state(self, expr: cst.CSTNode, traced_locals: bool = True) -> bool:
        """Whether ``expr`` reads the state: a Variable's value, a stateful call, a traced local (unless
        not ``traced_locals``: then whether it reads the model itself)."""
        calls = ExprRewriter(self.ctx)
        presence = presence_tested(expr) | {id(n) for a in sized_args(expr) for n in walk(a)}
        for node in walk(expr):
            if id(node) in presence:
                continue
            if traced_locals and type(node) is cst.Name and node.value in self.traced:
                return True
            if type(node) is cst.Call and (calls.stateful_target(node.func) is not None or {
                    q.name for q in self.ctx.ir.qualified.get(node.func, ())} & names.CONTROL_FLOW):
                return True
            if type(node) is cst.Attribute:
                path = self_path(node, self.ctx.self_name)
                ref = self.ctx.resolve(path) if path else None
                if isinstance(ref, FieldRef) and not (ref.rest[:1] and ref.rest[0] in self.STATIC) or (
                        isinstance(ref, LibraryRef) and ref.rest and not self.configuration(ref)):
                    if not any(type(n) is cst.Attribute and n.attr.value in self.STATIC and n.value is node
                               for n in walk(expr)):
                        return True
        return False

    def track(self, targets: Sequence[cst.BaseExpression], value: cst.CSTNode) -> None:
        traced = self.from_state(value)

        def bound(target: cst.BaseExpression) -> list[str]:
            """The locals an assignment gives the value: ``a, (b, *c)``; ``xs[i]`` puts it into ``xs``."""
            if type(target) is cst.Name:
                return [target.value]
            if type(target) in (cst.Tuple, cst.List):
                return [n for el in target.elements for n in bound(el.value)]
            if type(target) is cst.StarredElement:
                return bound(target.value)
            if type(target) in (cst.Subscript, cst.Attribute):
                base = bound(target.value)
                return base if traced else []  # writing a static value into a container leaves it as it was
            return []

        for target in targets:
            for local in bound(target):
                (self.traced.add if traced else self.traced.discard)(local)

    # -- expressions --------------------------------------------------------------
    def expr(self, node: cst.CSTNode, hoist: bool = True,
             written: bool = False) -> tuple[list[cst.SimpleStatementLine], cst.CSTNode, ExprRewriter]:
        # A conditional expression and an assert take one Python branch too (BFY210, as an `if` does).
        for inner in walk(node):
            if type(inner) is cst.IfExp:
                self.check_static(inner.test, "... if ... else ...")
            elif type(inner) is cst.Assert:
                self.check_static(inner.test, "assert")
        rewriter = ExprRewriter(self.ctx, hoist)
        rewriter.find_changing_calls(node)
        if written:  # (an assignment's target: an item of a built-in written there is refused)
            rewriter.written.update(id(n) for n in walk(node) if type(n) is cst.Subscript)
        return rewriter.pre, node.visit(rewriter), rewriter

    # -- statements -----------------------------------------------------------------
    def block(self, body: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
        out: list[cst.BaseStatement] = []
        for stmt in body:
            out.extend(self.statement(stmt))
        return out

    # Compound statements: each threads the state through its blocks (batchify.rules).
    STATEMENT_RULES = {cst.If: "if_", cst.For: "for_", cst.While: "while_", cst.With: "with_", cst.Try: "try_",
                       cst.Match: "match_"}
    # Simple statements.
    SMALL_RULES = {cst.Return: "return_", cst.Expr: "expression", cst.Assign: "assign", cst.AugAssign: "aug_assign",
                   cst.AnnAssign: "annotated_assign"}

    def statement(self, stmt: cst.BaseStatement) -> list[cst.BaseStatement]:
        if type(stmt) is cst.SimpleStatementLine:
            out: list[cst.BaseStatement] = []
            for small in stmt.body:
                self.ctx.statement = small
                out.extend(self.small(small, stmt))
            if out:
                out[0] = out[0].with_changes(leading_lines=stmt.leading_lines)
                if stmt.trailing_whitespace.comment is not None and isinstance(out[-1], cst.SimpleStatementLine):
                    out[-1] = out[-1].with_changes(trailing_whitespace=stmt.trailing_whitespace)
            return out
        rule = self.STATEMENT_RULES.get(type(stmt))
        if rule is not None:
            self.ctx.statement = stmt
            return getattr(self, rule)(stmt)
        if type(stmt) is cst.FunctionDef and stmt.name.value in self.ctx.closures:
            return [self.pure_closure(stmt)]
        return self.nested(stmt)

    def if_(self, stmt: cst.If, hoist: bool = True) -> list[cst.BaseStatement]:
        """A Python ``if`` on configuration: kept, each branch threading the state (on a Variable: BFY210)."""
        self.check_static(stmt.test, "if")
        pre, test, _ = self.expr(stmt.test, hoist=hoist)
        orelse = stmt.orelse
        if type(orelse) is cst.If:
            orelse = self.if_(orelse, hoist=False)[0]
        elif type(orelse) is cst.Else:
            orelse = orelse.with_changes(body=self.suite(orelse.body))
        return [*pre, stmt.with_changes(test=test, body=self.suite(stmt.body), orelse=orelse)]

    def for_(self, stmt: cst.For) -> list[cst.BaseStatement]:
        """A Python ``for``: unrolled when traced, as in the original; its body threads the state."""
        self.check_no_write(stmt.target, "a for-loop target")
        if builtin_object(self.ctx, stmt.iter, "is iterated here"):
            return []
        pre, iter_, _ = self.expr(stmt.iter)
        body = self.suite(stmt.body)
        orelse = stmt.orelse.with_changes(body=self.suite(stmt.orelse.body)) if stmt.orelse else None
        return [*pre, stmt.with_changes(iter=iter_, body=body, orelse=orelse)]

    def while_(self, stmt: cst.While) -> list[cst.BaseStatement]:
        """A Python ``while`` on configuration: kept, its body threading the state."""
        self.check_static(stmt.test, "while")
        _, test, _ = self.expr(stmt.test, hoist=False)
        orelse = stmt.orelse.with_changes(body=self.suite(stmt.orelse.body)) if stmt.orelse else None
        return [stmt.with_changes(test=test, body=self.suite(stmt.body), orelse=orelse)]

    def with_(self, stmt: cst.With) -> list[cst.BaseStatement]:
        pre: list[cst.BaseStatement] = []
        new_items = []
        for item in stmt.items:
            p, it, _ = self.expr(item)
            pre.extend(p)
            new_items.append(it)
        return [*pre, stmt.with_changes(items=new_items, body=self.suite(stmt.body))]

    def try_(self, stmt: cst.Try) -> list[cst.BaseStatement]:
        new = stmt.with_changes(
            body=self.suite(stmt.body),
            handlers=[h.with_changes(body=self.suite(h.body)) for h in stmt.handlers],
            orelse=stmt.orelse.with_changes(body=self.suite(stmt.orelse.body)) if stmt.orelse else None,
            finalbody=stmt.finalbody.with_changes(body=self.suite(stmt.finalbody.body)) if stmt.finalbody else None,
        )
        if new.finalbody is not None and any(type(n) is cst.Return for part in (stmt.body, *stmt.handlers, stmt.orelse)
                                             if part is not None for n in outside_functions(part)):
            if any(type(n) is cst.Assign and any(type(v) is cst.Name and v.value == self.ctx.state
                                                 for t in n.targets for v in walk(t.target))
                   for n in outside_functions(new.finalbody)):  # `return state, out` ran before the finally block
                self.ctx.report(stmt.finalbody, "BFY205", "a finally block writes state after a return in its try: "
                                "the batched method returns its state when the return runs, before the finally "
                                "block, so the write would be lost; write it before the return (or return after "
                                "the try statement)")
        return [new]

    def match_(self, stmt: cst.Match) -> list[cst.BaseStatement]:
        """``match`` on configuration, as a Python ``if`` is: each case threads the state."""
        self.check_static(stmt.subject, "match")
        pre, subject, _ = self.expr(stmt.subject)
        cases = []
        for case in stmt.cases:
            guard = self.expr(case.guard, hoist=False)[1] if case.guard is not None else None
            if case.guard is not None:
                self.check_static(case.guard, "case guard")
            cases.append(case.with_changes(guard=guard, body=self.suite(case.body)))
        return [*pre, stmt.with_changes(subject=subject, cases=cases)]

    def nested(self, stmt: cst.BaseStatement) -> list[cst.BaseStatement]:
        """Nested functions and classes: reads are rewritten, writes refused (BFY203)."""
        for node in walk(stmt):
            if type(node) in (cst.Assign, cst.AugAssign, cst.AnnAssign):
                targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
                for target in targets:
                    if self.writes_field(target):
                        self.ctx.report(node, "BFY203", "state is written inside a nested function; only closures "
                                        "given to bm.for_loop, bm.cond, bm.while_loop or bm.ifelse carry the state "
                                        "(jax.lax.scan and plain calls do not yet)")
        _, new, _ = self.expr(stmt, hoist=False)
        return [new]

    def pure_closure(self, func: cst.FunctionDef) -> cst.FunctionDef:
        """``def body(x): ...`` -> ``def body(state, x): ... return state, y``: the loop carries the state."""
        body = self.block(func.body.body)
        if not body or not isinstance(body[-1], cst.SimpleStatementLine) or not isinstance(
                body[-1].body[-1], (cst.Return, cst.Raise)):
            body.append(return_state(self.ctx))
        params = [cst.Param(name(self.ctx.state)), *func.params.params]
        return func.with_changes(params=func.params.with_changes(
            params=[p.with_changes(comma=cst.MaybeSentinel.DEFAULT) for p in params]),
            body=func.body.with_changes(body=body))

    def check_static(self, test: cst.BaseExpression, keyword: str) -> None:
        """A Python ``if``/``while`` may test configuration, not state: under vmap state is traced."""
        static = self.STATIC
        sized = {id(a) for a in sized_args(test)} | presence_tested(test) | identity_tested(test)
        sized |= {id(n) for a in asked_args(test) for n in walk(a)}
        for node in walk(test):
            path = self_path(node, self.ctx.self_name) if type(node) is cst.Attribute else None
            ref = self.ctx.resolve(path) if path and id(node) not in sized else None
            if isinstance(ref, FieldRef) and ref.rest[:1] and ref.rest[0] in static or (
                    isinstance(ref, LibraryRef) and self.configuration(ref)):
                sized.update(id(n) for n in walk(node))  # `self.V.shape[0]`: nothing inside it is traced
                continue
            if isinstance(ref, FieldRef):
                self.ctx.report(test, "BFY210", f"Python `{keyword}` on self.{'.'.join((*ref.children, ref.name))}, "
                                "a Variable: it holds a different value for each example, so one Python branch "
                                "cannot be taken for the batch; use bm.where, bm.cond or bm.while_loop")
                return
            if isinstance(ref, LibraryRef) and ref.rest:
                shown = ref.dotted.removesuffix(f".{ref.rest[-1]}") if ref.rest[-1] in names.BUILTIN_READERS \
                    else ref.dotted  # `self.N.spike.any()`: the attribute, not its method
                self.ctx.report(test, "BFY210", f"Python `{keyword}` on self.{shown}, an attribute of a built-in "
                                "that batchify takes for a Variable: a Variable holds a different value for each "
                                "example, so one Python branch cannot be taken for the batch; use bm.where, bm.cond "
                                "or bm.while_loop (if it is configuration, keep it on the model in __init__ and test "
                                "that)")
                return
            if type(node) is cst.Name and node.value in self.traced and id(node) not in sized and not any(
                    type(n) is cst.Attribute and n.value is node and n.attr.value in static for n in walk(test)):
                self.ctx.report(test, "BFY210", f"Python `{keyword}` on {node.value}, computed from the model's "
                                "state: it holds a different value for each example, so one Python branch cannot "
                                "be taken for the batch; use bm.where, bm.cond or bm.while_loop")
                return

    def suite(self, suite: cst.BaseSuite) -> cst.BaseSuite:
        if type(suite) is cst.IndentedBlock:
            body = self.block(suite.body)
            return suite.with_changes(body=body or [line(cst.Pass())])
        # `if x: a; b` on one line: expand into an indented block.
        return cst.IndentedBlock(self.block([cst.SimpleStatementLine(suite.body)]) or [line(cst.Pass())])

    # -- small statements --------------------------------------------------------------
    def small(self, small: cst.BaseSmallStatement, owner: cst.SimpleStatementLine) -> list[cst.BaseStatement]:
        rule = self.SMALL_RULES.get(type(small))
        if rule is not None:
            return getattr(self, rule)(small)
        if type(small) is cst.Del:
            self.check_no_write(small.target, "del")
        pre, new, _ = self.expr(small)
        return [*pre, line(new)]

    def return_(self, small: cst.Return) -> list[cst.BaseStatement]:
        """``return e`` -> ``return bfy.unwrap(state), e``; ``return a, b`` -> ``return bfy.unwrap(state), (a, b)``."""
        ctx = self.ctx
        if small.value is None:
            return [return_state(ctx)]
        pre, value, _ = self.expr(small.value)
        elements = [cst.Element(unwrapped(ctx)), cst.Element(value)]
        if type(value) is cst.Tuple and not value.lpar:
            elements[1] = cst.Element(value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))
        return [*pre, line(cst.Return(cst.Tuple(elements, lpar=[], rpar=[])))]

    def expression(self, small: cst.Expr) -> list[cst.BaseStatement]:
        """An expression statement: ``self.V.update(e)`` is a write; a stateful call binds its state."""
        update = self.variable_update(small.value)
        if update is not None:
            return update
        if self.brainpy_base_reset(small.value):
            return []
        if self.default_reset(small.value):
            return [assign([self.ctx.state], call(attr(name(self.ctx.self_name), "reset_example"),
                                                  [cst.Arg(name(self.ctx.params)), cst.Arg(name(self.ctx.state))]))]
        pre, value, rw = self.expr(small.value)
        if type(value) is cst.Name and value.value in rw.hoisted and pre:
            return self.rename_last(pre, rw, value.value, self.ctx.ns.fresh("_") if "_" in self.ctx.ns.used else "_")
        return [*pre, line(small.with_changes(value=value))]

    def default_reset(self, value: cst.BaseExpression) -> bool:
        """``self.reset_state()`` in a step (a loss resetting the model first, ``--function``) of a class
        that defines no ``reset_state``: BrainPy's default resets every node (children, built-ins); in
        one example's step that is ``state = self.reset_example(params, state)``."""
        if not (type(value) is cst.Call and self_path(value.func, self.ctx.self_name) == ["reset_state"]):
            return False
        return not any("reset_state" in c.methods for c in self.ctx.ir.chain(self.ctx.cls))

    def brainpy_base_reset(self, value: cst.BaseExpression) -> bool:
        """``super().reset_state(...)`` reaching BrainPy's own base (no class of this file above defines
        one): a no-op there (the model bases add no state), and in the batched class ``super()`` would
        reach the batch's own ``reset_state``, which resets every example by calling this method."""
        if not (type(value) is cst.Call and is_super_call(value.func) and value.func.attr.value == "reset_state"):
            return False
        return not any("reset_state" in c.methods for c in self.ctx.ir.chain(self.ctx.cls)[:-1])

    def annotated_assign(self, small: cst.AnnAssign) -> list[cst.BaseStatement]:
        """``self.V: jax.Array = e``: a write like the plain assignment."""
        if small.value is not None and builtin_object(self.ctx, small.value, "is bound to a name here"):
            return []
        if small.value is not None and self.field_target(small.target) is not None:
            return self.assign(cst.Assign([cst.AssignTarget(small.target)], small.value))
        pre, new, _ = self.expr(small)
        return [*pre, line(new)]

    def rename_last(self, pre, rw: ExprRewriter, tmp: str, out: str) -> list[cst.BaseStatement]:
        """``state, tmp = ...; x = tmp`` -> ``state, x = ...``: the last hoisted call binds ``out``."""
        built = rw.hoisted[tmp](out)
        return [*pre[: len(pre) - len(built)], *built]

    def variable_update(self, value: cst.BaseExpression) -> list[cst.BaseStatement] | None:
        """``self.V.update(e)`` as a statement: a write."""
        if not (type(value) is cst.Call and type(value.func) is cst.Attribute):
            return None
        path = self_path(value.func, self.ctx.self_name)
        if not path or path[-1] not in ("update", "fill_", "copy_", "value_"):
            return None
        ref = self.ctx.resolve(path[:-1])
        if not isinstance(ref, FieldRef) or ref.rest:
            return None
        if path[-1] != "update" or len(value.args) != 1:
            self.ctx.report(value, "BFY205", f"self.{'.'.join(path)}(...) is not supported; assign to "
                            f"self.{'.'.join(path[:-1])}.value instead")
            return []
        if ref.kind == "param":
            self.ctx.report(value, "BFY201", f"the weight self.{ref.name} is written in {self.ctx.method.name}()")
            return []
        pre, new_value, _ = self.expr(value.args[0].value)
        return [*pre, self.ctx.replace_state(ref.children, {ref.name: new_value})]

    def field_target(self, target: cst.BaseExpression) -> tuple[FieldRef, Sequence[cst.SubscriptElement] | ItemIndex | None] | None:
        """A write target on a field: ``self.V``, ``self.V.value``, ``self.c.V`` or those subscripted;
        ``self.xs[i].value`` for an item of a bm.VarList / VarDict."""
        index = None
        item_value = type(target) is cst.Attribute and target.attr.value == "value" and isinstance(
            target.value, cst.Subscript)
        if item_value:
            target = target.value
        if type(target) is cst.Subscript:
            index = target.slice
            target = target.value
            # `self.xs[k][i] = e` / `self.xs[k].value[i] = e`: elements of a bm.VarList / VarDict item
            item = target.value if type(target) is cst.Attribute and target.attr.value == "value" else target
            if not item_value and type(item) is cst.Subscript and len(item.slice) == 1 and type(
                    item.slice[0].slice) is cst.Index:
                base = self_path(item.value, self.ctx.self_name)
                ref = self.ctx.resolve(base) if base else None
                if isinstance(ref, FieldRef) and not ref.rest and ref.container:
                    return ref, ItemIndex(item.slice[0].slice.value, index)
        path = self_path(target, self.ctx.self_name)
        if path is None:
            return None
        ref = self.ctx.resolve(path)
        if isinstance(ref, FieldRef) and not ref.rest and (ref.container or not item_value):
            return ref, index
        return None

    def library_target(self, target: cst.BaseExpression) -> tuple[LibraryRef, cst.SubscriptElement | None] | None:
        """A write target on a built-in's attribute: ``self.N.input``, ``self.N.input.value``, subscripted."""
        index = None
        if type(target) is cst.Subscript:
            index = target.slice
            target = target.value
        path = self_path(target, self.ctx.self_name)
        ref = self.ctx.resolve(path) if path else None
        return (ref, index) if isinstance(ref, LibraryRef) and ref.rest else None

    def library_write(self, target: cst.BaseExpression, value: cst.BaseExpression, op: type | None,
                      node: cst.CSTNode, current: str | None = None) -> list[cst.BaseStatement]:
        """``self.N.input += g`` -> ``state = self.library.write(state, "N.input", <read> + g)``; ``current``:
        a name holding the value read before the statement's calls ran."""
        ref, index = self.library_target(target)
        if ref.children:
            self.ctx.report(node, "BFY104", f"self.{'.'.join(ref.children)}.{ref.name} is a built-in held by a "
                            "child model; write it inside that child's own methods")
            return []
        read = name(current) if current is not None else self.ctx.library_read(ref)
        current = self.ctx.library_read(ref)  # (the item is set in the value the statement's calls left)
        if index is not None:
            idx_node = [self.expr(el, hoist=False)[1] for el in index]
            if op is not None:
                value = cst.BinaryOperation(cst.Subscript(read, idx_node), op(), _paren(value, op))
            value = cst.Call(attr(cst.Subscript(attr(current, "at"), idx_node), "set"), [cst.Arg(value)])
        elif op is not None:
            value = cst.BinaryOperation(read, op(), _paren(value, op))
        return [self.ctx.library_write(ref, value)]

    def writes_field(self, target: cst.BaseExpression) -> bool:
        for node in walk(target):
            if type(node) is cst.Attribute:
                path = self_path(node, self.ctx.self_name)
                if path and isinstance(self.ctx.resolve(path), FieldRef):
                    return True
        return False

    def check_no_write(self, target: cst.CSTNode, what: str) -> None:
        if self.writes_field(target):
            self.ctx.report(target, "BFY205", f"a Variable as {what} is not supported")

    def plain_attribute(self, target: cst.BaseExpression) -> bool:
        path = self_path(target, self.ctx.self_name)
        if path is None:
            return False
        ref = self.ctx.resolve(path)
        if isinstance(ref, LibraryRef) and not ref.rest:
            self.ctx.report(target, "BFY202", f"self.{'.'.join(path)}, a built-in created in __init__, is "
                            f"replaced in {self.ctx.method.name}(); keep built-ins fixed after __init__")
            return True
        if len(path) == 1 and any(path[0] in c.accessors for c in self.ctx.ir.chain(self.ctx.cls)):
            self.ctx.report(target, "BFY202", f"self.{path[0]} = ... in {self.ctx.method.name}() runs the setter of "
                            f"the property {path[0]}, which batchify copies as written for use outside the steps; "
                            "in a step, write the Variable it sets (self.V.value = ...) instead")
            return True
        if ref is None or (isinstance(ref, tuple) and ref[2]):
            self.ctx.report(target, "BFY202", f"self.{'.'.join(path)} is assigned in {self.ctx.method.name}(), but "
                            f"it is neither a Variable nor a child model created in {self.ctx.cls.name}.__init__; "
                            "a plain attribute cannot change per example (make it a bm.Variable)"
                            + (f"; if self.{path[0]} is a model handed to the constructor, batch the class that "
                               f"builds {self.ctx.cls.name} with it, in the same file: that class runs both as "
                               "library code, one example at a time" if len(path) > 1 else ""))
            return True
        return False

    def write_value(self, ref: FieldRef, index, value: cst.BaseExpression, op: type | None,
                    node: cst.CSTNode) -> cst.BaseExpression | None:
        """The new value of the field ``ref`` after ``target (op)= value``."""
        if ref.kind == "param":
            self.ctx.report(node, "BFY201", f"the weight self.{ref.name} is written in {self.ctx.method.name}(); "
                            "weights are shared by every example (online learning rules are not supported yet)")
            return None
        current = self.ctx.field_expr(ref, with_rest=False)
        if isinstance(index, ItemIndex):  # the item with its elements written, put back in the container
            key = self.expr(index.key, hoist=False)[1]
            item = cst.Subscript(current, [cst.SubscriptElement(cst.Index(key))])
            return cst.Call(runtime("replace_item"), [cst.Arg(current), cst.Arg(key),
                                                      cst.Arg(self.indexed_write(index.elements, item, value, op))])
        if index is not None and ref.container:
            return self.container_item_write(ref, index, current, value, op, node)
        if index is not None:
            return self.indexed_write(index, current, value, op)
        return cst.BinaryOperation(current, op(), _paren(value, op)) if op is not None else value

    def container_item_write(self, ref: FieldRef, index, current, value, op, node) -> cst.BaseExpression | None:
        """``self.xs[i] = e`` of a bm.VarList / VarDict -> ``bfy.replace_item(state.xs, i, e)``."""
        if len(index) != 1 or type(index[0].slice) is not cst.Index:
            self.ctx.report(node, "BFY205", f"a slice or several indices of the bm.VarList self.{ref.name} "
                            "written at once; write one item at a time (self.NAME[i].value = ...)")
            return None
        key = self.expr(index[0].slice.value, hoist=False)[1]
        if op is not None:
            value = cst.BinaryOperation(cst.Subscript(current, [cst.SubscriptElement(cst.Index(key))]), op(),
                                        _paren(value, op))
        return cst.Call(runtime("replace_item"), [cst.Arg(current), cst.Arg(key), cst.Arg(value)])

    def indexed_write(self, index, current, value, op) -> cst.BaseExpression:
        """``self.V[i] = e`` -> ``state.V.at[i].set(e)``; ``self.V[i] += e`` -> ``.at[i].set(state.V[i] + e)``
        (duplicate indices do not accumulate, as in the original)."""
        idx_node = [self.expr(el, hoist=False)[1] for el in index]  # an index only reads
        if len(index) == 1 and type(index[0].slice) is cst.Index and is_mask(index[0].slice.value, self.ctx.masks):
            # `self.V[self.V > th] = 0.`: a boolean mask selects a number of elements no trace can know
            # (NonConcreteBooleanIndexError); the same write as jnp.where(mask, value, V), elementwise.
            mask = idx_node[0].slice.value
            if type(value) is cst.Subscript and len(value.slice) == 1 and value.slice[0].deep_equals(idx_node[0]):
                value = value.value  # `V[m] = x[m]`: x where m holds
            if op is not None:
                value = cst.BinaryOperation(current, op(), _paren(value, op))
            return cst.Call(attr(name("jnp"), "where"), [cst.Arg(mask), cst.Arg(value), cst.Arg(current)])
        if op is not None:
            value = cst.BinaryOperation(cst.Subscript(current, idx_node), op(), _paren(value, op))
        return cst.Call(attr(cst.Subscript(attr(current, "at"), idx_node), "set"), [cst.Arg(value)])

    def assign(self, small: cst.Assign) -> list[cst.BaseStatement]:
        """``self.V.value = e`` / ``self.V = e`` -> ``state = state._replace(V=e)``; reads only otherwise."""
        ctx = self.ctx
        self.track([t.target for t in small.targets if not self.writes_field(t.target)], small.value)
        if builtin_object(self.ctx, small.value, "is bound to a name here"):
            return []
        pre, value, rw = self.expr(small.value)
        targets = [t.target for t in small.targets]
        if len(targets) == 1 and self.library_target(targets[0]) is not None:
            return [*pre, *self.library_write(targets[0], value, None, small)]
        if any([self.plain_target(t) for t in targets]):  # a list: every plain attribute is reported
            return pre
        # The common case: no state written -> rewrite reads only.
        if not any(self.writes_field(t) for t in targets):
            new_targets = []
            for t in small.targets:
                p, nt, _ = self.expr(t, written=True)
                pre.extend(p)
                new_targets.append(nt)
            if (len(targets) == 1 and type(targets[0]) is cst.Name and type(value) is cst.Name
                    and value.value in rw.hoisted and pre):
                return self.rename_last(pre, rw, value.value, targets[0].value)
            return [*pre, line(small.with_changes(targets=new_targets, value=value))]
        if len(targets) == 1 and self.field_target(targets[0]) is not None:
            ref, index = self.field_target(targets[0])
            new = self.write_value(ref, index, value, None, small)
            return [*pre, ctx.replace_state(ref.children, {ref.name: new})] if new is not None else pre
        return self.unpacking(small, pre, value, targets)

    def unpacking(self, small: cst.Assign, pre, value, targets) -> list[cst.BaseStatement]:
        """``self.a.value, self.b.value = e`` or ``self.a.value = self.b.value = e``: temporaries, then one
        ``_replace`` each, in the original's order."""
        ctx = self.ctx
        self.check_variable_objects_in_unpacking(targets, small.value)
        writes: list[tuple[FieldRef, object, str, cst.CSTNode]] = []

        def lower(target: cst.BaseExpression) -> cst.BaseExpression:
            if type(target) in (cst.Tuple, cst.List):
                return target.with_changes(elements=[
                    el.with_changes(value=lower(el.value)) if type(el) is not cst.StarredElement
                    else self.starred(el) for el in target.elements])
            if self.library_target(target) is not None:
                ctx.report(target, "BFY205", "a built-in's Variable written in an unpacking or chained assignment "
                           "is not supported; assign it in a statement of its own")
                return target
            found = self.field_target(target)
            if found is not None:
                tmp = ctx.ns.fresh(f"new_{found[0].name}")
                writes.append((found[0], found[1], tmp, target))
                return name(tmp)
            _, new_target, _ = self.expr(target, written=True)
            return new_target

        if len(targets) > 1:
            tmp = ctx.ns.fresh("value")
            out: list[cst.BaseStatement] = [*pre, assign([tmp], value)]
            for t in targets:
                out.append(line(cst.Assign([cst.AssignTarget(lower(t))], name(tmp))))
        else:
            out = [*pre, line(cst.Assign([cst.AssignTarget(lower(targets[0]))], value))]
        for ref, index, tmp, node in writes:
            new = self.write_value(ref, index, name(tmp), None, node)
            if new is not None:
                out.append(ctx.replace_state(ref.children, {ref.name: new}))
        return out

    def check_variable_objects_in_unpacking(self, targets: list[cst.BaseExpression], value: cst.BaseExpression) -> None:
        """``self.a.value, self.b.value = self.b, self.a``: the right side holds the Variable objects,
        so the original reads each one when its target is written, after the earlier targets changed
        it (``b`` ends as its own old value, not ``a``'s). Refused rather than silently swapped."""
        if len(targets) != 1 or type(targets[0]) not in (cst.Tuple, cst.List):
            return
        if type(value) not in (cst.Tuple, cst.List) or len(value.elements) != len(targets[0].elements):
            return
        written: set[str] = set()
        for target_el, value_el in zip(targets[0].elements, value.elements):
            item = value_el.value
            bare = not (type(item) is cst.Attribute and item.attr.value == "value")
            found = self.field_target(item) if bare and type(item) is cst.Attribute else None
            if found is not None and found[1] is None and found[0].name in written:
                self.ctx.report(item, "BFY205", f"self.{found[0].name} on the right of this unpacking is the "
                                "Variable itself, read only when its target is written, after an earlier target "
                                f"changed it; write self.{found[0].name}.value to use its value before the "
                                "assignment")
            target_found = self.field_target(target_el.value) if not isinstance(
                target_el, cst.StarredElement) else None
            if target_found is not None:
                written.add(target_found[0].name)

    def starred(self, el: cst.StarredElement) -> cst.StarredElement:
        self.check_no_write(el.value, "a starred target")
        return el

    def plain_target(self, target: cst.BaseExpression) -> bool:
        """A write to a plain ``self`` attribute (reported): ``self.x``, ``self.x[i]``, in unpackings too."""
        if type(target) in (cst.Tuple, cst.List):
            return any([self.plain_target(el.value) for el in target.elements])  # a list: report each
        if type(target) is cst.Subscript:
            target = target.value
        return type(target) is cst.Attribute and self.plain_attribute(target)

    def read_by_writer(self, children: tuple[str, ...], field_name: str, writers, target: cst.CSTNode) -> bool:
        """``self.V += self.step(x)``: ``+=`` reads its target before the call, which moves in front of
        the statement, changes it: BFY215 where one of the statement's ``writers`` may write the field
        (``"library"``: a built-in's Variable) that the target under ``children`` names."""
        if not any(children[:len(under)] == under and (
                written is None or (children == under and field_name in written)) for _, under, written in writers):
            return False
        self.ctx.report(target, "BFY215", "this reads state before a call in the same statement changes it (`+=` "
                        "reads its target first); batchify moves the call in front of the statement, so the read "
                        "would see the new value: assign the call's result to a variable first")
        return True

    def indices_first(self, target: cst.BaseExpression) -> tuple[list[cst.SimpleStatementLine], cst.BaseExpression]:
        """``y[bm.argmax(self.N.V.value)] += self.N(x)``: Python evaluates an augmented target's indices
        before the value, so where the value's calls move in front of the statement, an index that reads
        the model moves in front of them, into a name of its own (a mask stays a mask)."""
        first: list[cst.SimpleStatementLine] = []
        probe = ExprRewriter(self.ctx)

        def visit(node: cst.BaseExpression) -> cst.BaseExpression:
            if type(node) is cst.Attribute:
                return node.with_changes(value=visit(node.value))
            if type(node) is not cst.Subscript:
                return node
            base, elements = visit(node.value), []  # (the object is indexed before its own index is read)
            for el in node.slice:
                index_nodes = walk(el.slice.value) if type(el.slice) is cst.Index else []
                if index_nodes and (self.from_state(el.slice.value, traced_locals=False) or any(
                        id(n) in self.ctx.live_names or probe.changes_builtins(n) for n in index_nodes)):
                    p, index, _ = self.expr(el.slice.value)
                    if type(index) is not cst.Name:  # (a call's output is in a name already)
                        held = self.ctx.ns.fresh("index")
                        p, index = [*p, assign([held], index)], name(held)
                    if is_mask(el.slice.value, self.ctx.masks):
                        self.ctx.masks |= {index.value}
                    first.extend(p)
                    el = el.with_changes(slice=el.slice.with_changes(value=index))
                elements.append(el)
            return node.with_changes(value=base, slice=elements)

        target = visit(target)
        return first, target

    def aug_assign(self, small: cst.AugAssign) -> list[cst.BaseStatement]:
        """``self.V += e`` (every operator) -> ``state = state._replace(V=state.V + e)``."""
        if type(small.target) is cst.Name and self.from_state(small.value):
            self.traced.add(small.target.value)
        pre, value, rw = self.expr(small.value)
        if pre:
            first, target = self.indices_first(small.target)
            pre, small = [*first, *pre], small.with_changes(target=target)
        in_library = self.library_target(small.target)
        if in_library is not None:
            current, target, ref = None, small.target, in_library[0]
            read_first = type(target) is cst.Subscript or (type(target) is cst.Attribute and target.attr.value == "value")
            if rw.changing_calls and read_first and not ref.children:
                # `self.N.V.value += self.N(x)` and `self.N.V[:2] += ...` read V before the call changes it;
                # `self.N.V += self.N(x)` is Variable.__iadd__, which reads V after it
                current = self.ctx.ns.fresh("_".join((ref.name, *ref.rest)))
                pre = [assign([current], self.ctx.library_read(ref)), *pre]
            return [*pre, *self.library_write(small.target, value, AUG_OPS[type(small.operator)], small, current)]
        found = self.field_target(small.target)
        if found is None and id(small) in self.ctx.shares_state:
            # `r *= g` on a BrainPy Array that the state holds too would change the state in place; the
            # original's Variable holds its own jax Array (its setter unwraps), so only `r` changes.
            op = AUG_OPS[type(small.operator)]
            return [*pre, line(cst.Assign([cst.AssignTarget(small.target)],
                                          cst.BinaryOperation(small.target, op(), _paren(value, op))))]
        if found is None:
            if not self.plain_target(small.target):
                p, target, _ = self.expr(small.target, written=True)
                return [*pre, *p, line(small.with_changes(target=target, value=value))]
            return pre
        ref, index = found
        if ref.kind == "state" and self.read_by_writer(tuple(ref.children), ref.name, rw.writers, small.target):
            return pre
        new = self.write_value(ref, index, value, AUG_OPS[type(small.operator)], small)
        return [*pre, self.ctx.replace_state(ref.children, {ref.name: new})] if new is not None else pre


def unwrapped(ctx: Context) -> cst.BaseExpression:
    """``_unwrap(state)``: bm functions return BrainPy Arrays; the state holds plain jax Arrays."""
    return cst.Call(runtime("unwrap"), [cst.Arg(name(ctx.state))])


def return_state(ctx: Context) -> cst.SimpleStatementLine:
    return line(cst.Return(cst.Tuple([cst.Element(unwrapped(ctx)), cst.Element(name("None"))], lpar=[], rpar=[])))


# Binding strength of binary operators (Python's grammar); higher binds tighter.
PRECEDENCE: dict[type, int] = {
    cst.BitOr: 1, cst.BitXor: 2, cst.BitAnd: 3, cst.LeftShift: 4, cst.RightShift: 4, cst.Add: 5,
    cst.Subtract: 5, cst.Multiply: 6, cst.Divide: 6, cst.FloorDivide: 6, cst.Modulo: 6,
    cst.MatrixMultiply: 6, cst.Power: 8,
}


def _paren(expr: cst.BaseExpression, op: type) -> cst.BaseExpression:
    """Parenthesise ``b`` in the rebuilt ``a op b`` of ``a op= b`` only where precedence needs it."""
    if expr.lpar:
        return expr
    if type(expr) is cst.BinaryOperation:
        strength = PRECEDENCE[type(expr.operator)]
    elif type(expr) is cst.UnaryOperation:
        strength = 7
    elif type(expr) in (cst.BooleanOperation, cst.Comparison, cst.IfExp, cst.Lambda, cst.NamedExpr):
        strength = 0
    else:
        return expr
    if strength > PRECEDENCE[op] or (strength == 7 and op is not cst.Power):
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def builtin_whole(ctx: Context, expr: cst.BaseExpression) -> LibraryRef | None:
    """The built-in ``expr`` is, or holds a layer of: ``self.N``, ``self.seq[0]``, ``self.seq.children``."""
    while type(expr) is cst.Subscript:
        expr = expr.value
    path = self_path(expr, ctx.self_name)
    ref = ctx.resolve(path) if path else None
    return ref if isinstance(ref, LibraryRef) and ref.rest in ((), ("children",)) else None


def holds_builtins(ir: ModuleIR) -> bool:
    """Whether the batched module reaches objects through views of them: one of its models holds a built-in."""
    return any(ir.all_libraries(ir.classes[c]) for c in ir.targets)


CONSTANT_NAMES = ("None", "True", "False")  # never a view: `x is None` stays as written


def chain_root(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``m`` of ``m.a[0].b``: what a chain of attributes and items starts from."""
    while type(expr) in (cst.Attribute, cst.Subscript):
        expr = expr.value
    return expr


def function_local(ir: ModuleIR, expr: cst.BaseExpression, self_name: str | None) -> bool:
    """``m``, ``ms[0]``, ``box.m`` in ``def key_of(self, m): return id(m)``: a parameter or local of a function,
    or an item or attribute of one, which may hold a view the function was handed
    (``self.key_of(self.proj.post)``); not a model method's ``self`` (the rules above read the model's)."""
    root = chain_root(expr)
    if type(root) is not cst.Name or root.value == self_name or root.value in CONSTANT_NAMES:
        return False
    qualified = ir.qualified.get(root, ())
    return bool(qualified) and all("<locals>" in q.name for q in qualified)


def handed_view(ir: ModuleIR, expr: cst.BaseExpression, self_name: str | None) -> bool:
    """A function's own name (``function_local``), or what a call gives back (``first([self.proj.post])``,
    an item or attribute of it): what may be one example's view of an object inside a built-in, handed
    to the function or back from one."""
    root = chain_root(expr)
    if type(root) is cst.Call:
        made = {q.name for q in ir.qualified.get(root.func, ())}
        return not (made and made <= NEVER_VIEWS)
    return function_local(ir, expr, self_name)


OBJECT_QUESTIONS = frozenset(f"builtins.{f}" for f in names.OBJECT_QUESTIONS)


# Built-ins whose result is never a view: a class, a number, a string, a truth value.
NEVER_VIEWS = frozenset(f"builtins.{f}" for f in (
    "type", "id", "len", "hash", "isinstance", "issubclass", "callable", "hasattr", "str", "repr", "int", "float",
    "bool", "abs", "round"))


def imported_or_builtin(ir: ModuleIR, expr: cst.BaseExpression) -> bool:
    """``float``, ``bm.Variable``: a built-in name or an imported one (or an attribute of one), never a view."""
    while type(expr) is cst.Attribute:
        expr = expr.value
    sources = {q.source for q in ir.qualified.get(expr, ())} if type(expr) is cst.Name else set()
    return bool(sources) and sources <= {QualifiedNameSource.IMPORT, QualifiedNameSource.BUILTIN}


def unviewed_identity(original_node: cst.Comparison, updated_node: cst.Comparison,
                      viewed: Callable[[cst.BaseExpression], bool],
                      exempt: Callable[[list[cst.BaseExpression]], bool] = lambda pair: False,
                      held: dict[int, cst.BaseExpression] | None = None,
                      plain: Callable[[cst.BaseExpression], bool] = lambda e: False) -> cst.Comparison | None:
    """``a is b`` -> ``bfy.unviewed(a) is bfy.unviewed(b)`` where either side may be a view (``viewed``, of
    an original node): the objects behind the views, as the original compares them. ``is None`` stays.
    ``held``: operands (by position) that are the object itself, in place of a view or a value of it;
    ``plain``: operands that are never a view (``float``, ``bm.Variable``), left as written."""
    operands = [original_node.left, *(t.comparator for t in original_node.comparisons)]
    wrap = set()
    for i, t in enumerate(original_node.comparisons):
        pair = operands[i:i + 2]
        if type(t.operator) in (cst.Is, cst.IsNot) and any(viewed(e) for e in pair) and not any(
                type(e) is cst.Name and e.value in CONSTANT_NAMES for e in pair) and not exempt(pair):
            # (`==` or `in` beside: both views are equal to and hashed as the object)
            wrap.update(j for j in (i, i + 1) if not plain(operands[j]))
    held = held or {}
    if not wrap and not held:
        return None
    updated = [updated_node.left, *(t.comparator for t in updated_node.comparisons)]
    unviewed = [held[i] if i in held else cst.Call(runtime("unviewed"), [cst.Arg(e)]) if i in wrap else e
                for i, e in enumerate(updated)]
    return updated_node.with_changes(left=unviewed[0], comparisons=[
        t.with_changes(comparator=e) for t, e in zip(updated_node.comparisons, unviewed[1:])])


def unviewed_arg(updated_node: cst.Call) -> cst.Call:
    """``id(x)`` -> ``id(bfy.unviewed(x))``: the id (or the class, ``type``) of the object behind a view, as the
    constructor, holding the objects themselves, sees it."""
    return updated_node.with_changes(args=[updated_node.args[0].with_changes(
        value=cst.Call(runtime("unviewed"), [cst.Arg(updated_node.args[0].value)]))])


class ViewIdentity(Transformer):
    """Code copied as written in a file whose models hold built-ins (a method that changes no state, a function
    or a lambda of the file, a class attribute; not a helper class, see ``support_code``) may be handed one
    example's view of an object inside a built-in (``self.key_of(self.proj.post)``): ``id()``, ``type()`` and
    ``is`` of its own names, and of what a call gives back, see the objects behind views."""

    def __init__(self, ir: ModuleIR, self_name: str | None) -> None:
        super().__init__()
        self.ir, self.self_name = ir, self_name

    def local(self, expr: cst.BaseExpression) -> bool:
        return handed_view(self.ir, expr, self.self_name)

    def leave_Comparison(self, original_node: cst.Comparison, updated_node: cst.Comparison) -> cst.BaseExpression:
        return unviewed_identity(original_node, updated_node, self.local,
                                 plain=lambda e: imported_or_builtin(self.ir, e)) or updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        args = original_node.args
        if (len(args) == 1 and not args[0].keyword and not args[0].star and self.local(args[0].value)
                and {"builtins.id", "builtins.type"} & {q.name for q in self.ir.qualified.get(original_node.func, ())}):
            return unviewed_arg(updated_node)
        return updated_node


def identity_through_views(ir: ModuleIR, node: cst.CSTNode, self_name: str | None) -> cst.CSTNode:
    """``node`` (code copied as written), its identities taken through views (``ViewIdentity``)."""
    if not holds_builtins(ir):
        return node
    spellings = id_spellings(ir)
    if not any(takes_identity(n) or names_id(n, spellings) or (type(n) is cst.Name and n.value == "type")
               for n in walk(node)):
        return node  # (a walk is much cheaper than a transform: most copied code takes no identity)
    return node.visit(ViewIdentity(ir, self_name))


def id_spellings(ir: ModuleIR) -> frozenset[str]:
    """The names ``id`` goes by in the module: ``id``, and ``ident`` of ``from builtins import id as ident``."""
    return frozenset({"id", *(al.asname.name.value for stmt in ir.module.body if type(stmt) is cst.SimpleStatementLine
                              for small in stmt.body if type(small) is cst.ImportFrom and small.module is not None
                              and type(small.module) is cst.Name and small.module.value == "builtins"
                              and not isinstance(small.names, cst.ImportStar)
                              for al in small.names if al.asname is not None and type(al.asname.name) is cst.Name)})


def ids_handed_on(ir: ModuleIR) -> list[Diagnostic]:
    """``sorted(ms, key=id)``, ``map(builtins.id, ms)``: ``id`` handed on as a function, where a view may reach it
    (the models' methods other than their construction, and the functions of the file), in a file whose models
    hold built-ins. The rewrite takes a view's identity where ``id()`` is called (``id(bfy.unviewed(m))``);
    handed on, it would be a view's: BFY213. (Helper classes stay verbatim copies: ``identity_through_views``.)"""
    if not holds_builtins(ir):
        return []
    spellings, out = id_spellings(ir), []
    roots = [method.node for name in ir.targets for cls in [ir.classes[name]] for method in cls.methods.values()
             if method.name != "__init__" and method.name not in cls.construction_helpers]
    roots += [stmt for name in ir.targets for stmt in ir.classes[name].node.body.body  # (class attributes)
              if type(stmt) not in (cst.FunctionDef, cst.ClassDef)]
    for root in [*roots, *(stmt for stmt in ir.support if type(stmt) is not cst.ClassDef)]:
        nodes = list(walk(root))
        used = {id(n.func) for n in nodes if type(n) is cst.Call}  # called, or read an attribute of
        used |= {id(n.value) for n in nodes if type(n) is cst.Attribute}
        for n in nodes:
            if (id(n) not in used and names_id(n, spellings)
                    and "builtins.id" in {q.name for q in ir.qualified.get(n, ())}):
                shown = ir.module.code_for_node(n)
                pos = ir.positions[n].start
                out.append(Diagnostic(ir.path, pos.line, pos.column + 1, "BFY213", (
                    f"{shown} is handed on as a function here: in a file whose models hold built-ins, batchify "
                    "takes the identity of what may be one example's view of an object inside a built-in where "
                    f"{shown}() is called, not where it is handed on; call it (key=lambda m: {shown}(m))")))
    return out


def takes_identity(node: cst.CSTNode) -> bool:
    """An ``is`` comparison: where a view's identity may be taken (and ``id``: ``names_id``)."""
    return type(node) is cst.Comparison and any(type(t.operator) in (cst.Is, cst.IsNot) for t in node.comparisons)


def names_id(node: cst.CSTNode, spellings: frozenset[str]) -> bool:
    """A name ``id`` may go by (``id_spellings``), or ``builtins.id``: asked of its qualified names next."""
    return (type(node) is cst.Name and node.value in spellings) or (type(node) is cst.Attribute and node.attr.value == "id")


def builtin_held(ctx: Context, expr: cst.BaseExpression) -> bool:
    """``self.N``, ``self.seq[0]``: a built-in the model holds, or a layer of one."""
    ref = builtin_whole(ctx, expr)
    return ref is not None and not (ref.rest and type(expr) is not cst.Subscript)


def builtin_inside(ctx: Context, expr: cst.BaseExpression) -> bool:
    """``self.proj.post``, ``self.proj.refs["syn"]``, ``self.seq[0].V``: something inside a built-in, which the
    batched model reads as one example sees it (an object: one example's view of it)."""
    while type(expr) is cst.Subscript:
        expr = expr.value
    return builtin_part(ctx, expr)


def builtin_part(ctx: Context, expr: cst.BaseExpression) -> bool:
    """``self.N.V``, ``self.seq[0].V``: an attribute of a built-in, or of an item of one."""
    if type(expr) is not cst.Attribute:
        return False
    path = self_path(expr, ctx.self_name)
    if path:  # `self.N.V`
        ref = ctx.resolve(path)
        return isinstance(ref, LibraryRef) and bool(ref.rest)
    owner = expr
    while type(owner) is cst.Attribute:
        owner = owner.value
    return type(owner) is cst.Subscript and builtin_whole(ctx, owner) is not None  # `self.seq[0].V`


# A model's own methods, which a name bound to them would run on the built-in's one-example Variables.
MODEL_METHODS = frozenset({"update", "reset_state", "reset", "step_run", "clear_input", "__call__"})


def builtin_object(ctx: Context, expr: cst.BaseExpression, how: str) -> bool:
    """``last = self.seq[-1]``, ``for layer in self.seq``: a built-in (or a layer of one) held under
    a name batchify cannot follow. Its Variables hold one example, the batch's live apart, so the
    name would read and step the wrong ones: BFY213 (at run time it was refused with advice that
    did not apply). Reached through ``self`` where it is used, it is each example's."""
    if type(expr) in (cst.Tuple, cst.List):  # `fc, lif = self.seq[0], self.seq[1]`
        how = "is in what is iterated here" if how == "is iterated here" else how  # (each an item: a binding)
        return any([builtin_object(ctx, e.value, how) for e in expr.elements])  # (a list: each reported)
    if type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value in (
            "enumerate", "reversed", "zip", "list", "tuple", "iter", "next", "sorted"):
        return any([builtin_object(ctx, a.value, how) for a in expr.args])  # `enumerate(self.seq)`
    if type(expr) is cst.IfExp:  # `lif = self.lif if c else None`
        return any([builtin_object(ctx, branch, how) for branch in (expr.body, expr.orelse)])
    if type(expr) is cst.BooleanOperation:  # `lif = self.lif or None`
        return any([builtin_object(ctx, side, how) for side in (expr.left, expr.right)])
    if type(expr) is cst.Attribute and expr.attr.value in names.ARRAY_READERS:  # `get = self.lif.V.mean`
        if builtin_part(ctx, expr.value):
            shown = ctx.ir.module.code_for_node(expr)
            ctx.report(expr, "BFY213", f"{shown}, a method of a built-in's Variable, {how}: it would be called "
                       "after the example's values it is bound to are gone; call it where you use it "
                       f"({shown}())")
            return True
    if type(expr) is cst.Attribute and expr.attr.value in MODEL_METHODS:  # `step = self.lif.update`
        if builtin_whole(ctx, expr.value) is not None:
            shown = ctx.ir.module.code_for_node(expr)
            ctx.report(expr, "BFY213", f"{shown}, a method of a built-in, {how}: batchify follows a built-in only "
                       f"through self, where each example's Variables are bound, not under another name; call it "
                       f"where you use it ({shown}(x))")
            return True
        return False
    node = expr
    if type(node) is cst.Call and type(node.func) is cst.Attribute and not node.args and \
            node.func.attr.value in ("values", "items"):
        node = node.func.value  # `self.seq.children.values()`
    ref = builtin_whole(ctx, node)
    if ref is None:
        return False
    shown, whole = ctx.ir.module.code_for_node(expr), f"self.{'.'.join((*ref.children, ref.name))}"
    itself = node is expr and type(expr) is not cst.Subscript and not ref.rest  # (not a layer of it)
    what = f"the built-in {whole}" if itself else f"{shown}, of the built-in {whole},"
    if itself and how != "is iterated here":
        way = f"write {whole} where you read or call it ({whole}.V, {whole}(x))"
    else:
        way = (f"write {'each' if itself else 'the'} layer's whole path where you read or call it ({whole}[-1].V, "
               f"{whole}[0](x)), or call {whole}(x), which runs its layers in order")
    if ctx.method.name in ("reset_state", "reset"):
        way = f"reset it whole, {whole}.reset_state(batch_size), which resets each layer"
    ctx.report(expr, "BFY213", f"{what} {how}: batchify follows a built-in only through self, where "
                f"each example's Variables are bound, not under another name; {way}")
    return True


def check_builtin_bindings(ctx: Context, func: cst.FunctionDef) -> None:
    """A built-in bound by ``:=``, iterated in a comprehension, matched, or a default argument
    (``(lif := self.lif)(x)``, ``[l.V for l in self.seq]``, ``match self.lif:``, ``def run(l=self.lif)``):
    the statement forms (``=``, ``for``) are refused where the rewrite meets them; these sit inside
    expressions or other statements, so they are looked for here (BFY213)."""
    for n in walk(func.body):
        if type(n) is cst.NamedExpr:
            builtin_object(ctx, n.value, "is bound to a name here")
        elif type(n) is cst.CompFor:
            builtin_object(ctx, n.iter, "is iterated here")
        elif type(n) is cst.Match:  # `match self.lif: case l: ...`
            builtin_object(ctx, n.subject, "is matched here")
        elif type(n) in (cst.FunctionDef, cst.Lambda):  # `def run(x, l=self.lif)`
            parameters = n.params
            for p in (*parameters.posonly_params, *parameters.params, *parameters.kwonly_params):
                if p.default is not None:
                    builtin_object(ctx, p.default, "is bound to a name here (a default argument)")


def check_stale_closures(ctx: Context, func: cst.FunctionDef) -> None:
    """A function of the method that reads state (``def drive(x): return self.h @ self.u``), called
    inside a loop body: the body carries the state as its own parameter, while ``drive`` reads the
    method's, from before the loop (BFY203)."""
    readers: dict[str, cst.CSTNode] = {}
    for stmt in func.body.body:
        value = stmt if type(stmt) is cst.FunctionDef else None
        if type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1 and type(stmt.body[0]) is cst.Assign \
                and type(stmt.body[0].value) is cst.Lambda and len(stmt.body[0].targets) == 1 \
                and type(stmt.body[0].targets[0].target) is cst.Name:
            value = stmt.body[0]
        if value is None:
            continue
        label = value.name.value if type(value) is cst.FunctionDef else value.targets[0].target.value
        if label in ctx.closures:
            continue
        if any(type(n) is cst.Attribute and (path := self_path(n, ctx.self_name))
               and isinstance(ctx.resolve(path), FieldRef) for n in walk(value)):
            readers[label] = value
    if not readers:
        return
    for body in (s for s in walk(func.body) if type(s) is cst.FunctionDef and s.name.value in ctx.closures):
        for n in walk(body.body):
            if type(n) is cst.Name and n.value in readers:
                ctx.report(n, "BFY203", f"{n.value}() reads state and is called inside {body.name.value}(), a "
                           f"loop or branch body: the body carries the state, while {n.value}() would read it as it "
                           f"was before the loop; define {n.value}() inside {body.name.value}(), or give it the "
                           "values it reads as arguments")
                return


def check_children_as_values(ctx: Context, func: cst.FunctionDef) -> None:
    """``for layer in (self.l1, self.l2): x = layer(x)``: a child (or built-in) gathered into a tuple,
    list, set or dict is called later by another name, as the batched object, inside one example's
    step (BFY213)."""
    for node in walk(func.body):
        if type(node) in (cst.Tuple, cst.List, cst.Set):
            values = [e.value for e in node.elements]
        elif type(node) is cst.Dict:
            values = [e.value for e in node.elements if type(e) is cst.DictElement]
        else:
            continue
        for value in values:
            path = self_path(value, ctx.self_name) if type(value) is cst.Attribute else None
            ref = ctx.resolve(path) if path else None
            child = isinstance(ref, tuple) and not ref[2] or isinstance(ref, LibraryRef) and not ref.rest
            if child:
                ctx.report(value, "BFY213", f"self.{'.'.join(path)}, a model, is gathered into a "
                           f"{type(node).__name__.lower()}: called later by another name, it would step the "
                           "whole batch inside one example's step; call each by its attribute "
                           f"(x = self.{'.'.join(path)}(x), and so on)")
                return


def loop_closures(ir: ModuleIR, func: cst.FunctionDef) -> set[str]:
    """Functions defined in ``func`` and given to BrainPy's control flow as a body: they carry the state."""
    nested = {s.name.value for s in walk(func.body) if type(s) is cst.FunctionDef}
    found = set()
    for node in walk(func.body):
        if type(node) is cst.Call and {q.name for q in ir.qualified.get(node.func, ())} & names.CONTROL_FLOW:
            found |= {n.value for a in node.args for n in walk(a.value)
                      if type(n) is cst.Name and n.value in nested}
    return found


def drop_unused_star_params(func: cst.FunctionDef) -> cst.FunctionDef:
    """``def update(self, *args, **kwargs)`` whose body never reads them takes no arguments."""
    used = Namespace(func.body).used
    params = func.params
    star = params.star_arg
    if type(star) is cst.Param and star.name.value not in used and not params.kwonly_params:
        params = params.with_changes(star_arg=cst.MaybeSentinel.DEFAULT)
    if params.star_kwarg is not None and params.star_kwarg.name.value not in used:
        params = params.with_changes(star_kwarg=None)
    if params.params:
        params = params.with_changes(params=[*params.params[:-1], params.params[-1].with_changes(
            comma=cst.MaybeSentinel.DEFAULT)])
    return func.with_changes(params=params)


def _decorator_names(ir: ModuleIR, decorator: cst.Decorator) -> set[str]:
    """The qualified names of what a decorator applies: ``@f``, ``@f(...)``, ``@functools.partial(f, ...)``."""
    node = decorator.decorator.func if type(decorator.decorator) is cst.Call else decorator.decorator
    found = {q.name for q in ir.qualified.get(node, ())}
    if "functools.partial" in found and type(decorator.decorator) is cst.Call and decorator.decorator.args:
        found = {q.name for q in ir.qualified.get(decorator.decorator.args[0].value, ())}
    return found


def kept_decorator(ir: ModuleIR, decorator: cst.Decorator) -> bool:
    """A decorator the pure method keeps: ``@bp.reset_level(n)``, which orders BrainPy's resets (the
    runtime reads it). ``names.DROPPED_DECORATORS`` are dropped (``@bm.cls_jit``: the batch is jitted
    whole); any other is refused (``check_decorators``)."""
    return bool(_decorator_names(ir, decorator) & names.KEPT_DECORATORS)


def check_decorators(ctx: Context, func: cst.FunctionDef) -> None:
    """BFY216 for a decorator of a stateful method that batchify neither keeps nor knows to be safe to
    drop: the batched code would run the undecorated method, whatever the decorator did."""
    for decorator in func.decorators:
        found = _decorator_names(ctx.ir, decorator)
        if found & (names.KEPT_DECORATORS | names.DROPPED_DECORATORS):
            continue
        shown = ctx.ir.module.code_for_node(decorator.decorator)
        ctx.report(decorator.decorator, "BFY216", f"{ctx.method.name} is decorated with @{shown}, which the "
                   "batched method cannot keep (it may change what the method computes); apply it where the "
                   "model is called, or write what it does into the method")


def _writes_builtin(ctx: Context, node: cst.CSTNode) -> bool:
    """``self.N.V.value = e`` / ``self.N.V += e``: a statement writing a built-in's Variable by its path."""
    if type(node) not in (cst.Assign, cst.AugAssign):
        return False
    targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
    for target in targets:
        while type(target) is cst.Subscript:
            target = target.value
        path = self_path(target, ctx.self_name)
        ref = ctx.resolve(path) if path else None
        if isinstance(ref, LibraryRef) and ref.rest:
            return True
    return False


def check_builtin_locals(ctx: Context, func: cst.FunctionDef, bindings: dict[str, list[tuple[str, object]]]) -> None:
    """``V = self.lif.V`` (the built-in's Variable object, not its ``.value``): the original's name is the
    Variable itself, live, while the batched step reads one example's value where the name is bound. A
    read after a call that may step the built-in reads the chain again there (``ctx.live_names``; main
    read the old value: verify FAIL, 8.7); a write through the name, or ``V.value``, is BFY213, and so is
    a read after such a call of a name this cannot follow (bound in two places, ``V`` on one branch and
    ``V = self.lif2.V`` on the other). ``bindings``: ``local_bindings`` of the method."""
    probe = ExprRewriter(ctx)
    inner = {id(n) for t in walk(func.body) if isinstance(t, _NESTED_SCOPES) for n in walk(t)}
    # Each binding of a local in the method's own code, in order: (the statement, the chain it names
    # where it binds a built-in's Variable object, else None); `W = V` names V's chain.
    held: dict[str, list[tuple[cst.CSTNode, cst.BaseExpression | None]]] = {}
    targets: set[int] = set()

    def variable_object(value: cst.BaseExpression | None) -> cst.BaseExpression | None:
        if type(value) is cst.Name and held.get(value.value):
            return held[value.value][-1][1]
        if type(value) is not cst.Attribute or value.attr.value == "value":
            return None
        path = self_path(value, ctx.self_name)
        ref = ctx.resolve(path) if path else None
        item = called_item(value)  # `self.seq[-1].V`: an attribute of a layer
        return value if (isinstance(ref, LibraryRef) and ref.rest) or (
            item is not None and probe.item_of_builtin(item)) else None

    unfollowable: set[int] = set()
    for n in walk(func.body):
        for child in n.children:
            probe.parents[id(child)] = n

    def unfollowed(value: cst.BaseExpression, whole: bool = False) -> cst.BaseExpression | None:
        """A Variable object in a binding this does not follow (unpacked, chosen, iterated; ``whole``: the
        value of a walrus): a read of the name after a step is refused rather than read stale. An object
        an operation takes (``self.N.V.value``, ``self.N.V * 2``) binds its result, not itself."""
        found = variable_object(value) if whole else next(
            (n for n in walk(value) if type(n) in (cst.Attribute, cst.Name) and variable_object(n) is not None
             and probe.consumed_at(n) is None), None)
        if found is not None:
            unfollowable.add(id(found))
        return found

    for node in walk(func.body):
        if id(node) in inner:
            continue
        kind = type(node)
        if kind is cst.AnnAssign and node.value is None:
            targets.add(id(node.target))  # (`V: T` alone binds nothing, and reads nothing)
            continue
        if kind in (cst.Assign, cst.AnnAssign):
            names = [t.target for t in node.targets] if kind is cst.Assign else [node.target]
            chain = variable_object(node.value)
            if chain is None and (type(node.value) in (cst.IfExp, cst.BooleanOperation) or any(
                    type(t) is not cst.Name for t in names)):
                chain = unfollowed(node.value)  # `V = self.N.V if c else self.M.V`, `V, W = self.N.V, ...`
        elif kind in (cst.For, cst.CompFor, cst.NamedExpr):
            names = [node.target]
            chain = unfollowed(node.value, whole=True) if kind is cst.NamedExpr else unfollowed(node.iter)
        elif kind in (cst.AugAssign, cst.AsName):
            names, chain = [node.target if kind is not cst.AsName else node.name], None
        elif kind is cst.Del:
            names, chain = [node.target], None
        else:
            continue
        for target in names:
            for n in walk(target) if type(target) in (cst.Tuple, cst.List, cst.Name, cst.StarredElement) else ():
                if type(n) is cst.Name:
                    targets.add(id(n))
                    whole = n is target or id(chain) in unfollowable
                    held.setdefault(n.value, []).append((node, chain if whole else None))
    objects = {k: v for k, v in held.items() if any(chain is not None for _, chain in v)}
    if not objects:
        return
    positions = ctx.ir.positions

    def at(node: cst.CSTNode) -> tuple[tuple[int, int], tuple[int, int]] | None:
        span = positions.get(node)
        return ((span.start.line, span.start.column), (span.end.line, span.end.column)) if span else None

    def binds_at(binding: cst.CSTNode) -> tuple[int, int] | None:
        """Where a binding takes effect: after its value (``V = V * 2`` reads the V bound before), at a loop's target."""
        span = at(binding.target if type(binding) in (cst.For, cst.CompFor) else binding)
        return span[1] if span else None

    changes = [span for n in walk(func.body) if (probe.changes_builtins(n) or _writes_builtin(ctx, n))
               and (span := at(n)) is not None]
    loops_of = [n for n in walk(func.body) if type(n) in (cst.For, cst.While)]
    loops = [span for n in loops_of if (span := at(n)) is not None]

    def ancestors(node: cst.CSTNode) -> set[int]:
        out = set()
        while (node := probe.parents.get(id(node))) is not None:
            out.add(id(node))
        return out

    def block_of(binding: cst.CSTNode) -> cst.CSTNode | None:
        """The block a binding statement sits in (a loop's target: the loop)."""
        if type(binding) in (cst.For, cst.CompFor):
            return binding
        line = probe.parents.get(id(binding))  # a statement line, or a one-line suite (`if c: V = ...`)
        return line if type(line) is cst.SimpleStatementSuite else probe.parents.get(id(line))

    skip = {id(n.attr) for n in walk(func.body) if type(n) is cst.Attribute} | targets
    skip |= {id(n.keyword) for n in walk(func.body) if type(n) is cst.Arg and n.keyword is not None}
    through = {id(n.target) for n in walk(func.body) if type(n) is cst.AugAssign}
    through |= {id(n.value) for n in walk(func.body) if type(n) is cst.Attribute and n.attr.value == "value"}
    # (a name a nested scope binds itself, `[V for V in xs]`, `lambda V: V`, is not the method's)
    nested_bound = {n.value for t in walk(func.body) if id(t) in inner for target in (
        [t.target] if type(t) in (cst.CompFor, cst.For, cst.NamedExpr, cst.AugAssign, cst.AnnAssign) else
        [a.target for a in t.targets] if type(t) is cst.Assign else [t.name] if type(t) is cst.Param else [])
        for n in walk(target) if type(n) is cst.Name}
    for node in walk(func.body):
        if type(node) is not cst.Name or node.value not in objects or (id(node) in inner and node.value in nested_bound):
            continue
        where = at(node)
        if where is None:
            continue
        # The binding that reaches the read, where the text says which: the last one before it, in a
        # block around the read, and no binding after it in a loop around the read (the next pass).
        prior = [(b, chain) for b, chain in held[node.value] if (bound_at := binds_at(b)) is not None
                 and bound_at <= where[0]]
        if not prior:
            continue
        around = ancestors(node)
        last, last_chain = prior[-1]
        exact = id(block_of(last)) in around and not any(
            type(loop) in (cst.For, cst.While) and id(loop) in around and (bound_at := binds_at(b)) is not None
            and bound_at > where[0] and any(n is b for n in walk(loop)) for b, _ in held[node.value] for loop in loops_of)
        candidates = [(last, last_chain)] if exact else [(b, chain) for b, chain in prior if chain is not None]
        if not candidates or candidates[-1][1] is None:
            continue
        binding, chain = candidates[-1]
        shown = ctx.ir.module.code_for_node(chain)
        if id(node) in through:
            ctx.report(node, "BFY213", f"{node.value} is bound to {shown}, a built-in's Variable object, and "
                       f"written through or read as .value there: batchify writes and reads a built-in's "
                       f"Variables by their path; write {shown} itself")
            return
        if id(node) in skip:
            continue
        # (read where an operation takes the Variable: `V + self.N(x)` adds the value the call left;
        # handed on whole, `return V`, it is read after everything)
        taken = probe.consumed_at(node)
        read = at(taken)[1] if taken is not None and at(taken) is not None else (10 ** 9, 0)

        def stepped_since(binding: cst.CSTNode) -> bool:
            since = at(binding.target if type(binding) in (cst.For, cst.CompFor) else binding)
            return any(since[1] <= start and end <= read for start, end in changes) or any(
                loop[0] <= where[0] and where[1] <= loop[1] and not (loop[0] <= since[0] and since[1] <= loop[1])
                and any(loop[0] <= start and end <= loop[1] for start, end in changes) for loop in loops)

        if id(node) in inner:
            # read in a lambda, comprehension or nested function: when it runs is not something the text
            # shows here, so any step after the binding may come before it
            if any(since[1] <= start for b, _ in candidates if (since := at(b)) for start, _ in changes):
                ctx.report(node, "BFY213", f"{node.value} is bound to {shown}, a built-in's Variable object, and "
                           f"read inside a lambda, comprehension or nested function after the method may step the "
                           f"built-in: the original reads the Variable as the step left it; read {shown} itself "
                           f"there, or bind {node.value} = {shown}.value where you mean the value it had")
                return
        elif id(chain) in unfollowable:
            if any(stepped_since(b) for b, _ in candidates):
                ctx.report(node, "BFY213", f"{node.value} is bound to {shown}, a built-in's Variable object, by "
                           f"unpacking, a choice, a loop or :=, and read after a call that may step the built-in: "
                           f"the original reads the Variable as that call left it; read {shown} itself there, or "
                           f"bind {node.value} = {shown}.value where you mean the value it had")
                return
        elif exact or len(held[node.value]) == 1 and len(bindings.get(node.value, ())) == 1:
            # (`self.seq[i].V` with `i` bound again in the method: the chain, read again here, may pick another layer)
            attributes = {id(n.attr) for n in walk(chain) if type(n) is cst.Attribute}
            moved = sorted({n.value for n in walk(chain) if type(n) is cst.Name and id(n) not in attributes
                            and len(bindings.get(n.value, ())) > 1})
            if moved:
                ctx.unfollowed_objects.add(id(node))
            else:
                ctx.object_names[id(node)] = chain
            if stepped_since(binding):
                if moved:
                    ctx.report(node, "BFY213", f"{node.value} is bound to {shown}, a built-in's Variable object, "
                               f"and read after a call that may step the built-in, where batchify reads the path "
                               f"again; {', '.join(moved)} in it is bound again in the method, so the path may pick "
                               f"another layer there: read {shown} itself there with the index it means, or bind "
                               f"{node.value} = {shown}.value where you mean the value it had")
                    return
                ctx.live_names[id(node)] = chain
        elif any(stepped_since(b) for b, _ in candidates):
            ctx.report(node, "BFY213", f"{node.value} is bound to {shown}, a built-in's Variable object, and bound "
                       f"again elsewhere, and read after a call that may step the built-in: the original reads "
                       f"the Variable as that call left it, and batchify cannot follow which binding reaches here; "
                       f"read {shown} itself there, or bind {node.value} = {shown}.value where you mean the "
                       "value it had")
            return


def rewrite_method(ir: ModuleIR, cls: ModelClass, method: Method) -> tuple[cst.FunctionDef, list[Diagnostic]]:
    """The pure single-example version of a stateful method, named ``<method>_pure``."""
    func = method.node
    ns = Namespace(func)
    self_name = self_name_of(func) or "self"
    ctx = Context(ir, cls, method, self_name, ns.fresh("params"), ns.fresh("state"), ns)
    func = drop_unused_star_params(func)
    if func.params.star_kwarg is not None or func.params.posonly_params:
        ctx.report(func.name, "BFY207", f"{method.name}() touches state and has **kwargs or positional-only "
                   "parameters; give it plain parameters (and *args if need be)")
        return func, ctx.diagnostics
    if method.kind == "property" and method.name in cls.readers:
        pass  # read in place where it is used (``property_read``): its pure twin, without @property
    elif method.kind == "property":
        builtins = sorted(method.reads & set(ir.all_libraries(cls)))
        why = (f"reads the built-in self.{builtins[0]}, held as library code (its values are bound per call)"
               if builtins and not (method.writes or method.draws) else
               "changes state (or draws random numbers): a property is read, not called, so nothing threads "
               "what it changes")
        ctx.report(func.name, "BFY208", f"{method.name} is a property that {why}; make it a method "
                   f"(def {method.name}(self): ...) and call it, self.{method.name}()")
    elif method.kind != "method":
        ctx.report(func.name, "BFY208", f"{method.name} is a {method.kind} that touches state; make it a method")
    else:
        check_decorators(ctx, func)
    ctx.closures = loop_closures(ir, func)
    def field_of(expr: cst.BaseExpression) -> FieldRef | None:  # `self.V`, `self.c.V`, `self.xs`
        path = self_path(expr, ctx.self_name)
        ref = ctx.resolve(path) if path else None
        return ref if isinstance(ref, FieldRef) else None

    bindings = local_bindings(func)
    ctx.masks = mask_locals(bindings)
    ctx.items = item_locals(bindings, lambda e: bool((ref := field_of(e)) and ref.container))
    ctx.shares_state = state_sharing_updates(func, lambda e: field_of(e) is not None)
    check_stale_closures(ctx, func)
    check_children_as_values(ctx, func)
    check_builtin_locals(ctx, func, bindings)
    check_builtin_bindings(ctx, func)
    body = MethodRewriter(ctx).block(func.body.body)
    if not body or not isinstance(body[-1], cst.SimpleStatementLine) or not isinstance(body[-1].body[-1], (cst.Return, cst.Raise)):
        body.append(return_state(ctx))
    params = list(func.params.params)
    new_params = [params[0], cst.Param(name(ctx.params)), cst.Param(name(ctx.state)), *params[1:]]
    new_params = [p.with_changes(comma=cst.MaybeSentinel.DEFAULT) for p in new_params]
    pure = func.with_changes(
        name=name(pure_name(method.name)),
        params=func.params.with_changes(params=new_params),
        decorators=[d for d in func.decorators if kept_decorator(ir, d)],
        returns=None,
        body=func.body.with_changes(body=body),
        leading_lines=[],
    )
    if any(type(n) is cst.FormattedString for n in walk(func)):
        pure = pure.visit(FStringQuotes())
    return pure, ctx.diagnostics


class _ExampleReads(Transformer):
    """In a derivative property handed to an integrator: ``self.v`` (a state Variable, ``.value``
    dropped) reads ``self._example.state.v``, ``self.w`` (a weight) ``self._example.params.w``."""

    def __init__(self, ctx: Context):
        super().__init__()
        self.ctx = ctx

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        path = self_path(original_node, self.ctx.self_name)
        if not path:
            return updated_node
        ref = self.ctx.resolve(path)
        if not isinstance(ref, FieldRef) or ref.rest:
            return updated_node  # `self.v.shape`: its inner `self.v` was rewritten already
        root = "state" if ref.kind == "state" else "params"
        return attr(name(self.ctx.self_name), "_example", root, *ref.children, ref.name)


def rewrite_context_property(ir: ModuleIR, cls: ModelClass, method: Method) -> tuple[cst.FunctionDef, list[Diagnostic]]:
    """A property that builds an integrator's derivatives (lambdas reading state): the same property,
    its state and weight reads taken from the example the integrator is called for (``bfy.one_example``)."""
    func = method.node
    self_name = self_name_of(func) or "self"
    ctx = Context(ir, cls, method, self_name, "params", "state", Namespace(func))
    built_ins = [n for n in walk(func.body) if type(n) is cst.Attribute
                 and (p := self_path(n, self_name)) and isinstance(ctx.resolve(p), LibraryRef)]
    if built_ins:
        ctx.report(built_ins[0], "BFY208", f"{method.name} reads a built-in's Variable in a derivative handed to an "
                   "integrator; read it in the stepping method and pass it as an argument")
    body = func.body.visit(_DropValue(self_name, ctx)).visit(_ExampleReads(ctx))
    return func.with_changes(body=body), ctx.diagnostics


class _DropValue(Transformer):
    """``self.v.value`` -> ``self.v`` for a field, so that ``_ExampleReads`` sees one form."""

    def __init__(self, self_name: str, ctx: Context):
        super().__init__()
        self.self_name, self.ctx = self_name, ctx

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        if original_node.attr.value == "value":
            path = self_path(original_node.value, self.self_name)
            if path and isinstance(self.ctx.resolve(path), FieldRef):
                return updated_node.value
        return updated_node


def is_mask(node: cst.BaseExpression, masks: frozenset[str] = frozenset()) -> bool:
    """A boolean mask as written: a comparison, or ``~``, ``&``, ``|``, ``^`` of masks (``(V > a) & ~r``),
    or a local of ``masks`` (``spike = V >= th``)."""
    if type(node) is cst.Comparison:
        return True
    if type(node) is cst.Name:
        return node.value in masks
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.BitInvert:
        return is_mask(node.expression, masks)
    if type(node) is cst.BinaryOperation and type(node.operator) in (cst.BitAnd, cst.BitOr, cst.BitXor):
        return is_mask(node.left, masks) or is_mask(node.right, masks)
    return False


_NESTED_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef, *COMPREHENSIONS)


def outside_functions(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The nodes under ``node`` outside nested functions, lambdas and classes (their returns are theirs)."""
    inner = {id(n) for s in walk(node) if type(s) in (cst.FunctionDef, cst.Lambda, cst.ClassDef)
             and s is not node for n in walk(s)}
    return [n for n in walk(node) if id(n) not in inner]


def local_bindings(func: cst.FunctionDef) -> dict[str, list[tuple[str, object]]]:
    """Every binding of each local name of ``func``: ``("assign", value)`` for ``name = value`` in the
    method's own scope, ``("loop", (iter, position))`` for a loop target (``for name in it``: position
    None; ``for i, name in it``: 1), ``("other", None)`` for any other (a parameter, unpacking, ``+=``,
    a ``with`` target, a walrus, a nested function's own assignment, ``global``)."""
    out: dict[str, list[tuple[str, object]]] = {}

    def add(name: str, kind: str, payload: object = None) -> None:
        out.setdefault(name, []).append((kind, payload))

    def others(target: cst.CSTNode) -> None:
        if type(target) not in (cst.Subscript, cst.Attribute):  # those write into an object, binding nothing
            for n in walk(target):
                if type(n) is cst.Name:
                    add(n.value, "other")

    nested = {id(n) for s in walk(func.body) if isinstance(s, _NESTED_SCOPES) for n in walk(s)}
    for p in walk(func.params):
        if type(p) is cst.Param:
            add(p.name.value, "other")
    for node in walk(func.body):
        kind = type(node)
        if kind is cst.Assign:
            for t in node.targets:
                if type(t.target) is cst.Name and id(node) not in nested:
                    add(t.target.value, "assign", node.value)
                else:
                    others(t.target)
        elif kind is cst.AnnAssign and type(node.target) is cst.Name and node.value is not None and id(node) not in nested:
            add(node.target.value, "assign", node.value)
        elif kind in (cst.For, cst.CompFor):
            target = node.target
            if type(target) is cst.Name:
                add(target.value, "loop", (node.iter, None))
            elif (type(target) in (cst.Tuple, cst.List) and len(target.elements) == 2
                  and all(type(e.value) is cst.Name for e in target.elements)):
                add(target.elements[0].value.value, "other")
                add(target.elements[1].value.value, "loop", (node.iter, 1))
            else:
                others(target)
        elif kind in (cst.AnnAssign, cst.AugAssign):
            others(node.target)
        elif kind is cst.NamedExpr:
            others(node.target)
        elif kind is cst.AsName:
            others(node.name)
        elif kind in (cst.Global, cst.Nonlocal):
            for n in node.names:
                add(n.name.value, "other")
        elif kind in (cst.FunctionDef, cst.ClassDef):
            add(node.name.value, "other")
        elif kind is cst.Param:
            add(node.name.value, "other")
        elif kind in (cst.MatchAs, cst.MatchStar) and node.name is not None:
            others(node.name)
    return out


def mask_locals(bindings: dict[str, list[tuple[str, object]]]) -> frozenset[str]:
    """The locals that hold a boolean mask wherever they are read: every binding of the name in the
    method is ``name = <mask>`` (``spike = V >= th``, ``m = spike & ~ref``), so that ``self.V[spike] = 0.``
    is the masked write it looks like (``bindings``: ``local_bindings`` of the method)."""
    masks = {n for n, bs in bindings.items() if all(kind == "assign" for kind, _ in bs)}
    while True:  # a mask built from another local is one only if that local is
        kept = {n for n in masks if all(is_mask(v, frozenset(masks)) for _, v in bindings[n])}
        if kept == masks:
            return frozenset(kept)
        masks = kept


def state_sharing_updates(func: cst.FunctionDef, is_field: Callable[[cst.BaseExpression], bool]) -> frozenset[int]:
    """The ``r *= g`` (ids of AugAssign nodes) whose local may hold the very object the batched state
    holds: bound from a field (``out = self.r.value``) or written into one (``self.r.value = r``) before
    it, or anywhere in a loop around it. In the batched code that object may be a BrainPy Array (what
    ``bm`` functions return), which ``*=`` changes in place; the original's Variable holds its own
    jax Array (its setter unwraps). ``is_field(expr)``: ``self.V`` / ``self.c.V``."""
    def field(expr: cst.BaseExpression) -> bool:
        if type(expr) is cst.Attribute and expr.attr.value == "value":
            expr = expr.value
        return is_field(expr)

    nodes = walk(func.body)
    order = {id(n): i for i, n in enumerate(nodes)}
    shared: dict[str, list[int]] = {}  # local -> where it comes to share an object with the state
    for node in nodes:
        if type(node) is cst.Assign:
            names = []
            if type(node.value) is cst.Name and any(field(t.target) for t in node.targets):
                names.append(node.value.value)
            if field(node.value):
                names += [t.target.value for t in node.targets if type(t.target) is cst.Name]
            for n in names:
                shared.setdefault(n, []).append(order[id(node)])
    loops = [(order[id(n)], order[id(n)] + len(walk(n))) for n in nodes if type(n) in (cst.For, cst.While)]
    out = set()
    for node in nodes:
        if type(node) is cst.AugAssign and type(node.target) is cst.Name and node.target.value in shared:
            at = order[id(node)]
            around = [(lo, hi) for lo, hi in loops if lo < at < hi]
            if any(i < at or any(lo < i < hi for lo, hi in around) for i in shared[node.target.value]):
                out.add(id(node))
    return frozenset(out)


def item_locals(bindings: dict[str, list[tuple[str, object]]], container: Callable[[cst.BaseExpression], bool]
                ) -> frozenset[str]:
    """The locals that hold an item of a bm.VarList / VarDict field wherever they are read, the
    Variable object in the original and its value in the batched code: every binding is ``t =
    self.xs[i]``, ``for t in self.xs`` / ``self.d.values()``, ``for i, t in enumerate(self.xs)`` or ``for
    k, t in self.d.items()`` (``container(expr)``: whether ``expr`` is such a field). Its ``t.value``
    reads the item's value: ``t`` itself in the batched code."""

    def item_of(kind: str, payload) -> bool:
        if kind == "assign":
            return type(payload) is cst.Subscript and container(payload.value)
        if kind != "loop":
            return False
        iterated, position = payload
        call = iterated if type(iterated) is cst.Call and not iterated.args else None
        if position is None:
            if call is not None and type(call.func) is cst.Attribute and call.func.attr.value == "values":
                return container(call.func.value)
            return container(iterated)
        if type(iterated) is cst.Call and type(iterated.func) is cst.Name and iterated.func.value == "enumerate":
            return len(iterated.args) == 1 and container(iterated.args[0].value)
        return call is not None and type(call.func) is cst.Attribute and call.func.attr.value == "items" and container(
            call.func.value)

    return frozenset(n for n, bs in bindings.items() if all(item_of(kind, payload) for kind, payload in bs))


class _HolderCalls(Transformer):
    """In a pure method: a statement calling an integrator that holds state-reading derivatives
    (``V = self.integral(...)``) runs ``with bfy.one_example(self, params, state):``; one calling a
    function stored on self that reads its fields (``x = self.f(x)``), ``with bfy.example_values(...)``."""

    def __init__(self, self_name: str, holders: frozenset[str], params: str, state: str,
                 context: str = "one_example"):
        super().__init__()
        self.self_name, self.holders, self.params, self.state = self_name, holders, params, state
        self.context = context
        self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth += 1
        return self.depth == 1  # nested functions (loop bodies) keep their own state names

    def leave_FunctionDef(self, original_node, updated_node):
        self.depth -= 1
        return updated_node

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine,
                                  updated_node: cst.SimpleStatementLine):
        # `self.integral(...)`, or the integrator handed on (`bfy.with_rng(state, self.integral, ...)`, an sdeint)
        if not any(type(n) is cst.Attribute and (p := self_path(n, self.self_name)) and len(p) == 1
                   and p[0] in self.holders for n in walk(updated_node)):
            return updated_node
        item = cst.WithItem(cst.Call(runtime(self.context), [cst.Arg(name(v)) for v in
                                                            (self.self_name, self.params, self.state)]))
        return cst.With([item], cst.IndentedBlock([updated_node.with_changes(leading_lines=[])]),
                        leading_lines=updated_node.leading_lines)


def with_example_for_holders(pure: cst.FunctionDef, cls: ModelClass,
                             bound: frozenset[str] = frozenset()) -> cst.FunctionDef:
    """``pure`` (a ``*_pure`` method) with its integrator calls, and its calls of functions stored on
    self that read its fields (``bound``, the class's and its bases'), given the example they run for."""
    params = [p.name.value for p in pure.params.params[:3]]
    if cls.holders:
        pure = pure.visit(_HolderCalls(*params[:1], cls.holders, *params[1:]))
    if bound:
        pure = pure.visit(_HolderCalls(*params[:1], bound, *params[1:], context="example_values"))
    return pure
