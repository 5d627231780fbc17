"""Tests of the handouts' generated tables (kitgrade.handout) and of their check.

Run: python3 -m unittest discover -s grader/tests -t grader
"""

from __future__ import annotations

import io
import tempfile
import unittest
from pathlib import Path

from kitgrade import cli, handout
from kitgrade.manifest import load_manifest, parse_manifest

from .support import fake_env, make_repo

ROOT = Path(__file__).resolve().parents[2]


def lab_data(steps=("1", "2", "perf")) -> dict:
    return {"id": "01_demo", "title": "Demo", "timeout_s": 5, "student_files": ["demo.cu"],
            "steps": [{"id": f"demo.{s}", "title": f"step {s}: grid_size_1d",
                       "hints": [f"first hint of step {s}: think about how many blocks cover n",
                                 f"second hint of step {s}: round the division up, add block - 1",
                                 f"third hint of step {s}: return (n + block - 1) / block here"]}
                      for s in steps]}


def test(id, step, kind="host", points=1, title="checks something", hidden=False) -> dict:
    return {"id": id, "step": step, "kind": kind, "points": points, "title": title, "hidden": hidden}


LISTING = [
    test("DemoHost.GridRoundsUp", "demo.1", points=2, title="grid_size_1d rounds up"),
    test("DemoHost.SecretEdge", "demo.1", points=5, title="hidden edge", hidden=True),
    *[test(f"Sizes/Saxpy.WritesEveryElement/n_{n}", "demo.1", "gpu", 1,
           f"saxpy writes every element [n_{n}]") for n in (1, 33, 1000)],
    *[test(f"Shapes/Add.Works/{s}", "demo.2", "gpu", 3, f"add works [{s}]") for s in ("1x1", "31x33")],
    test("DemoPerf.Fast", "demo.perf", "perf", 10, "fast enough"),
]

BARS = {"demo.saxpy_vs_copy": (0.6, 0.85), "other.thing": (2.5, 4.0)}


class Fragments(unittest.TestCase):
    def setUp(self) -> None:
        self.manifest = parse_manifest({"labs": [lab_data()]})
        self.lab = self.manifest.labs[0]
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.root = Path(tmp.name)
        (self.root / "labs" / "01_demo").mkdir(parents=True)
        (self.root / "labs" / "01_demo" / "demo.cu").write_text(
            "// TODO(demo.1): write it\n// END(demo.1)\n// TODO(demo.2): and this\n// END(demo.2)\n")
        self.texts = handout.fragments(self.root, self.manifest, {"01_demo": LISTING}, BARS)

    def test_every_fragment_of_the_lab_and_the_thresholds_page(self) -> None:
        self.assertEqual(sorted(self.texts), sorted(
            handout.fragment_names(self.lab, ["demo.saxpy_vs_copy"]) + [handout.ALL_THRESHOLDS]))

    def test_step_points_sum_the_visible_tests_and_count_every_instance(self) -> None:
        steps = self.texts["01_demo_steps.md"]
        # step 1: 2 + 3 instances x 1 (the hidden 5 left out); step 2: 2 x 3; perf: 10
        self.assertIn('| \\ref lab01_step1 "Step 1" | `TODO(demo.1)` | step 1: `grid_size_1d` | 5 |',
                      steps)
        self.assertIn('| \\ref lab01_step2 "Step 2" | `TODO(demo.2)` | step 2: `grid_size_1d` | 6 |',
                      steps)
        # the perf step has no TODO region in the stub
        self.assertIn('| \\ref lab01_step_perf "Performance step" | none |', steps)
        self.assertIn("| **Total** |  |  | **21** |", steps)

    def test_hidden_tests_are_never_shown(self) -> None:
        for name, text in self.texts.items():
            self.assertNotIn("SecretEdge", text, name)
            self.assertNotIn("hidden edge", text, name)

    def test_a_parameterised_test_is_one_row_worth_points_times_instances(self) -> None:
        tests = self.texts["01_demo_tests_1.md"]
        self.assertIn("| `Sizes/Saxpy.WritesEveryElement/*` | saxpy writes every element (one test "
                      "each: `n_1`, `n_33`, `n_1000`) | gpu | 1 each, 3 in all |", tests)
        self.assertIn("| `DemoHost.GridRoundsUp` | `grid_size_1d` rounds up | host | 2 |", tests)
        self.assertIn("| **Total** |  |  | **5** |", tests)
        self.assertIn("| 3 each, 6 in all |", self.texts["01_demo_tests_2.md"])
        self.assertIn("| **Total** |  |  | **6** |", self.texts["01_demo_tests_2.md"])

    def test_adding_an_instance_reweights_its_step(self) -> None:
        more = LISTING + [test("Sizes/Saxpy.WritesEveryElement/n_4097", "demo.1", "gpu", 1,
                               "saxpy writes every element [n_4097]")]
        texts = handout.fragments(self.root, self.manifest, {"01_demo": more}, BARS)
        self.assertIn("| 6 |", texts["01_demo_steps.md"].splitlines()[2])
        self.assertIn("1 each, 4 in all", texts["01_demo_tests_1.md"])

    def test_hints_in_order_and_thresholds_of_the_lab(self) -> None:
        text = self.texts["01_demo_hints_2.md"]
        lines = text.splitlines()
        # Folded, one <details> per level, in order, with no blank line inside (Doxygen would
        # end the <details> there): its start, its summary, the hint on one line, its end.
        self.assertEqual(len(lines), 12, lines)
        for level in (1, 2, 3):
            first = 4 * (level - 1)
            self.assertEqual(lines[first:first + 2], ["<details>", f"<summary>Hint {level}</summary>"])
            self.assertEqual(lines[first + 3], "</details>")
        self.assertTrue(lines[2].startswith("first hint of step 2"))
        self.assertTrue(lines[10].startswith("third hint"))
        self.assertLess(text.index("first hint"), text.index("second hint"))
        self.assertLess(text.index("second hint"), text.index("third hint"))
        bars = self.texts["01_demo_thresholds.md"]
        self.assertIn("| `demo.saxpy_vs_copy` | 0.60 | 0.85 |", bars)
        self.assertNotIn("other.thing", bars)
        everything = self.texts[handout.ALL_THRESHOLDS]
        self.assertIn("| `01_demo` | `demo.saxpy_vs_copy` | 0.60 | 0.85 |", everything)
        self.assertIn("| (no lab) | `other.thing` | 2.50 | 4.00 |", everything)

    def test_a_step_without_visible_tests_says_so(self) -> None:
        only_hidden = [t for t in LISTING if t["step"] != "demo.2"]
        texts = handout.fragments(self.root, self.manifest, {"01_demo": only_hidden}, BARS)
        self.assertEqual(texts["01_demo_tests_2.md"], "No visible test belongs to this step.\n")


