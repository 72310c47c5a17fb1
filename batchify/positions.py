"""Source positions of every node of a module, as LibCST's PositionProvider gives them, at the cost
of one code generation.

LibCST's provider splits every token on newlines to keep a line and a column current, and builds two
``CodePosition`` objects per node: at 10,000 lines that was 3.6 s of a 25 s transform. Here the code
generation keeps one character offset, each node records its ``(start, end)`` offsets (syntactic,
as PositionProvider's: a statement's range leaves out its leading lines and indentation), and a
``CodeRange`` is made from the offsets only for the nodes that are asked about (diagnostics,
provenance comments, the statement lookup).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Mapping

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst._position import CodePosition, CodeRange

NEWLINE = re.compile(r"\r\n?|\n")  # what LibCST's position provider counts as a line break


class _OffsetState(CodegenState):
    """Code generation that records each node's syntactic start and end offsets in ``computed``."""

    def __init__(self, module: cst.Module):
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.offset = 0
        self.computed: dict[cst.CSTNode, tuple[int, int]] = {}
        self.starts: list[int] = []
        self.popped = ""

    def pop_trailing_newline(self) -> None:
        # The module drops its last newline after counting it: lines are counted with it.
        if self.tokens:
            self.popped = self.tokens.pop()

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self.offset += len(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.starts.append(self.offset)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self.starts.pop()
        if node not in self.computed:  # a syntactic range recorded inside wins, as in LibCST
            self.computed[node] = (start, self.offset)

    def record_syntactic_position(self, node, *, start_node=None, end_node=None) -> _Syntactic:
        return _Syntactic(self, node, start_node, end_node)


class _Syntactic:
    """``with state.record_syntactic_position(node, ...)``: the node's range without the whitespace it owns."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: _OffsetState, node, start_node, end_node):
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = self.state.offset

    def __exit__(self, *exc) -> bool:
        computed = self.state.computed
        start = computed[self.start_node][0] if self.start_node is not None else self.start
        end = computed[self.end_node][1] if self.end_node is not None else self.state.offset
        computed[self.node] = (start, end)
        return False


class Positions(Mapping):
    """``node -> CodeRange`` for every node of ``module`` (lines from 1, columns from 0, as LibCST),
    and for the nodes normalisation makes, at the place of the node each replaces (``inherit``)."""

    def __init__(self, module: cst.Module):
        state = _OffsetState(module)
        module._codegen(state)
        self.offsets = state.computed
        code = "".join(state.tokens) + state.popped
        self.line_starts = [0, *(m.end() for m in NEWLINE.finditer(code))]
        self.extra: dict[cst.CSTNode, CodeRange] = {}

    def _position(self, offset: int) -> CodePosition:
        line = bisect.bisect_right(self.line_starts, offset) - 1
        return CodePosition(line + 1, offset - self.line_starts[line])

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        found = self.extra.get(node)
        if found is not None:
            return found
        start, end = self.offsets[node]
        return CodeRange(self._position(start), self._position(end))

    def __contains__(self, node: object) -> bool:
        return node in self.extra or node in self.offsets

    def __iter__(self) -> Iterator[cst.CSTNode]:
        yield from self.extra
        yield from (node for node in self.offsets if node not in self.extra)

    def __len__(self) -> int:
        return len(self.offsets) + sum(node not in self.offsets for node in self.extra)

    def inherit(self, new: cst.CSTNode, old: cst.CSTNode) -> None:
        if old in self:
            self.extra[new] = self[old]
