import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pytest

# The fast tier, `pytest -m "not slow"`: the rule, runtime, golden, CLI and provenance tests, which
# transform and run small models but never verify numerically. Everything else (equivalence,
# verify, harness training, hooks, corpus-style models, fuzzing) is `slow`; `pytest` runs both.
FAST_FILES = frozenset({"test_rules.py", "test_runtime.py", "test_golden.py", "test_cli.py", "test_provenance.py",
                        "test_scopes.py", "test_output_safety.py", "test_names.py",
                        "test_library_models.py", "test_source_styles.py"})


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name not in FAST_FILES or "verify" in item.name:
            item.add_marker(pytest.mark.slow)