class DoxygenSafeText(unittest.TestCase):
    def test_code_becomes_code_spans_and_the_rest_is_escaped(self) -> None:
        cases = {
            "mark the pointers __restrict__.": "mark the pointers `__restrict__`.",
            "B*T threads": "B\\*T threads",
            "only when i < n; then #include it": "only when i \\< n; then \\#include it",
            "call grid_size_1d(n, blockDim.x * k) now": "call `grid_size_1d(n, blockDim.x * k)` now",
            "use streams_[c % streams_.size()] here": "use `streams_[c % streams_.size()]` here",
            "the `stream` argument, 50% of it": "the `stream` argument, 50\\% of it",
            "Vec4<T>::type, i.e. float4": "`Vec4<T>::type`, i.e. float4",
            "pass --level 2 and @param": "pass \\--level 2 and \\@param",
        }
        for text, want in cases.items():
            self.assertEqual(handout.doc_text(text), want, text)

    def test_a_table_cell_never_holds_a_bare_bar(self) -> None:
        self.assertEqual(handout.doc_text("|a b| at most", table=True), "\\|a b\\| at most")
        self.assertNotIn("`", handout.doc_text("`x | y` or", table=True))

    def test_ratios_read_as_the_file_writes_them(self) -> None:
        self.assertEqual([handout.ratio_text(v) for v in (0.6, 0.165, 5.0, 1.3)],
                         ["0.60", "0.165", "5.00", "1.30"])


HANDOUT = """# Lab 01: Demo {#lab01_demo}

## Step 1 {#lab01_step1}

\\include{doc} 01_demo_tests_1.md

\\include{doc} 01_demo_hints_1.md

## Step 2 {#lab01_step2}

\\include{doc} 01_demo_tests_2.md

\\include{doc} 01_demo_hints_2.md

## Performance {#lab01_step_perf}

\\include{doc} 01_demo_tests_perf.md

\\include{doc} 01_demo_hints_perf.md

\\include{doc} 01_demo_thresholds.md
"""


