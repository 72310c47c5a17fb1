"""Tree helpers shared by analysis, aliases and rewrite: one iterative pre-order walk over a
LibCST tree, ``self`` attribute paths, and the names an assignment writes.

LibCST's ``node.children`` runs a visitor to collect them, and a recursive generator re-yields each
node through every level above it (quadratic on deep trees); reading the dataclass fields of each
node type (cached) visits the same nodes, statements in source order, in linear time. The walk
leaves out formatting (whitespace, comments, parentheses, commas, dots, colons): more than half the
nodes of a typical statement, and nothing a rule reads.
"""

from __future__ import annotations

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


def _node_types(annotation) -> list[type]:
    """The CSTNode classes an annotation names (``Sequence[Union[A, B]]`` -> ``[A, B]``)."""
    if isinstance(annotation, type):
        return [annotation] if issubclass(annotation, cst.CSTNode) else []
    return [t for arg in typing.get_args(annotation) for t in _node_types(arg)]


def _child_fields(node_type: type) -> tuple[str, ...]:
    names = _FIELDS.get(node_type)
    if names is None:
        hints = typing.get_type_hints(node_type)
        names = _FIELDS[node_type] = tuple(
            f.name for f in dataclasses.fields(node_type)
            if not all(issubclass(t, FORMATTING) for t in _node_types(hints[f.name])))
    return names


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and every node below it, parents before children, siblings in field order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        children: list[cst.CSTNode] = []
        for name in _child_fields(type(current)):
            value = getattr(current, name)
            if isinstance(value, cst.CSTNode):
                children.append(value)
            elif isinstance(value, (list, tuple)):
                children.extend(item for item in value if isinstance(item, cst.CSTNode))
        stack.extend(reversed(children))


def self_path(node: cst.BaseExpression, self_name: str) -> list[str] | None:
    """``self.a.b`` -> ``["a", "b"]``; None when the chain does not start at ``self``."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name) and node.value == self_name and parts:
        return parts[::-1]
    return None


def assigned(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """What an ``Assign`` / ``AugAssign`` writes, unpacking one level of tuples and lists:
    ``a.value, b[i] = ...`` -> ``[a.value, b[i]]``."""
    if isinstance(node, cst.AugAssign):
        targets = [node.target]
    elif isinstance(node, cst.Assign):
        targets = [t.target for t in node.targets]
    else:
        return []
    out = []
    for t in targets:
        for el in (t.elements if isinstance(t, (cst.Tuple, cst.List)) else [t]):
            out.append(el.value if isinstance(el, (cst.Element, cst.StarredElement)) else el)
    return out
