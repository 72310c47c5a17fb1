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

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from batchify.harness import HarnessOptions


class ConfigError(Exception):
    pass


@dataclass(frozen=True)
class Target:
    source: Path  # absolute
    output: Path  # absolute
    classes: tuple[str, ...] = ()
    shared: tuple[str, ...] = ()
    harness: HarnessOptions | None = None


@dataclass(frozen=True)
class Config:
    root: Path  # the folder holding pyproject.toml
    patterns: tuple[dict, ...]
    shared: tuple[str, ...]
    verify: dict

    def targets(self) -> list[Target]:
        """Every (source, output) pair the patterns match on disk, sorted, outputs never sources."""
        outputs = [_glob_regex(p["output"]) for p in self.patterns]
        found: dict[Path, Target] = {}
        for pattern in self.patterns:
            source_re = _glob_regex(pattern["source"])
            for path in sorted(self.root.glob(pattern["source"])):
                rel = path.relative_to(self.root).as_posix()
                match = source_re.fullmatch(rel)
                if not path.is_file() or match is None or any(o.fullmatch(rel) for o in outputs):
                    continue
                output = _substitute(pattern["output"], match.groups())
                found.setdefault(path, Target(
                    path, self.root / output,
                    tuple(_strings(pattern, "class")),
                    tuple(_strings(pattern, "shared")) if "shared" in pattern else self.shared,
                    _harness(pattern.get("harness")),
                ))
        return sorted(found.values(), key=lambda t: t.source)


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


def parse_config(table: dict, root: Path, where: Path) -> Config:
    patterns = table.get("targets", [])
    if not isinstance(patterns, list):
        raise ConfigError(f"{where}: [tool.batchify] targets must be an array of tables")
    for i, pattern in enumerate(patterns):
        for key in ("source", "output"):
            if not isinstance(pattern.get(key), str):
                raise ConfigError(f"{where}: [[tool.batchify.targets]] #{i + 1} needs a string '{key}'")
        if _wildcards(pattern["source"]) != _wildcards(pattern["output"]):
            raise ConfigError(f"{where}: target #{i + 1}: source and output must have the same number of "
                              f"wildcards ({pattern['source']!r} -> {pattern['output']!r})")
        unknown = set(pattern) - {"source", "output", "class", "shared", "harness"}
        if unknown:
            raise ConfigError(f"{where}: target #{i + 1}: unknown keys {sorted(unknown)}")
    return Config(root, tuple(patterns), tuple(_strings(table, "shared")), table.get("verify", {}))


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
