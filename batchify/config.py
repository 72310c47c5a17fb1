"""``[tool.batchify]`` in pyproject.toml: which sources map to which outputs, with which options.

```toml
[tool.batchify]
shared = ["i"]                       # default --shared for every target

[[tool.batchify.targets]]
source = "models/*.py"               # a glob; `*` and `**` capture
output = "models/*_batched.py"       # the captures substituted in order
class = ["SpikingNet"]               # optional, like --class
shared = ["i"]                       # optional, replaces the default
```

Discovery walks up from the working directory to the first ``pyproject.toml`` with a
``[tool.batchify]`` table, as black and ruff do. Paths are relative to that file.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import NamedTuple

from batchify.harness import HarnessOptions
from batchify.provenance import HEADER_SOURCE


class ConfigError(Exception):
    """A problem in [tool.batchify]; ``where`` is the pyproject.toml, ``value`` the text at fault."""

    def __init__(self, message: str, where: Path | None = None, value: str | None = None):
        super().__init__(message)
        self.where = where
        self.value = value

    def line(self) -> int:
        """The line of pyproject.toml holding the value at fault (1 when it cannot be found)."""
        if self.where is None or self.value is None:
            return 1
        try:
            lines = self.where.read_text(encoding="utf-8").splitlines()
        except OSError:
            return 1
        return next((n for n, text in enumerate(lines, 1) if self.value in text), 1)


class Target(NamedTuple):
    source: Path  # absolute
    output: Path  # absolute
    classes: tuple[str, ...] = ()
    shared: tuple[str, ...] = ()
    harness: HarnessOptions | None = None
    functions: tuple[str, ...] = ()  # the user's own functions to batch (--function)


class Config(NamedTuple):
    root: Path  # the folder holding pyproject.toml
    patterns: tuple[dict, ...]
    shared: tuple[str, ...]
    verify: dict
    where: Path | None = None  # the pyproject.toml

    def targets(self, among: Path | None = None) -> list[Target]:
        """Every (source, output) pair the patterns match on disk, sorted, outputs never sources;
        ``among``: only the target of that one source, if any (no globbing the project: a plain
        ``batchify SRC -o OUT`` asks only whether its own source is configured)."""
        outputs = [_glob_regex(p["output"]) for p in self.patterns]
        found: dict[Path, Target] = {}
        claimed: dict[Path, str] = {}  # output (resolved) -> the source it belongs to
        root = self.root.resolve()
        only = None
        if among is not None:  # as spelled (a symlink kept, as the glob finds it) and resolved
            only = []
            for form in (Path(os.path.abspath(among)), among.resolve()):
                if form.is_relative_to(root) and self.root / form.relative_to(root) not in only:
                    only.append(self.root / form.relative_to(root))
        for i, pattern in enumerate(self.patterns):
            source_re = _glob_regex(pattern["source"])
            for path in (only if only is not None else _sources(self.root, pattern["source"])):
                rel = path.relative_to(self.root).as_posix()
                match = source_re.fullmatch(rel)
                if not path.is_file() or match is None or any(o.fullmatch(rel) for o in outputs):
                    continue
                output = _substitute(pattern["output"], match.groups())
                # A configured output stays inside the project (symlinks and `..` resolved): a cloned
                # repository's pyproject.toml must not make the hook write anywhere else.
                where = f"{self.where or 'pyproject.toml'}: [[tool.batchify.targets]] #{i + 1} output {pattern['output']!r}"
                resolved = (self.root / output).resolve()
                if not resolved.is_relative_to(root):
                    raise ConfigError(f"{where} puts {rel}'s output at {output!r}, outside the project ({self.root})",
                                      self.where, pattern["output"])
                # Nor where Python would run it unasked (a virtualenv's site-packages: sitecustomize.py, a
                # .pth) or git would (.git/hooks).
                protected = _protected(root, resolved)
                if protected:
                    raise ConfigError(f"{where} puts {rel}'s output at {output!r}, inside {protected}; batchify "
                                      "writes no code there", self.where, pattern["output"])
                if path not in found and resolved in claimed and claimed[resolved] != rel:
                    raise ConfigError(f"{where} gives {rel} the output {output}, which is already the output of "
                                      f"{claimed[resolved]}: each would overwrite the other", self.where, pattern["output"])
                claimed.setdefault(resolved, rel)
                found.setdefault(path, Target(
                    path, self.root / output,
                    tuple(_strings(pattern, "class")),
                    tuple(_strings(pattern, "shared")) if "shared" in pattern else self.shared,
                    _harness(pattern.get("harness")),
                    tuple(_strings(pattern, "functions")),
                ))
        return sorted(found.values(), key=lambda t: t.source)

    def orphans(self, targets: list[Target]) -> list[tuple[Path, str]]:
        """Generated modules an output glob matches whose source (as their header names it) is gone:
        ``(output, source)``, as a rename or a deletion of the source leaves them."""
        live = {t.output.resolve() for t in targets}
        found = []
        for pattern in self.patterns:
            for path in sorted(self.root.glob(pattern["output"])):
                if path.resolve() in live or not path.is_file():
                    continue
                try:
                    with path.open(encoding="utf-8", errors="replace") as fh:
                        match = HEADER_SOURCE.match(fh.readline(4096))
                except OSError:
                    continue
                if match and match.group(1) != "<stdin>" and not (self.root / match.group(1)).exists():
                    found.append((path, match.group(1)))
        return sorted(set(found))


PROTECTED_FOLDERS = {".git": "git's own folder", ".hg": "Mercurial's own folder", ".svn": "Subversion's own folder",
                     "site-packages": "an installation's site-packages", "dist-packages": "an installation's dist-packages"}


def _sources(root: Path, pattern: str) -> list[Path]:
    """The files a source glob matches under ``root``, sorted, never inside a version-control folder,
    a site-packages or a virtualenv: their files are not the project's models (and their outputs
    could not be written there), so a ``**`` does not even walk them."""
    if "**" not in pattern:
        return sorted(p for p in root.glob(pattern) if not _protected(root, p))
    source_re = _glob_regex(pattern)
    found = []
    for folder, dirs, files in os.walk(root):  # symlinked folders are not followed: no cycles
        here = Path(folder)
        dirs[:] = [d for d in dirs if d not in PROTECTED_FOLDERS and d != "__pycache__"
                   and not (here / d / "pyvenv.cfg").is_file()]
        found.extend(here / f for f in files if source_re.fullmatch((here / f).relative_to(root).as_posix()))
    return sorted(found)


def _protected(root: Path, output: Path) -> str | None:
    """What ``output`` (resolved, inside ``root``) lies inside that no code generator should write to:
    a version-control folder, a site-packages, or a virtualenv (a folder holding ``pyvenv.cfg``)."""
    folder = root
    for part in output.relative_to(root).parts[:-1]:
        folder = folder / part
        if part in PROTECTED_FOLDERS:
            return f"{PROTECTED_FOLDERS[part]} ({folder.relative_to(root).as_posix()})"
        if (folder / "pyvenv.cfg").is_file():
            return f"a virtualenv ({folder.relative_to(root).as_posix()})"
    return None


def find_config(start: Path) -> Config | None:
    for folder in (start.resolve(), *start.resolve().parents):
        pyproject = folder / "pyproject.toml"
        if not pyproject.is_file():
            continue
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{pyproject}: cannot read it: {exc}") from None
        table = data.get("tool", {}).get("batchify")
        if table is None:
            continue
        return parse_config(table, folder, pyproject)
    return None


def _unknown(keys, known: set[str], what: str, where: Path) -> None:
    """A key that names nothing: an error, with the closest known key."""
    for key in sorted(set(keys) - known):
        import difflib  # only for a mistyped key: every run without one reads the configuration

        close = difflib.get_close_matches(key, sorted(known), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else f" (known: {', '.join(sorted(known))})"
        raise ConfigError(f"{where}: {what}: unknown key '{key}'{hint}", where, key)


def parse_config(table: dict, root: Path, where: Path) -> Config:
    _unknown(table, {"shared", "targets", "verify"}, "[tool.batchify]", where)
    patterns = table.get("targets", [])
    if not isinstance(patterns, list):
        raise ConfigError(f"{where}: [tool.batchify] targets must be an array of tables")
    for i, pattern in enumerate(patterns):
        for key in ("source", "output"):
            if not isinstance(pattern.get(key), str):
                raise ConfigError(f"{where}: [[tool.batchify.targets]] #{i + 1} needs a string '{key}'", where)
            if Path(pattern[key]).is_absolute() or pattern[key].startswith("~"):
                raise ConfigError(f"{where}: [[tool.batchify.targets]] #{i + 1} {key} {pattern[key]!r} is absolute; "
                                  "paths are relative to the folder of pyproject.toml", where, pattern[key])
        if _wildcards(pattern["source"]) != _wildcards(pattern["output"]):
            raise ConfigError(f"{where}: target #{i + 1}: source and output must have the same number of "
                              f"wildcards ({pattern['source']!r} -> {pattern['output']!r})")
        _unknown(pattern, {"source", "output", "class", "shared", "harness", "functions"}, f"target #{i + 1}", where)
    return Config(root, tuple(patterns), tuple(_strings(table, "shared")), table.get("verify", {}), where)


def _harness(table) -> HarnessOptions | None:
    """``harness = { method = "step_run", steps = 25, input = "constant", readout = "sum", loss = "nll_rate" }``"""
    if table is None:
        return None
    if table is True:
        return HarnessOptions()
    if not isinstance(table, dict) or set(table) - {"method", "steps", "input", "readout", "loss"}:
        raise ConfigError("[tool.batchify] harness must be true or a table of method, steps, input, readout, loss")
    return HarnessOptions(**table)


def _strings(table: dict, key: str) -> list[str]:
    value = table.get(key, [])
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"[tool.batchify] '{key}' must be a string or a list of strings")
    return value


def _glob_regex(pattern: str) -> re.Pattern:
    """``models/**/*.py`` -> a regex capturing each wildcard, on POSIX relative paths."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("((?:[^/]+/)*)")
            i += 3
        elif pattern[i] == "*":
            out.append("([^/]*)")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def _wildcards(pattern: str) -> list[str]:
    return re.findall(r"\*\*/|\*", pattern)


def _substitute(pattern: str, groups: tuple[str, ...]) -> str:
    parts = re.split(r"(\*\*/|\*)", pattern)
    values = iter(groups)
    return "".join(next(values) if part in ("*", "**/") else part for part in parts)
