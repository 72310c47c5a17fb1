"""Write the README's supported-constructs table from the rule table (batchify/rules.py).

    python scripts/rule_table.py          # rewrite the table in README.md
    python scripts/rule_table.py --check  # exit 1 if README.md differs (tests/test_rules.py checks it too)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BEGIN = "<!-- rules: generated from batchify/rules.py by scripts/rule_table.py; do not edit -->\n"
END = "<!-- rules: end -->\n"


def render(rules) -> str:
    rows = ["| construct | example | rewritten as | rule |", "|---|---|---|---|"]
    for rule in rules:
        cells = [rule.construct, rule.example, rule.becomes, f"`{rule.unit.rsplit('.', 1)[-1]}`"]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"


def section(readme: str) -> str:
    return readme.split(BEGIN, 1)[1].split(END, 1)[0]


def main(argv: list[str]) -> int:
    from batchify.rules import RULES

    path = ROOT / "README.md"
    readme = path.read_text()
    table = render(RULES)
    if "--check" in argv:
        return 0 if section(readme) == table else 1
    head, rest = readme.split(BEGIN, 1)
    path.write_text(head + BEGIN + table + END + rest.split(END, 1)[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