class Problems(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.root = Path(tmp.name)
        (self.root / "grader" / "01_demo").mkdir(parents=True)
        import json
        (self.root / "grader" / "01_demo" / "lab.json").write_text(json.dumps(lab_data()))
        (self.root / "grader" / "labs.json").write_text('{"labs": ["01_demo"]}')
        (self.root / "grader" / "thresholds.conf").write_text("demo.saxpy_vs_copy 0.6 0.85\n")
        (self.root / "labs" / "01_demo").mkdir(parents=True)
        (self.root / "labs" / "01_demo" / "demo.cu").write_text("// TODO(demo.1): x\n// END(demo.1)\n")
        (self.root / "docs" / "labs").mkdir(parents=True)
        self.manifest = load_manifest(self.root / "grader" / "labs.json")
        self.page = self.root / "docs" / "labs" / "01_demo.md"

    def problems(self, text: str) -> list[str]:
        self.page.write_text(text)
        with fake_env():
            return handout.problems(self.root, self.manifest, {"01_demo": LISTING})

    def test_a_handout_with_every_include_and_nothing_copied_is_fine(self) -> None:
        text = HANDOUT.replace("## Step 1", "\\include{doc} 01_demo_steps.md\n\n## Step 1")
        self.assertEqual(self.problems(text), [])

    def test_a_missing_include_is_named(self) -> None:
        found = self.problems(HANDOUT)
        self.assertEqual(len(found), 1, found)
        self.assertIn("does not include its generated fragment 01_demo_steps.md", found[0])
        self.assertIn("\\include{doc} 01_demo_steps.md", found[0])

    def test_a_hand_written_points_table_is_reported_with_its_line(self) -> None:
        table = ("\\include{doc} 01_demo_steps.md\n\nThe lab is worth 21 points:\n\n"
                 "| Step | You write | Points |\n| --- | --- | --- |\n| 1 | `grid` | 5 |\n\n")
        found = self.problems(table + HANDOUT)
        self.assertTrue(any(":5: a hand-written table with a Points column" in p for p in found), found)
        self.assertTrue(any(":3: a point figure written by hand ('worth 21 points')" in p
                            for p in found), found)

    def test_a_copied_thresholds_table_and_written_out_hints_are_reported(self) -> None:
        copied = ("\\include{doc} 01_demo_steps.md\n\n| Key | Student | Reference |\n| --- | --- | --- |\n"
                  "| `demo.saxpy_vs_copy` | 0.60 | 0.85 |\n\n"
                  "1. Second hint of step 2: round the division up, add `block - 1`.\n\n")
        found = self.problems(copied + HANDOUT)
        self.assertTrue(any("a hand-written table of thresholds" in p for p in found), found)
        self.assertTrue(any("hint 2 of demo.2 is written out" in p for p in found), found)

    def test_a_step_without_its_anchor_is_reported(self) -> None:
        text = HANDOUT.replace(" {#lab01_step2}", "").replace("## Step 1", "\\include{doc} "
                                                              "01_demo_steps.md\n\n## Step 1")
        self.assertEqual(self.problems(text), ["docs/labs/01_demo.md: has no section "
                                               "{#lab01_step2} (the generated tables link to it)"])

    def test_the_kits_own_handouts_have_no_problem(self) -> None:
        manifest = load_manifest(ROOT / "grader" / "labs.json")
        with fake_env():
            found = handout.problems(ROOT, manifest, {})
        self.assertEqual(found, [])


class Command(unittest.TestCase):
    def test_handout_tables_writes_every_fragment_from_the_grade_binaries(self) -> None:
        with tempfile.TemporaryDirectory() as tmp, fake_env(FAKE_HIDDEN="hidden"):
            root = make_repo(Path(tmp), ["01_alpha"])
            out, err = io.StringIO(), io.StringIO()
            code = cli.main(["handout-tables", "--build-dir", str(root / "build")], root=root,
                            stdout=out, stderr=err)
            self.assertEqual(code, 0, err.getvalue())
            generated = root / "build" / handout.GENERATED_DIR
            self.assertTrue((generated / handout.STAMP).is_file())
            steps = (generated / "01_alpha_steps.md").read_text()
            self.assertIn('\\ref lab01_step1 "Step 1"', steps)
            tests = (generated / "01_alpha_tests_1.md").read_text()
            self.assertIn("`Host.Passes`", tests)
            self.assertNotIn("Host.Hidden", tests)  # KIT_HIDDEN_TEST: never in a handout
            self.assertIn("fragments in", out.getvalue())

    def test_a_missing_grader_binary_is_exit_3(self) -> None:
        with tempfile.TemporaryDirectory() as tmp, fake_env():
            root = make_repo(Path(tmp), ["01_alpha"], built=[])
            err = io.StringIO()
            code = cli.main(["handout-tables"], root=root, stdout=io.StringIO(), stderr=err)
            self.assertEqual(code, 3)
            self.assertIn("grade_01_alpha", err.getvalue())


if __name__ == "__main__":
    unittest.main()
