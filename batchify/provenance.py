"""What a generated module was made from, recorded in its header, so that an up-to-date output
is known without transforming its source (``batchify hook --check``, ``batchify SRC --check``).

Line 1 of a generated module names the source's sha256, line 2 the exact command (which holds
every option), line 3 the generator's fingerprint (a hash of batchify's own code and templates
and of the LibCST and Jinja versions that render them) and a hash of the rest of the file, so
that a hand edit of the output still counts as stale. This module imports nothing heavy.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re
from pathlib import Path

STAMP = "# Inputs: generator {generator}, output {output}"
STAMP_PATTERN = re.compile(r"# Inputs: generator ([0-9a-f]{16}), output ([0-9a-f]{16})")
SOURCE_PATTERN = re.compile(r"\(sha256 ([0-9a-f]{64})\)")
REGENERATE = "# Regenerate: "


def template_dir() -> Path:
    """``templates/`` inside the installed package, or at the top of a source checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "templates", here.parent / "templates"):
        if (candidate / "module.py.jinja").is_file():
            return candidate
    raise FileNotFoundError("batchify's templates are missing from this installation")


@functools.cache
def generator_fingerprint() -> str:
    """A hash of everything that decides the generated text besides the source and the options."""
    digest = hashlib.sha256()
    package = os.path.dirname(os.path.realpath(__file__))
    # The runtime decides nothing in the text (its contract number, in names.py, does).
    for name in _files(package, ".py", skip={"runtime.py"}):
        digest.update(name.encode() + b"\0" + _read(os.path.join(package, name)) + b"\0")
    templates = str(template_dir())  # where they are differs: a wheel or a checkout
    for name in _files(templates, ".jinja", recurse=False):
        digest.update(name.encode() + b"\0" + _read(os.path.join(templates, name)) + b"\0")
    for dependency in ("libcst", "jinja2"):
        digest.update(f"{dependency}=={installed_version(dependency)}\0".encode())
    return digest.hexdigest()[:16]


def _files(root: str, suffix: str, *, skip: set[str] = frozenset(), recurse: bool = True) -> list[str]:
    """The files named ``*suffix`` under ``root``, as sorted relative POSIX paths (``rewrite/methods.py``),
    ``__pycache__`` left out. os.walk rather than pathlib's glob: a tenth of the cost, on every run."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"] if recurse else []
        prefix = os.path.relpath(folder, root).replace(os.sep, "/")
        found.extend(name if prefix == "." else f"{prefix}/{name}"
                     for name in files if name.endswith(suffix) and name not in skip)
    return sorted(found)


def _read(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


def installed_version(distribution: str) -> str:
    """The version of an installed library, without importing it (``hook --check`` imports neither)
    or importlib.metadata (20 ms with the email package it loads): from the name of the
    ``NAME-VERSION.dist-info`` folder beside the package, as pip and uv lay them out."""
    spec = importlib.util.find_spec(distribution)
    if spec is None or spec.origin is None:
        return "not installed"
    site = Path(spec.origin).parent.parent
    found = sorted(site.glob(f"{distribution}-*.dist-info"))
    if len(found) == 1:
        return found[0].name[len(distribution) + 1:-len(".dist-info")]
    from importlib import metadata  # another layout: ask the slow way

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


def source_digest(source: bytes) -> str:
    """The sha256 a header records for ``source``: of its text with LF line ends and no UTF-8 BOM, as
    Python reads it, so that a CRLF checkout (git's autocrlf) and an LF one agree."""
    return hashlib.sha256(source.removeprefix(b"\xef\xbb\xbf").replace(b"\r\n", b"\n")).hexdigest()


def edited_by_hand(current: str) -> bool:
    """Whether a generated module's text differs from what batchify wrote (its line 3 stamp records a
    hash of the rest). A checksum against accidental edits, not a signature: anyone can recompute it."""
    lines = current.split("\n", 3)
    recorded = STAMP_PATTERN.fullmatch(lines[2]) if len(lines) == 4 else None
    return bool(recorded) and recorded.group(2) != _digest(without_stamp(current))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def stamp(text: str) -> str:
    """``text`` (a rendered module, two header lines first) with its line 3 stamp."""
    first, second, rest = text.split("\n", 2)
    stamp_line = STAMP.format(generator=generator_fingerprint(), output=_digest(text))
    return f"{first}\n{second}\n{stamp_line}\n{rest}"


def without_stamp(text: str) -> str:
    lines = text.split("\n", 3)
    if len(lines) == 4 and STAMP_PATTERN.fullmatch(lines[2]):
        return "\n".join([lines[0], lines[1], lines[3]])
    return text


def up_to_date(current: str | None, source: bytes, command: str) -> bool:
    """Whether ``current`` is what batchify would generate now from ``source`` with ``command``,
    known from its header alone (False means: transform and compare, not necessarily stale)."""
    if current is None:
        return False
    lines = current.split("\n", 3)
    if len(lines) < 4:
        return False
    match = SOURCE_PATTERN.search(lines[0])
    recorded = STAMP_PATTERN.fullmatch(lines[2])
    return bool(match and recorded and match.group(1) == source_digest(source)
                and lines[1] == REGENERATE + command and recorded.group(1) == generator_fingerprint()
                and recorded.group(2) == _digest(without_stamp(current)))
