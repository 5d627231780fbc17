"""Instructor tooling: grading a folder of submissions (batch) and the Gradescope entry script.
A student edition leaves these (and this test file) out."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import unittest
from pathlib import Path

from kitgrade.cli import ExitCode

from .support import fake_env
from .test_submission import SubmissionCase


class BatchTest(SubmissionCase):
    def test_every_submission_gets_a_row_and_a_broken_one_does_not_stop_the_batch(self) -> None:
        root = self.tmp / "submissions"
        self.files(root / "ada", {"01_alpha/a.cu": "x", "01_alpha/b.cuh": "y", "02_beta/a.cu": "z"})
        self.files(root / "bob", {"01_alpha/a.cu": "BROKEN", "01_alpha/b.cuh": "y"})
        self.files(root / "cy", {"notes.txt": "I could not finish"})
        self.files(root / "dee", {"02_beta/a.cu": "z"})
        out_dir = self.tmp / "out"
        code, out, err = self.kit("batch", str(root), "--report-dir", str(out_dir), "--seed", "5")
        self.assertEqual(code, ExitCode.BUILD_OR_BINARY, err)
        with (out_dir / "scores.csv").open() as f:
            rows = list(csv.reader(f))
        self.assertEqual(rows[0], ["name", "total", "max", "01_alpha", "02_beta", "status"])
        self.assertEqual(rows[1], ["ada", "4", "4", "2", "2", "graded"])
        self.assertEqual(rows[2], ["bob", "", "", "", "", "build failed"])
        self.assertEqual(rows[3][:5], ["cy", "", "", "", ""])
        self.assertTrue(rows[3][5].startswith("not graded: ") and "holds no student file" in rows[3][5])
        self.assertEqual(rows[4], ["dee", "2", "2", "", "2", "graded"])
        self.assertTrue((out_dir / "ada" / "results.json").is_file())
        self.assertIn("BROKEN does not compile", (out_dir / "bob" / "build.log").read_text())
        self.assertEqual(json.loads((out_dir / "dee" / "kit-results.json").read_text())["seed"], 5)
        self.assertIn("  bob: -/- (build failed)", out)

    def test_labs_named_must_be_complete_and_usage_errors_write_nothing(self) -> None:
        root = self.tmp / "submissions"
        self.files(root / "ada", {"01_alpha/a.cu": "x", "01_alpha/b.cuh": "y"})
        out_dir = self.tmp / "out"
        code, _, _ = self.kit("batch", str(root), "01", "--report-dir", str(out_dir))
        self.assertEqual(code, ExitCode.OK)
        self.assertEqual(list(csv.reader((out_dir / "scores.csv").read_text().splitlines()))[1],
                         ["ada", "2", "2", "2", "graded"])
        for argv, message in [((str(self.tmp / "none"),), "not a directory"),
                              ((str(root / "ada" / "01_alpha"),), "has no subfolder"),
                              ((str(root), "xyz"), "unknown lab 'xyz'")]:
            with self.subTest(argv=argv):
                code, _, err = self.kit("batch", *argv, "--report-dir", str(self.tmp / "other"))
                self.assertEqual(code, ExitCode.USAGE)
                self.assertIn(message, err)
                self.assertFalse((self.tmp / "other").exists())


class PlatformScriptCase(SubmissionCase):
    """A platform's entry point (ci/...) against this fake kit (its paths come from the
    environment)."""

    SCRIPT: Path

    def run_script(self, folder: Path, labs: str = "", gpu: bool = True,
                   tests: str = "pass") -> dict:
        grader = Path(__file__).resolve().parents[1]
        shutil.copy(grader / "kit.py", self.root / "grader" / "kit.py")
        shutil.copytree(grader / "kitgrade", self.root / "grader" / "kitgrade",
                        ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
        shutil.copytree(grader.parent / "ci", self.root / "ci", dirs_exist_ok=True)
        results = self.tmp / "results"
        env = {"KIT": str(self.root), "SUBMISSION": str(folder), "RESULTS": str(results),
               "LABS": labs, "FAKE_GPU": "1" if gpu else "0"}
        with fake_env(PATH=self.path, FAKE_TESTS=tests, **env):
            proc = subprocess.run([str(self.SCRIPT)], capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        return json.loads((results / "results.json").read_text())


class GradescopeScriptTest(PlatformScriptCase):
    SCRIPT = Path(__file__).resolve().parents[2] / "ci" / "gradescope" / "run_autograder"

    def test_grades_the_submission(self) -> None:
        folder = self.files(self.tmp / "s", {"a.cu": "x", "b.cuh": "y"})
        results = self.run_script(folder, labs="01")
        self.assertEqual((results["score"], results["max_score"]), (2, 2))
        self.assertIn(f"submission {folder}", results["output"])

    def test_without_a_gpu_the_score_is_0_not_the_host_tests_points(self) -> None:
        folder = self.files(self.tmp / "s", {"a.cu": "x", "b.cuh": "y"})
        results = self.run_script(folder, labs="01", gpu=False, tests="pass,gpu")
        self.assertEqual(results["score"], 0)
        self.assertNotIn("tests", results)
        self.assertIn("Not graded: the grading machine has no usable NVIDIA GPU", results["output"])

    def test_a_missing_file_is_explained_to_the_student(self) -> None:
        folder = self.files(self.tmp / "s", {"a.cu": "x"})
        results = self.run_script(folder, labs="01")
        self.assertEqual(results["score"], 0)
        self.assertIn("Not graded: the submission could not be graded as it is (exit code 2)",
                      results["output"])
        self.assertIn("submission lacks 01_alpha's b.cuh", results["output"])


class PrairieLearnScriptTest(PlatformScriptCase):
    SCRIPT = Path(__file__).resolve().parents[2] / "ci" / "prairielearn" / "run"

    def test_grades_the_submission(self) -> None:
        folder = self.files(self.tmp / "s", {"a.cu": "x", "b.cuh": "y"})
        results = self.run_script(folder, labs="01")
        self.assertTrue(results["gradable"])
        self.assertEqual(results["score"], 1.0)
        self.assertEqual([(t["points"], t["max_points"]) for t in results["tests"]],
                         [(t["max_points"], t["max_points"]) for t in results["tests"]])

    def test_without_a_gpu_it_is_not_gradable_and_says_why(self) -> None:
        folder = self.files(self.tmp / "s", {"a.cu": "x", "b.cuh": "y"})
        results = self.run_script(folder, labs="01", gpu=False, tests="pass,gpu")
        self.assertFalse(results["gradable"])
        self.assertNotIn("score", results)
        self.assertEqual(results["tests"], [])
        self.assertIn("no usable NVIDIA GPU", results["message"])
        self.assertIn("(exit code 4)", results["format_errors"][0])


if __name__ == "__main__":
    unittest.main()
