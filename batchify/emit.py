"""Stage 4: emit. Lay out the code the rewrite stage decided (``ir.ModuleCode``) with the Jinja
templates in ``templates/``: they hold layout, never decisions. One Environment, built in one place.
"""

from __future__ import annotations

import functools
import io
import os
import sys
import tokenize

import jinja2

from batchify import __version__
from batchify.ir import ModuleCode
from batchify.names import pure_name
from batchify.provenance import stamp, template_dir

LINE_LENGTH = 100


def indent_lines(text: str, width: int = 4, first: bool = False, blank: bool = False) -> str:
    """Jinja's ``indent`` filter, splitting at ``\n`` only: ``str.splitlines`` also splits at a form
    feed, U+2028 and other separators that may stand inside the user's strings and comments. A line
    that goes on a string from the line before (``s = \"\"\"`` then ``abc``) is part of its value: as
    it is."""
    pad = " " * width if isinstance(width, int) else str(width)
    lines = (text + "\n").split("\n")[:-1]
    inside = string_lines(text)
    out = lines[0] + "".join("\n" + (pad + line if (line or blank) and i not in inside else line)
                             for i, line in enumerate(lines[1:], 1))
    return pad + out if first else out


def string_lines(code: str) -> set[int]:
    """The lines of ``code`` (0-based) that a string begun on an earlier line goes on over: a triple-quoted
    string's, an f-string's, or one continued with a backslash."""
    inside: set[int] = set()
    starts: list[int] = []  # (f-strings come as pieces on Python 3.12: from FSTRING_START to FSTRING_END)
    fstring_start = getattr(tokenize, "FSTRING_START", None)
    fstring_end = getattr(tokenize, "FSTRING_END", None)
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == fstring_start:
                starts.append(token.start[0])
            elif token.type == fstring_end and starts:
                inside.update(range(starts.pop(), token.end[0]))
            elif token.type == tokenize.STRING:
                inside.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        return inside  # (not Python, or cut short: the strings before that point)
    return inside


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        bytecode_cache=template_cache(),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["indent"] = indent_lines
    env.filters["pure"] = pure_name  # `{{ h.method | pure }}`: __call__'s pure twin is call_pure
    env.globals["class_header"] = class_header
    return env


class _QuietCache(jinja2.FileSystemBytecodeCache):
    """A cache that cannot be written is no cache: the templates are compiled as before."""

    def dump_bytecode(self, bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


def template_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between processes: compiling them took 12 ms of every hook or IDE
    call. Jinja's own cache, in its own per-user folder (``/tmp/_jinja2-cache-UID``), keyed by each
    template's source checksum, so an edited template is compiled again; none when Python writes
    no bytecode either (``PYTHONDONTWRITEBYTECODE``)."""
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return None
    try:
        return _QuietCache()
    except (OSError, RuntimeError):  # the folder cannot be made, or is not ours (Jinja's RuntimeError)
        return None


def class_header(name: str, bases: tuple[str, ...] | list[str], limit: int = LINE_LENGTH) -> str:
    """``class Name(base, ..., key=value):``, split as black splits it when it would pass ``limit``."""
    flat = f"class {name}({', '.join(bases)}):"
    if len(flat) <= limit:
        return flat
    inner = f"    {', '.join(bases)}"
    if len(inner) <= limit:
        return f"class {name}(\n{inner}\n):"
    return f"class {name}(\n" + "".join(f"    {b},\n" for b in bases) + "):"


def sort_imports(lines: list[str]) -> str:
    """Group imports as isort does: __future__, standard library, third party, relative."""

    def module_of(line: str) -> str:
        words = line.split()
        return words[1]

    def group(line: str) -> int:
        module = module_of(line)
        if module == "__future__":
            return 0
        if module.startswith("."):
            return 3
        return 1 if module.split(".")[0] in sys.stdlib_module_names else 2

    groups: dict[int, list[str]] = {}
    for line in dict.fromkeys(lines):
        groups.setdefault(group(line), []).append(line)
    blocks = ["\n".join(sorted(g, key=lambda line: (line.startswith("from "), module_of(line), line)))
              for _, g in sorted(groups.items())]
    return "\n\n".join(blocks)


def support_layout(support) -> str:
    """The source's module-level statements, laid out as PEP 8 asks: two blank lines around
    functions and classes, none between simple statements."""
    blocks: list[str] = []
    previous = None
    for statement in support:
        if previous is not None:
            blocks.append("\n\n\n" if statement.definition or previous.definition else
                          "\n" if statement.simple and previous.simple else "\n\n")  # (an `if`, `try` or `for`)
        blocks.append(statement.code)
        previous = statement
    return "".join(blocks)


def emit(module: ModuleCode, *, source_sha256: str, command: str, source_path: str) -> str:
    text = environment().get_template("module.py.jinja").render(
        version=__version__,
        source_path=source_path,
        source_sha256=source_sha256,
        command=command,
        imports=sort_imports(list(module.imports)),
        support=support_layout(module.support),
        classes=module.classes,
        library_classes=module.builtin_classes,
        harnesses=module.harnesses,
        loss_harnesses=module.loss_harnesses,
    )
    # One newline convention: a CRLF line copied from the source would make every later --check stale.
    return stamp(text.replace("\r\n", "\n").replace("\r", "\n"))
