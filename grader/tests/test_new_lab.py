"""Tests of `kit.py new-lab` (kitgrade.new_lab), on a throwaway copy of the kit.

Run: python3 -m unittest discover -s grader/tests -t grader
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from kitgrade import cli, handout, protocol, regions, thresholds, wrong
from kitgrade.manifest import load_manifest

from .support import fake_env

ROOT = Path(__file__).resolve().parents[2]
COPIED = ("labs", "solutions", "grader", "docs", "common", "README.md", "CMakeLists.txt")
NVCC = shutil.which("nvcc") or next((p for p in ("/usr/local/cuda/bin/nvcc",) if Path(p).is_file()),
                                    None)

_DECLARED = re.compile(r'KIT_TEST(_P)?\((\w+), (\w+), "([\w.]+)", (\w+), (\d+),\s*"([^"]*)"')


def copy_kit(target: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "build", "build-*")
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=ignore)
        else:
            shutil.copy2(source, target / name)
    return target


def declared_listing(test_file: Path) -> list[protocol.TestSpec]:
    """What the grader would list, read from its KIT_TEST declarations (one instance per
    parameterised test): enough to check steps against tests without building it."""
    listing = []
    for p, fixture, name, step, kind, points, title in _DECLARED.findall(test_file.read_text()):
        test_id = f"Sizes/{fixture}.{name}/n_1" if p else f"{fixture}.{name}"
        listing.append(protocol.TestSpec(test_id, step, kind, int(points), title))
    return listing


class NewLab(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.TemporaryDirectory()
        cls.root = copy_kit(Path(cls.tmp.name))
        cls.out, cls.err = io.StringIO(), io.StringIO()
        with fake_env():
            cls.code = cli.main(["new-lab", "08_demo", "Demo lab"], root=cls.root,
                                stdout=cls.out, stderr=cls.err)
        cls.manifest = load_manifest(cls.root / "grader" / "labs.json")
        cls.lab = cls.manifest.find_lab("08_demo")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def test_it_writes_every_file_of_a_lab(self) -> None:
        self.assertEqual(self.code, 0, self.err.getvalue())
        for rel in ("labs/08_demo/demo.h", "labs/08_demo/demo.cu", "solutions/08_demo/demo.cu",
                    "grader/08_demo/CMakeLists.txt", "grader/08_demo/lab.json",
                    "grader/08_demo/test_demo.cu", "grader/08_demo/wrong.json",
                    "grader/08_demo/remote.h",
                    "docs/labs/08_demo.md"):
            self.assertTrue((self.root / rel).is_file(), rel)
            self.assertIn(rel, self.out.getvalue())
        self.assertEqual((self.root / "grader/08_demo/CMakeLists.txt").read_text(),
                         "kit_add_lab(08_demo SOURCES demo.cu TESTS test_demo.cu)\n")

    def test_the_manifest_lists_it_with_its_two_steps(self) -> None:
        self.assertIsNotNone(self.lab)
        self.assertEqual(self.manifest.lab_ids()[-1], "08_demo")
        self.assertEqual([s.id for s in self.lab.steps], ["demo.1", "demo.perf"])
        self.assertEqual(self.lab.title, "Demo lab")
        self.assertTrue(all(len(s.hints) == 3 for s in self.lab.steps))

    def test_the_stub_fails_in_one_region_and_the_solution_fills_it(self) -> None:
        self.assertEqual(regions.check_tree(self.root, [self.lab]), [])
        stub = (self.root / "labs/08_demo/demo.cu").read_text()
        self.assertEqual(re.findall(r"TODO\(([\w.]+)\)", stub), ["demo.1"])
        self.assertIn("return 0;", stub)
        self.assertIn("// DONE(demo.1):", (self.root / "solutions/08_demo/demo.cu").read_text())

    def test_its_threshold_key_is_in_the_file_and_used_by_its_perf_test(self) -> None:
        with fake_env():
            bars = thresholds.load(thresholds.thresholds_path(self.root))
        self.assertIn("demo.transform_vs_device_copy", bars)
        student, reference = bars["demo.transform_vs_device_copy"]
        self.assertLess(student, reference)
        self.assertIn('"demo.transform_vs_device_copy"',
                      (self.root / "grader/08_demo/test_demo.cu").read_text())

    def test_the_grader_declares_a_host_a_gpu_and_a_perf_test(self) -> None:
        listing = declared_listing(self.root / "grader/08_demo/test_demo.cu")
        self.assertEqual([(t.step, t.kind) for t in listing],
                         [("demo.1", "host"), ("demo.1", "gpu"), ("demo.perf", "perf")])
        text = (self.root / "grader/08_demo/test_demo.cu").read_text()
        for needed in ("kit::GuardedBuffer", "d_out.poison()", "kit::test_random()",
                       "kit::output_matches", "kit::input_unchanged", "expect_ratio_at_least"):
            self.assertIn(needed, text)

    def test_its_known_wrong_submission_applies_to_the_solution(self) -> None:
        subs = wrong.load(self.root, self.lab)
        self.assertEqual([s.name for s in subs], ["no_bounds_check"])
        files = wrong.apply(self.root, self.lab, subs[0])
        self.assertNotIn("if (i < n)", files["demo.cu"])

    def test_the_pages_and_readme_list_it_and_its_handout_has_its_includes(self) -> None:
        mainpage = (self.root / "docs/mainpage.md").read_text()
        self.assertIn('| 08 | \\ref lab08_demo "Demo lab" |', mainpage)
        self.assertIn("- \\subpage lab08_demo\n", mainpage)
        # after the other labs, in the list and in the table
        self.assertLess(mainpage.index("\\subpage lab07_streams"), mainpage.index("\\subpage lab08_demo"))
        self.assertIn("| `08_demo` |", (self.root / "README.md").read_text())
        with fake_env():
            found = handout.problems(self.root, self.manifest, {
                "08_demo": declared_listing(self.root / "grader/08_demo/test_demo.cu")})
        self.assertEqual(found, [])

    def test_kit_check_finds_nothing_to_say(self) -> None:
        try:
            from kitgrade import check
        except ImportError:
            self.skipTest("kitgrade.check is not there")
        listings = {"08_demo": declared_listing(self.root / "grader/08_demo/test_demo.cu")}
        with fake_env():
            found = check.find_problems(self.root, self.manifest, listings)
        self.assertEqual(found, [])

    @unittest.skipIf(NVCC is None, "nvcc not found")
    def test_the_stub_and_the_solution_compile(self) -> None:
        include = ["-I", str(self.root / "common" / "include")]
        for first in ("labs", "solutions"):
            with tempfile.TemporaryDirectory() as out:
                proc = subprocess.run(
                    [NVCC, "-std=c++17", "-arch=sm_75", "-c",
                     "-I", str(self.root / first / "08_demo"),
                     "-I", str(self.root / "labs" / "08_demo"), *include,
                     str(self.root / first / "08_demo" / "demo.cu"), "-o", str(Path(out) / "demo.o")],
                    capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)

    @unittest.skipIf(NVCC is None, "nvcc not found")
    def test_its_remote_list_compiles_on_both_sides(self) -> None:
        # The judge's proxies and the worker's table, from the lab's remote.h (kit/remote.h).
        include = ["-I", str(self.root / "grader" / "08_demo"), "-I", str(self.root / "labs" / "08_demo"),
                   "-I", str(self.root / "common" / "include")]
        for table in ("remote_judge_table.cpp", "remote_worker_table.cpp"):
            with tempfile.TemporaryDirectory() as out:
                proc = subprocess.run(
                    [NVCC, "-std=c++17", "-x", "cu", "-arch=sm_75", "-c", *include,
                     str(self.root / "common" / "src" / table), "-o", str(Path(out) / "t.o")],
                    capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, table + "\n" + proc.stderr)


class Refusals(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.root = Path(tmp.name)
        for name in ("grader", "docs", "README.md"):  # enough for the manifest and the pages
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, self.root / name,
                                ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(source, self.root / name)
        (self.root / "labs" / "08_taken").mkdir(parents=True)

    def refuse(self, *argv: str) -> str:
        labs = (self.root / "grader" / "labs.json").read_text()
        err = io.StringIO()
        with fake_env():
            code = cli.main(["new-lab", *argv], root=self.root, stdout=io.StringIO(), stderr=err)
        self.assertEqual(code, 2, err.getvalue())
        self.assertEqual((self.root / "grader" / "labs.json").read_text(), labs)
        return err.getvalue()

    def test_an_existing_or_malformed_id_is_refused_and_nothing_written(self) -> None:
        self.assertIn("exists already", self.refuse("01_indexing", "Again"))
        self.assertIn("number 01 is taken by 01_indexing", self.refuse("01_other", "Other"))
        self.assertIn("name 'indexing' is taken", self.refuse("09_indexing", "Again"))
        self.assertIn("labs/08_taken exists already", self.refuse("08_taken", "Taken"))
        for bad in ("8_short", "08-dash", "08_Upper", "08_", "lab_08", "08_a b"):
            self.assertIn("is not a lab id", self.refuse(bad, "Title"), bad)
        self.assertIn("title", self.refuse("09_fine", 'a "quoted" title'))
        self.assertIn("title", self.refuse("09_fine", "  "))


if __name__ == "__main__":
    unittest.main()
