"""Tests of the stub/solution region check, and the check itself over the kit's labs.

Run: python3 -m unittest discover -s grader/tests -t grader
"""
import tempfile
import unittest
from pathlib import Path

from kitgrade import regions

ROOT = Path(__file__).resolve().parents[2]

STUB = """int f() {
  // TODO(lab.1): return the answer.
  return 0;
  // END(lab.1)
}
"""
SOLUTION = """int f() {
  // DONE(lab.1): return the answer.
  return 42;
  // END(lab.1)
}
"""


class RegionCheck(unittest.TestCase):
    def pair(self, stub: str, solution: str) -> list[str]:
        with tempfile.TemporaryDirectory() as tmp:
            a, b = Path(tmp, "stub.cu"), Path(tmp, "solution.cu")
            a.write_text(stub)
            b.write_text(solution)
            return regions.compare_pair(a, b)

    def test_a_solution_that_only_fills_regions_passes(self):
        self.assertEqual(self.pair(STUB, SOLUTION), [])

    def test_a_change_outside_the_regions_is_reported_with_both_lines(self):
        problems = self.pair(STUB, SOLUTION.replace("int f()", "long f()"))
        self.assertEqual(len(problems), 1)
        self.assertIn("outside the TODO regions", problems[0])
        self.assertIn("long f()", problems[0])

    def test_a_changed_instruction_line_is_reported(self):
        problems = self.pair(STUB, SOLUTION.replace("return the answer", "return 42"))
        self.assertTrue(problems)

    def test_a_leftover_todo_in_the_solution_is_reported(self):
        problems = self.pair(STUB, SOLUTION + "// TODO(lab.2): later\n// END(lab.2)\n")
        self.assertTrue(any("still has a TODO(" in p for p in problems))

    def test_an_unclosed_region_is_reported(self):
        problems = self.pair(STUB.replace("// END(lab.1)", ""), SOLUTION)
        self.assertTrue(any("never closed" in p for p in problems))

    def test_a_stub_without_todo_is_reported(self):
        problems = self.pair(SOLUTION, SOLUTION)
        self.assertTrue(any("no TODO(" in p for p in problems))



if __name__ == "__main__":
    unittest.main()
