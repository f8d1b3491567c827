"""The plugin example of CONTRIBUTING.md runs: its imports name what the modules have."""

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_example_algorithms_imports_exist():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    example = text.split("```python", 1)[1].split("```", 1)[0]
    imports = re.findall(r"^from (\.+)([\w.]+) import (.+)$", example, re.M)
    assert imports
    for dots, module, names in imports:   # relative to simcollective/algorithms/<collective>/
        base = ["simcollective", "algorithms", "allgather"][: 4 - len(dots)]
        mod = importlib.import_module(".".join(base + [module]))
        for name in (n.strip() for n in names.split(",")):
            assert hasattr(mod, name), f"{mod.__name__} has no {name}"
