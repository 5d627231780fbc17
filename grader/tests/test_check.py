"""kit.py check: the kit as it is has no problem, and each kind of drift in a copy of it is caught
with a message that names it. The copies are checked against the real build's listings, passed
in directly, so these tests build nothing."""

from __future__ import annotations

import io
import json
import re
import shutil
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from kitgrade import check, cli, thresholds
from kitgrade.build import BuildError
from kitgrade.manifest import load_manifest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
BUILT = (BUILD / "bin" / "grade_01_indexing").is_file()
NOT_BUILT = (f"{BUILD / 'bin' / 'grade_01_indexing'} is not built, so the graders cannot list "
             "their tests (cmake --build build)")
INSTRUCTOR = (ROOT / "solutions").is_dir()
STUDENT_EDITION = "a student edition has no solutions/ or wrong.json"
COPIED = ("labs", "solutions", "grader", "docs", "README.md")


def real_listings() -> check.Listings:
    """The tests each real grader lists ({} when the build is missing)."""
    if not BUILT:
        return {}
    manifest = load_manifest(ROOT / "grader" / "labs.json")
    listings, _ = check.read_listings(ROOT, manifest, BUILD, build=False, out=io.StringIO())
    return listings


class CheckRealTreeTest(unittest.TestCase):
    @unittest.skipUnless(BUILT, NOT_BUILT)
    def test_the_kit_as_it_is_has_no_problem(self) -> None:
        problems = check.check_tree(ROOT, BUILD, build=False, out=io.StringIO())
        self.assertEqual(problems, [], "\n".join(problems))

    def test_without_graders_and_no_build_each_missing_grader_is_a_problem(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out, err = io.StringIO(), io.StringIO()
            code = cli.main(["check", "--no-build", "--build-dir", tmp], root=ROOT, stdout=out,
                            stderr=err)
        lines = out.getvalue().splitlines()
        self.assertEqual(code, 1)
        self.assertTrue(any(line.startswith(f"{tmp}/bin/grade_01_indexing: missing")
                            for line in lines), lines)
        self.assertRegex(lines[-1], r"^check: \d+ problems$")

    def test_a_missing_grader_is_built_first_and_a_failed_build_is_one_problem(self) -> None:
        manifest = load_manifest(ROOT / "grader" / "labs.json")
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(check, "ensure_built",
                                  side_effect=BuildError("cmake --build exited with 2")) as built:
            out = io.StringIO()
            listings, problems = check.read_listings(ROOT, manifest, Path(tmp), build=True,
                                                     out=out)
        targets = built.call_args.args[2]
        self.assertIn("grade_07_streams", targets)
        self.assertEqual("reference_07_streams" in targets, INSTRUCTOR)
        self.assertTrue(built.call_args.kwargs["quiet"])
        self.assertIn("building the grade_*", out.getvalue())
        self.assertEqual(listings, {})
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("the graders do not build (cmake --build exited with 2)", problems[0])

    def test_an_unknown_option_is_a_usage_error(self) -> None:
        err = io.StringIO()
        self.assertEqual(cli.main(["check", "--bogus"], root=ROOT, stdout=io.StringIO(),
                                  stderr=err), 2)
        self.assertIn("--bogus", err.getvalue())


class FilterMatchTest(unittest.TestCase):
    def test_patterns_follow_googletest(self) -> None:
        name = "Shapes/TiledProduct.MatchesTheExactProduct/m33_n65_k17"
        self.assertTrue(check.pattern_matches("Shapes/TiledProduct.*", name))
        self.assertTrue(check.pattern_matches("*m33_n6?_k17", name))
        self.assertFalse(check.pattern_matches("TiledProduct.*", name))
        self.assertFalse(check.pattern_matches("[S]hapes*", name))  # no character classes
        self.assertTrue(check.pattern_matches("A[1].*", "A[1].B"))

    def test_filters_have_a_positive_and_a_negative_part(self) -> None:
        self.assertTrue(check.filter_matches("A.*:B.*", "B.x"))
        self.assertFalse(check.filter_matches("A.*:B.*", "C.x"))
        self.assertFalse(check.filter_matches("*-B.*:C.*", "C.x"))
        self.assertTrue(check.filter_matches("-B.*", "A.x"))  # an empty positive part is "*"
        self.assertFalse(check.filter_matches("-B.*", "B.x"))


class CheckCopyTest(unittest.TestCase):
    """Each test breaks a fresh copy of the kit one way; the problems that appear, beyond those a
    faithful copy already has, must name the breakage."""

    listings: check.Listings
    baseline: list[str]

    @classmethod
    def setUpClass(cls) -> None:
        cls.listings = real_listings()
        with tempfile.TemporaryDirectory() as tmp:
            cls.baseline = cls.problems_of(cls.copy_to(Path(tmp)))

    @staticmethod
    def copy_to(tmp: Path) -> Path:
        root = tmp / "kit"
        for name in COPIED:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__"))
            elif source.is_file():
                root.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, root / name)
        return root

    @classmethod
    def problems_of(cls, root: Path) -> list[str]:
        manifest = load_manifest(root / "grader" / "labs.json")
        return check.find_problems(root, manifest, cls.listings)

    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.root = self.copy_to(Path(tmp.name))

    def new_problems(self) -> list[str]:
        return [p for p in self.problems_of(self.root) if p not in self.baseline]

    def edit(self, relpath: str, old: str, new: str) -> None:
        path = self.root / relpath
        text = path.read_text(encoding="utf-8")
        self.assertIn(old, text, f"{relpath} changed: update this test")
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    def stubs(self, lab: str) -> str:
        """The folder of the lab's stubs as handed out (grader/stubs/ in a student edition)."""
        pristine = f"grader/stubs/{lab}"
        return pristine if (self.root / pristine).is_dir() else f"labs/{lab}"

    def append(self, relpath: str, text: str) -> None:
        with (self.root / relpath).open("a", encoding="utf-8") as f:
            f.write(text)

    def assert_one_new(self, *parts: str) -> str:
        new = self.new_problems()
        self.assertEqual(len(new), 1, "\n".join(new))
        for part in parts:
            self.assertIn(part, new[0])
        return new[0]

    def test_the_copy_has_no_problem_of_its_own(self) -> None:
        self.assertEqual(self.new_problems(), [])

    def test_a_key_a_grader_uses_that_thresholds_conf_lacks(self) -> None:
        self.append("grader/01_indexing/test_indexing.cu",
                    '\nstatic const char* const kNewBar = "indexing.saxpy_vs_host_copy";\n')
        self.assert_one_new("grader/01_indexing/test_indexing.cu:",
                            '"indexing.saxpy_vs_host_copy" is not in grader/thresholds.conf')

    def test_a_key_of_thresholds_conf_no_grader_uses(self) -> None:
        conf = self.root / "grader" / "thresholds.conf"
        conf.write_text(thresholds.with_default_lines(conf.read_text(encoding="utf-8"),
                                                      "indexing.forgotten_bar  0.5  0.8\n"))
        self.assert_one_new("grader/thresholds.conf:", "indexing.forgotten_bar",
                            "used by no grader")

    def test_bars_in_the_wrong_order(self) -> None:
        # A counter bar is a most: the reference's may not be above the student's.
        self.edit("grader/thresholds.conf", "coalescing.global_sectors_vs_ideal      1.25      1.05",
                  "coalescing.global_sectors_vs_ideal      1.25      1.5")
        self.assert_one_new("[default]: 'coalescing.global_sectors_vs_ideal' is a counter bar",
                            "must not be above its student bar 1.25")
        self.edit("grader/thresholds.conf", "coalescing.global_sectors_vs_ideal      1.25      1.5",
                  "coalescing.global_sectors_vs_ideal      1.25      1.05")
        self.edit("grader/thresholds.conf", "tiling.tiled_vs_naive                   1.15      1.30",
                  "tiling.tiled_vs_naive                   1.15      1.10")
        self.assert_one_new("'tiling.tiled_vs_naive': its reference bar 1.1 must not be below")

    def test_a_counter_bar_in_plausible_conf(self) -> None:
        self.append("grader/plausible.conf", "coalescing.global_sectors_vs_ideal  2\n")
        self.assert_one_new("grader/plausible.conf: 'coalescing.global_sectors_vs_ideal' is a "
                            "counter bar")

    def test_step_ids_include_lines_and_comments_are_not_keys(self) -> None:
        self.append("grader/01_indexing/test_indexing.cu",
                    '\n#include "indexing.h"\n// "indexing.in_a_comment"\n'
                    'static const char* const kStep = "indexing.perf";\n')
        self.assertEqual(self.new_problems(), [])

    def test_a_todo_id_that_names_no_step(self) -> None:
        stub = f"{self.stubs('01_indexing')}/indexing.cu"
        self.edit(stub, "// TODO(indexing.3):", "// TODO(indexing.9):")
        self.edit(stub, "// END(indexing.3)", "// END(indexing.9)")
        if INSTRUCTOR:  # keep the solution its stub outside the regions
            self.edit("solutions/01_indexing/indexing.cu", "// DONE(indexing.3):",
                      "// DONE(indexing.9):")
            self.edit("solutions/01_indexing/indexing.cu", "// END(indexing.3)",
                      "// END(indexing.9)")
        self.assert_one_new(f"{stub}:", "TODO(indexing.9) names no step")

    def test_a_step_without_a_todo_region(self) -> None:
        self.edit("grader/02_bounds/lab.json", '"id": "bounds.perf"', '"id": "bounds.6"')
        new = self.new_problems()
        self.assertIn(f"{self.stubs('02_bounds')}/: no TODO(bounds.6) region in any stub",
                      "\n".join(new))

    def test_only_a_step_of_sanitizer_tests_needs_no_todo_region(self) -> None:
        lab = load_manifest(self.root / "grader" / "labs.json").find_lab("02_bounds")
        self.assertEqual(check.sanitizer_steps(self.root, lab), {"bounds.5"})
        self.edit("grader/02_bounds/test_bounds.cu", '"bounds.5", memcheck,', '"bounds.5", gpu,')
        self.assertIn(f"{self.stubs('02_bounds')}/: no TODO(bounds.5) region in any stub",
                      "\n".join(self.new_problems()))

    def test_a_hand_copied_handout_table(self) -> None:
        self.append("docs/labs/01_indexing.md",
                    "\n| Test | Points |\n| --- | --- |\n| `IndexingHost.GridSizeRoundsUp` | 2 |\n")
        new = self.new_problems()
        self.assertTrue(new, "a hand-written table of points in a handout went unnoticed")
        self.assertTrue(all(p.startswith("docs/labs/01_indexing.md:") for p in new), new)
        self.assertIn("table", new[0])

    @unittest.skipUnless(INSTRUCTOR, STUDENT_EDITION)
    def test_a_known_wrong_edit_that_no_longer_applies(self) -> None:
        # The solution's line is reworded (a space doubled), so the edit's text is gone. (Read
        # from wrong.json, not written here: a student edition must hold no line of a solution.)
        data = json.loads((self.root / "grader/01_indexing/wrong.json").read_text())
        entry = next(s for s in data["submissions"] if s["name"] == "grid_rounds_down")
        find = entry["edits"][0]["find"]
        self.edit(f"solutions/01_indexing/{entry['edits'][0]['file']}", find,
                  find.replace(" ", "  ", 1))
        self.assert_one_new("grader/01_indexing/wrong.json", "grid_rounds_down",
                            "no longer there")

    @unittest.skipUnless(BUILT, NOT_BUILT)
    def test_a_sanitize_skip_pattern_that_matches_no_test(self) -> None:
        self.edit("grader/04_tiling/lab.json", '"TiledLarge.*"', '"TiledHuge.*"')
        self.assert_one_new("grader/04_tiling/lab.json: sanitize_skip[0] (racecheck)",
                            "'TiledHuge.*' matches no test")

    @unittest.skipUnless(BUILT and INSTRUCTOR, f"{NOT_BUILT}, or {STUDENT_EDITION}")
    def test_a_racecheck_filter_that_matches_no_test(self) -> None:
        path = self.root / "grader" / "04_tiling" / "wrong.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        entry = next(s for s in data["submissions"] if s.get("racecheck"))
        entry["racecheck"] = "Shapes/TiledProduct.MatchesTheExactProduct/m2_n2_k2"
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")
        self.assert_one_new(f"grader/04_tiling/wrong.json: {entry['name']}:",
                            "m2_n2_k2' matches no test")

    def test_a_lab_folder_missing_from_labs_json(self) -> None:
        path = self.root / "grader" / "labs.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        data["labs"].remove("07_streams")
        path.write_text(json.dumps(data), encoding="utf-8")
        new = self.new_problems()
        self.assertIn("grader/07_streams/: has a CMakeLists.txt but grader/labs.json does not "
                      "list it", "\n".join(new))
        # Its keys are no lab's any more, so they are unused too; nothing else changes.
        others = [p for p in new if not p.startswith("grader/07_streams/")]
        self.assertTrue(all(re.search(r"key streams\.\w+ is used by no grader", p)
                            for p in others), others)

    def test_a_listed_lab_without_its_folders_and_pages(self) -> None:
        self.edit("README.md", "`07_streams`", "`07_pipelines`")
        shutil.rmtree(self.root / "labs" / "07_streams")
        new = "\n".join(self.new_problems())
        self.assertIn("labs/07_streams/: missing, but grader/labs.json lists 07_streams", new)
        self.assertIn("README.md: does not mention 07_streams", new)


if __name__ == "__main__":
    unittest.main()
