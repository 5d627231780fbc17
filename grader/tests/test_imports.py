"""The modules of kitgrade import each other without cycles (late imports included), so every
command can share kitgrade.context instead of reaching back into kitgrade.cli."""

from __future__ import annotations

import ast
import unittest
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "kitgrade"


def imports_of(path: Path) -> set[str]:
    """The kitgrade modules a module imports anywhere in its body."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
    return found


class ImportGraphTest(unittest.TestCase):
    def test_no_cycles(self) -> None:
        graph = {p.stem: imports_of(p) for p in PACKAGE.glob("*.py")}
        state: dict[str, str] = {}

        def visit(module: str, path: list[str]) -> None:
            if state.get(module) == "done":
                return
            if state.get(module) == "open":
                self.fail("import cycle: " + " -> ".join(path + [module]))
            state[module] = "open"
            for other in sorted(graph.get(module, ())):
                visit(other, path + [module])
            state[module] = "done"

        for module in sorted(graph):
            visit(module, [])

    def test_context_is_a_leaf_of_the_commands(self) -> None:
        self.assertNotIn("cli", imports_of(PACKAGE / "context.py"))
        users = [p.stem for p in PACKAGE.glob("*.py") if "cli" in imports_of(p)]
        # batch grades as grade does: it reuses grade's run (a student edition has no batch)
        self.assertLessEqual(set(users), {"batch"})


if __name__ == "__main__":
    unittest.main()
