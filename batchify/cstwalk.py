"""One iterative pre-order walk over a LibCST tree, shared by analysis, aliases and rewrite.

LibCST's ``node.children`` runs a visitor to collect them, and a recursive generator re-yields each
node through every level above it (quadratic on deep trees); reading the dataclass fields of each
node type (cached) visits the same nodes, statements in source order, in linear time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import libcst as cst

_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(node_type: type) -> tuple[str, ...]:
    names = _FIELDS.get(node_type)
    if names is None:
        names = _FIELDS[node_type] = tuple(f.name for f in dataclasses.fields(node_type))
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
