"""A class to verify, planned before jax is imported."""

from __future__ import annotations

from dataclasses import dataclass, field

from batchify.drive import Drive


@dataclass
class Plan:
    cls: str
    drive: Drive
    line: int
    missing: list[str] = field(default_factory=list)
