"""Tree helpers shared by analysis, aliases and rewrite: one iterative pre-order walk over a
LibCST tree, ``self`` attribute paths, and the names an assignment writes.

LibCST's ``node.children`` runs a visitor to collect them, and a recursive generator re-yields each
node through every level above it (quadratic on deep trees); reading the dataclass fields of each
node type (cached) visits the same nodes, statements in source order, in linear time. The walk
leaves out formatting (whitespace, comments, parentheses, commas, dots, colons): more than half the
nodes of a typical statement, and nothing a rule reads.

Node tests on hot paths here and in analysis and rewrite read ``type(node) is cst.Name`` rather
than ``isinstance``: LibCST's node classes are ABCs, whose ``isinstance`` goes through
``ABCMeta.__instancecheck__`` (a fifth of a transform), and its concrete node classes have no
subclasses, so the two tests agree.
"""

from __future__ import annotations

import contextlib
import dataclasses
import typing
from collections.abc import Iterator

import libcst as cst

# Nodes that only format code; the fields declared to hold only these (or no nodes) are not walked.
FORMATTING = (
    cst.BaseParenthesizableWhitespace, cst.EmptyLine, cst.Newline, cst.TrailingWhitespace, cst.Comment,
    cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace,
    cst.RightCurlyBrace, cst.Comma, cst.Dot, cst.Semicolon, cst.Colon, cst.AssignEqual,
)
_FIELDS: dict[type, tuple[str, ...]] = {}
_IS_NODE: dict[type, bool] = {}  # isinstance(x, cst.CSTNode) goes through ABCMeta: a dict is faster


def derives(kind: type, bases: tuple[type, ...]) -> bool:
    """``issubclass(kind, bases)`` for LibCST's node classes, read from the MRO. LibCST registers no
    virtual subclasses, so the two agree; ``issubclass`` against an ABC fills its caches by walking
    every subclass of the ABC, a tenth of a cold transform."""
    return any(base in bases for base in kind.__mro__)


def is_node(value: object) -> bool:
    """``isinstance(value, cst.CSTNode)``, answered per type from a dict."""
    kind = type(value)
    known = _IS_NODE.get(kind)
    if known is None:
        known = _IS_NODE[kind] = derives(kind, (cst.CSTNode,))
    return known


def _node_types(annotation) -> list[type]:
    """The CSTNode classes an annotation names (``Sequence[Union[A, B]]`` -> ``[A, B]``)."""
    if isinstance(annotation, type):
        return [annotation] if derives(annotation, (cst.CSTNode,)) else []
    return [t for arg in typing.get_args(annotation) for t in _node_types(arg)]


def _resolved(annotation) -> bool:
    """Whether an annotation names no class by a string, at any depth."""
    if isinstance(annotation, (str, typing.ForwardRef)):
        return False
    return all(map(_resolved, typing.get_args(annotation)))


def child_fields(node_type: type) -> tuple[str, ...]:
    """The fields of ``node_type`` that can hold a node other than formatting, in field order."""
    names = _FIELDS.get(node_type)
    if names is None:
        fields = dataclasses.fields(node_type)
        # Most of LibCST's annotations are objects already; resolve them (slow) only where one names
        # a class by a string (``Sequence["MatchCase"]``).
        hints = ({f.name: f.type for f in fields} if all(map(_resolved, (f.type for f in fields)))
                 else typing.get_type_hints(node_type))
        names = _FIELDS[node_type] = tuple(
            f.name for f in fields
            if not all(derives(t, FORMATTING) for t in _node_types(hints[f.name])))
    return names


# Within ``walks_kept()`` (a transform), each node's walk is kept: analysis and rewrite walk the
# same method a dozen times (names, aliases, reads, loop bodies). Outside it nothing is kept.
_KEPT: dict[int, tuple[cst.CSTNode, list[cst.CSTNode]]] | None = None


@contextlib.contextmanager
def walks_kept() -> Iterator[None]:
    """Keep each node's walk until the block ends (an enclosing block keeps them if there is one)."""
    global _KEPT
    if _KEPT is not None:
        yield
        return
    _KEPT = {}
    try:
        yield
    finally:
        _KEPT = None


def walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node`` and every node below it, parents before children, siblings in field order."""
    kept = _KEPT
    if kept is not None:
        found = kept.get(id(node))
        if found is not None and found[0] is node:
            return found[1]
    nodes = list(_walk(node))
    if kept is not None:
        kept[id(node)] = (node, nodes)  # holding the node keeps its id from being reused
    return nodes


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    is_node = _IS_NODE
    while stack:
        current = stack.pop()
        yield current
        children = []
        for name in _FIELDS.get(type(current)) or child_fields(type(current)):
            value = getattr(current, name)
            kind = type(value)
            if kind is tuple or kind is list:  # a sequence field holds only nodes
                children.extend(value)
                continue
            known = is_node.get(kind)
            if known is None:
                known = is_node[kind] = derives(kind, (cst.CSTNode,))
            if known:
                children.append(value)
        stack.extend(reversed(children))


def param_names(params: cst.Parameters) -> set[str]:
    """The names a function's or lambda's parameters bind, ``*args`` and ``**kwargs`` included."""
    return {q.name.value for q in (*params.posonly_params, *params.params, *params.kwonly_params)} | {
        q.name.value for q in (params.star_arg, params.star_kwarg) if type(q) is cst.Param}


def self_path(node: cst.BaseExpression, self_name: str) -> list[str] | None:
    """``self.a.b`` -> ``["a", "b"]``; None when the chain does not start at ``self``."""
    parts: list[str] = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is cst.Name and node.value == self_name and parts:
        return parts[::-1]
    return None


def assigned(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """What an ``Assign`` / ``AugAssign`` writes, unpacking one level of tuples and lists:
    ``a.value, b[i] = ...`` -> ``[a.value, b[i]]``."""
    if type(node) is cst.AugAssign:
        targets = [node.target]
    elif type(node) is cst.Assign:
        targets = [t.target for t in node.targets]
    else:
        return []
    out = []
    for t in targets:
        for el in (t.elements if type(t) in (cst.Tuple, cst.List) else [t]):
            out.append(el.value if type(el) in (cst.Element, cst.StarredElement) else el)
    return out


_CODE = cst.Module([])


def field_text(field: cst.FormattedStringExpression) -> str:
    """The text a self-documenting field ``{expr=}`` prints in front of its value: all of it up to its
    conversion or format spec, whitespace included."""
    return "".join(_CODE.code_for_node(n) for n in (
        field.whitespace_before_expression, field.expression, field.equal, field.whitespace_after_expression))


def _literal(text: str, fstring: cst.FormattedString) -> str:
    """``text`` as the literal part of ``fstring`` that prints what Python prints for it: braces
    doubled, the string's own quote escaped (an expression may hold it on Python 3.12), backslashes as
    they are (CPython decodes the escapes of a field's text as it does a literal's)."""
    text = text.replace("{", "{{").replace("}", "}}")
    quote = fstring.start[len(fstring.prefix)]
    return text if "r" in fstring.prefix.lower() else text.replace(quote, "\\" + quote)


def unprintable(text: str, fstring: cst.FormattedString) -> str | None:
    """Why ``text``, a self-documenting field's (``f"{self.V.shape=}"``), cannot become a literal of
    ``fstring`` that prints as Python prints it, or None: across lines (it holds the block's indentation),
    with a backslash (CPython decodes its escapes, ``\\N{...}`` included), the raw string's own quote, or
    ``!=`` (which Python 3.12.1 takes for a conversion)."""
    quote = fstring.start[len(fstring.prefix)]
    raw = "r" in fstring.prefix.lower()
    return ("spans lines" if "\n" in text else "holds a backslash" if "\\" in text else
            "holds the raw string's own quote" if raw and quote in text else
            "holds != (Python 3.12.1 reads a conversion there)" if "!=" in text else None)


class Transformer(cst.CSTTransformer):
    """LibCST's transformer at less cost per node, for the rewrites here, none of which changes
    formatting or is written per field: a formatting node's children are not visited (it is kept as
    it is), the per-field hooks do nothing, and each node type's ``visit_``/``leave_`` method is
    looked up once per class rather than by name at every node."""

    _methods: dict[type, dict[type, tuple]] = {}

    def _for(self, kind: type) -> tuple:
        table = Transformer._methods.setdefault(type(self), {})
        found = table.get(kind)
        if found is None:
            name = kind.__name__
            found = table[kind] = (getattr(type(self), f"visit_{name}", None),
                                   getattr(type(self), f"leave_{name}", None), derives(kind, FORMATTING))
        return found

    def on_visit(self, node: cst.CSTNode) -> bool:
        visit, _, formatting = self._for(type(node))
        if formatting:
            return False
        return visit is None or visit(self, node) is not False

    def on_leave(self, original_node, updated_node):
        leave = self._for(type(original_node))[1]
        return updated_node if leave is None else leave(self, original_node, updated_node)

    def leave_FormattedString(self, original_node: cst.FormattedString,
                              updated_node: cst.FormattedString) -> cst.FormattedString:
        """A self-documenting field (``f"{self.V.shape=}"``) prints its expression's text: where a
        rewrite changed the expression, the text the user wrote becomes literal text in front of the
        rewritten field, with the conversion ``=`` implies (``!r`` unless a format spec is given)."""
        parts: list[cst.BaseFormattedStringContent] = []
        changed = False
        for before, after in zip(original_node.parts, updated_node.parts, strict=True):
            if (type(before) is not cst.FormattedStringExpression or before.equal is None
                    or after.expression.deep_equals(before.expression)):
                parts.append(after)
                continue
            changed = True
            why = unprintable(field_text(before), original_node)
            if why is not None:
                self.unprintable_field(before, why)
            parts.append(cst.FormattedStringText(_literal(field_text(before), updated_node)))
            parts.append(after.with_changes(
                equal=None, whitespace_before_expression=cst.SimpleWhitespace(""),
                whitespace_after_expression=cst.SimpleWhitespace(""),
                conversion=after.conversion or (None if after.format_spec is not None else "r")))
        return updated_node.with_changes(parts=parts) if changed else updated_node

    def unprintable_field(self, node: cst.FormattedStringExpression, why: str) -> None:
        """A self-documenting field whose expression changed, and whose text a literal cannot hold as
        Python prints it (``unprintable``): a rewriter that reports diagnostics says so here."""

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        pass

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass
