"""kit.py progress: the records `grade` keeps, every step state, the bar and the next step.

Run all runner tests from the repository root:
    python3 -m unittest discover -s grader/tests -t grader
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import time
import unittest
from pathlib import Path

from kitgrade import progress
from kitgrade.cli import main
from kitgrade.model import LabResult, RunResult, Status, TestResult

from .support import fake_env, make_repo

ALPHA_STEPS = {f"alpha.{s}": f"step {s} of alpha" for s in ("1", "2", "3", "perf")}


def test(step: str, name: str, status: Status, kind: str = "host", reason: str = "") -> TestResult:
    return TestResult("01_alpha", step, f"S.{name}", name, kind, 1, status, reason)


def alpha_run(tests: list[TestResult], *, gpu: bool = False, variant: str = "student",
              started: str = "2024-05-01T10:00:00+00:00") -> RunResult:
    lab = LabResult("01_alpha", "Lab alpha", variant, dict(ALPHA_STEPS), tests)
    return RunResult(7, variant, {"available": gpu}, started, [lab])


EVERY_STATE = [
    test("alpha.1", "a", Status.PASSED), test("alpha.1", "b", Status.PASSED),
    test("alpha.2", "c", Status.PASSED), test("alpha.2", "d", Status.FAILED),
    test("alpha.2", "e", Status.CRASHED),
    test("alpha.3", "f", Status.PASSED), test("alpha.3", "g", Status.NOT_RUN, "gpu", "no CUDA device"),
    test("alpha.perf", "h", Status.NOT_RUN, "perf", "correctness steps did not all pass"),
]


class ProgressCase(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.root = make_repo(self.tmp / "repo", ["01_alpha", "02_beta"])
        self.build = self.root / "build"
        old = time.time() - 3600  # the student files were saved before any grade below
        for lab in ("01_alpha", "02_beta"):
            os.utime(self.root / "labs" / lab / "a.cu", (old, old))

    def kit(self, *argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = main(list(argv), root=self.root, stdout=out, stderr=err)
        return code, out.getvalue(), err.getvalue()

    def now(self) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())


class SaveTest(ProgressCase):
    def test_student_grade_of_labs_is_saved_atomically_as_json(self) -> None:
        paths = progress.save(alpha_run(EVERY_STATE, gpu=True), self.build)
        self.assertEqual(paths, [self.build / "progress" / "01_alpha.json"])
        data = json.loads(paths[0].read_text())
        self.assertEqual((data["seed"], data["graded_at"], data["variant"], data["gpu_available"]),
                         (7, "2024-05-01T10:00:00+00:00", "student", True))
        self.assertEqual(data["lab"]["score"], 4)
        self.assertEqual(len(data["lab"]["tests"]), len(EVERY_STATE))
        self.assertEqual([p.name for p in paths[0].parent.iterdir()], ["01_alpha.json"])  # no temp

    def test_reference_and_submission_runs_are_not_progress(self) -> None:
        self.assertEqual(progress.save(alpha_run(EVERY_STATE, variant="reference"), self.build), [])
        run = alpha_run(EVERY_STATE)
        run.submission = "/somewhere/else"
        self.assertEqual(progress.save(run, self.build), [])
        self.assertFalse((self.build / "progress").exists())

    def test_grade_saves_and_reference_grade_does_not(self) -> None:
        with fake_env(FAKE_TESTS="pass,fail"):
            self.assertEqual(self.kit("grade", "01", "--no-build", "--quiet")[0], 1)
        record = json.loads((self.build / "progress" / "01_alpha.json").read_text())
        self.assertEqual([t["status"] for t in record["lab"]["tests"]], ["passed", "failed"])
        (self.build / "progress" / "01_alpha.json").unlink()
        shutil.copy(self.build / "bin" / "grade_01_alpha", self.build / "bin" / "reference_01_alpha")
        with fake_env(FAKE_TESTS="pass", FAKE_PROGRAM="reference_01_alpha"):
            self.kit("grade", "01", "--no-build", "--quiet", "--variant", "reference")
        self.assertFalse((self.build / "progress" / "01_alpha.json").exists())

    def test_unwritable_build_dir_is_not_an_error(self) -> None:
        self.build.mkdir(exist_ok=True)
        (self.build / "progress").write_text("a file where the folder should be")
        self.assertEqual(progress.save(alpha_run(EVERY_STATE), self.build), [])


class StatesTest(ProgressCase):
    def test_every_state_the_bar_and_the_next_step(self) -> None:
        progress.save(alpha_run(EVERY_STATE, started=self.now()), self.build)
        code, out, _ = self.kit("progress")
        self.assertEqual(code, 0)
        lines = out.splitlines()
        self.assertEqual(lines[0], "Progress [####..........................] 1/8 steps")
        self.assertTrue(lines[2].startswith("01_alpha · Lab alpha — 4/8 points, graded "), lines[2])
        self.assertTrue(lines[2].endswith(", no GPU"), lines[2])
        self.assertEqual(lines[3:9], [  # a detail that would pass 80 columns gets its own line
            "  done            1     step 1 of alpha",
            "  failing         2     step 2 of alpha — 2 of 3 tests failing",
            "  not run         3     step 3 of alpha",
            "                        not run: no CUDA device (1 of 2 tests passed)",
            "  not run         perf  step perf of alpha",
            "                        not run: correctness steps did not all pass",
        ])
        self.assertEqual(lines[10], "02_beta · Lab beta — not graded yet")
        self.assertEqual(lines[11], "  not graded yet  1     step 1 of beta")
        self.assertNotIn("changed since last grade", out)
        self.assertEqual(lines[-3:], [
            "Next: lab 01_alpha, step 2: step 2 of alpha",
            "  python3 grader/kit.py hint 01 2   a hint for this step",
            "  python3 grader/kit.py watch 01    regrade on every save",
        ])

    def test_next_step_skips_what_only_a_gpu_can_check(self) -> None:
        tests = [test(f"alpha.{s}", s, Status.PASSED) for s in ("1", "2", "3")]
        tests.append(test("alpha.perf", "p", Status.NOT_RUN, "perf", "no CUDA device"))
        progress.save(alpha_run(tests, started=self.now()), self.build)
        out = self.kit("progress")[1]
        self.assertIn("[###########...................] 3/8 steps", out)
        self.assertIn("Next: lab 02_beta, step 1: step 1 of beta", out)
        self.assertIn("python3 grader/kit.py hint 02 1", out)
        # lab 02 all done too: only the GPU step is left, and it is named as such
        beta = LabResult("02_beta", "Lab beta", "student",
                         {f"beta.{s}": s for s in ("1", "2", "3", "perf")},
                         [TestResult("02_beta", f"beta.{s}", f"B.{s}", s, "host", 1, Status.PASSED)
                          for s in ("1", "2", "3", "perf")])
        progress.save(RunResult(1, "student", {"available": False}, self.now(), [beta]), self.build)
        out = self.kit("progress")[1]
        self.assertIn("7/8 steps", out)
        self.assertIn("Every step this machine can check is done; the rest need a CUDA device.", out)
        self.assertIn("Next: lab 01_alpha, step perf", out)

    def test_all_done(self) -> None:
        for lab, name in (("01_alpha", "alpha"), ("02_beta", "beta")):
            result = LabResult(lab, name, "student", {f"{name}.{s}": s for s in ("1", "2", "3", "perf")},
                               [TestResult(lab, f"{name}.{s}", f"T.{s}", s, "gpu", 1, Status.PASSED)
                                for s in ("1", "2", "3", "perf")])
            progress.save(RunResult(1, "student", {"available": True}, self.now(), [result]), self.build)
        out = self.kit("progress")[1]
        self.assertIn("[##############################] 8/8 steps", out)
        self.assertTrue(out.rstrip().endswith("Every step of every lab is done."))

    def test_changed_since_last_grade(self) -> None:
        progress.save(alpha_run(EVERY_STATE, started="2024-05-01T10:00:00+00:00"), self.build)
        saved = time.mktime((2024, 4, 30, 12, 0, 0, 0, 0, -1))
        os.utime(self.root / "labs" / "01_alpha" / "a.cu", (saved, saved))
        self.assertNotIn("changed since last grade", self.kit("progress")[1])  # saved in 2024-
        os.utime(self.root / "labs" / "01_alpha" / "a.cu")  # saved now: after that grade
        out = self.kit("progress")[1]
        self.assertIn("  changed since last grade: python3 grader/kit.py grade 01", out)
        self.assertIn("  failing         2", out)  # the states of the older code are still shown

    def test_a_lab_that_could_not_be_graded(self) -> None:
        run = alpha_run([], started=self.now())
        run.labs[0].error = "binary not built: build/bin/grade_01_alpha"
        progress.save(run, self.build)
        out = self.kit("progress")[1]
        self.assertIn("01_alpha · Lab alpha\n  could not be graded last time: binary not built: "
                      "build/bin/grade_01_alpha\n", out)  # under the name: 93 columns on one line
        self.assertIn("  not graded yet  1     step 1 of alpha", out)
        self.assertIn("0/8 steps", out)

    def test_unreadable_record_counts_as_not_graded(self) -> None:
        (self.build / "progress").mkdir(parents=True)
        (self.build / "progress" / "01_alpha.json").write_text("{not json")
        code, out, _ = self.kit("progress")
        self.assertEqual(code, 0)
        self.assertIn("01_alpha · Lab alpha — not graded yet", out)
        self.assertIn("Next: lab 01_alpha, step 1", out)

    def test_build_dir_option(self) -> None:
        other = self.tmp / "elsewhere"
        progress.save(alpha_run(EVERY_STATE, started=self.now()), other)
        self.assertIn("0/8 steps", self.kit("progress")[1])
        self.assertIn("1/8 steps", self.kit("progress", "--build-dir", str(other))[1])

    def test_end_to_end_through_grade(self) -> None:
        with fake_env(FAKE_TESTS="pass,gpu"):  # no GPU: alpha.2's only test is not run
            self.kit("grade", "01", "--no-build", "--quiet")
        out = self.kit("progress")[1]
        self.assertIn("  done            1", out)
        self.assertIn("  not run         2     step 2 of alpha — not run: no CUDA device", out)
        self.assertIn("  not graded yet  3     step 3 of alpha — no test of this step ran", out)


class WidthTest(unittest.TestCase):
    def test_the_kits_own_labs_fit_80_columns(self) -> None:
        """Step titles of up to 75 characters (lab 04's step 4) hang under their first line."""
        with tempfile.TemporaryDirectory() as build:
            out = io.StringIO()
            self.assertEqual(main(["progress", "--build-dir", build], stdout=out,
                                  stderr=io.StringIO()), 0)
        lines = out.getvalue().splitlines()
        self.assertEqual([line for line in lines if len(line) > 80], [])
        self.assertIn("  not graded yet  4     No race, no barrier out of step: the products under", lines)
        self.assertIn(" " * 24 + "racecheck and synccheck", lines)


class BarTest(unittest.TestCase):
    def test_bar(self) -> None:
        self.assertEqual(progress.bar(12, 33, width=14), "[#####.........] 12/33 steps")
        self.assertEqual(progress.bar(0, 33, width=4), "[....] 0/33 steps")
        self.assertEqual(progress.bar(32, 33, width=4), "[###.] 32/33 steps")  # full only at the end
        self.assertEqual(progress.bar(33, 33, width=4), "[####] 33/33 steps")


if __name__ == "__main__":
    unittest.main()
