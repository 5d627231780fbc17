"""The selftest builds what its first grading needs, then the rest of the tree in a thread beside
the next steps, and counts that build once (unless KIT_SELFTEST_BUILD_BESIDE=0)."""

from __future__ import annotations

import io
import threading
import unittest
from pathlib import Path
from unittest import mock

from kitgrade import selftest
from kitgrade.build import BuildError

from .support import make_lab

ROOT = Path(__file__).resolve().parents[2]


class FirstTargetsTest(unittest.TestCase):
    def test_the_graders_of_stubs_and_solutions_the_unit_tests_and_the_fake_lab(self) -> None:
        labs = [make_lab("01_alpha"), make_lab("02_beta")]
        names = selftest._first_targets(ROOT, labs, instructor=True)
        self.assertIn("kit_unit_tests", names)
        # The fake lab where this tree has it (a student edition has no grader/selftest/).
        self.assertEqual("kit_fake_lab" in names,
                         (ROOT / "grader" / "selftest" / "fake_lab.cu").is_file())
        self.assertNotIn("all", names)
        self.assertEqual(len(names), len(set(names)))
        for lab in labs:
            for variant in ("student", "reference"):
                self.assertIn(selftest.runner.target_name(lab, variant), names)

    def test_a_student_edition_builds_no_reference_grader_of_its_own(self) -> None:
        labs = [make_lab("01_alpha")]
        names = selftest._first_targets(ROOT, labs, instructor=False)
        self.assertIn(selftest.runner.target_name(labs[0], "student"), names)


class RestOfBuildTest(unittest.TestCase):
    def test_it_builds_everything_niced_in_the_background_and_is_counted_once(self) -> None:
        release = threading.Event()
        calls = []

        def fake_build(root, build_dir, targets, **kwargs):  # type: ignore[no-untyped-def]
            calls.append((list(targets), kwargs.get("nice")))
            release.wait(5)

        with mock.patch.object(selftest, "ensure_built", fake_build):
            rest = selftest._RestOfBuild(ROOT, Path("/nonexistent"))
            self.assertFalse(rest.done.done())  # still building: the caller goes on meanwhile
            release.set()
            tally, out = selftest.Tally(), io.StringIO()
            self.assertTrue(rest.finish(tally, out))
            self.assertTrue(rest.finish(tally, out))
        self.assertEqual(calls, [(["all"], selftest.BUILD_BESIDE_NICE)])
        self.assertEqual((tally.passed, tally.failed), (1, 0))

    def test_a_failed_build_is_one_failed_check_with_its_output(self) -> None:
        def failing(root, build_dir, targets, **kwargs):  # type: ignore[no-untyped-def]
            raise BuildError("`cmake --build` exited with code 1", output="bench.cu:3: error\n")

        with mock.patch.object(selftest, "ensure_built", failing):
            rest = selftest._RestOfBuild(ROOT, Path("/nonexistent"))
            tally, out = selftest.Tally(), io.StringIO()
            self.assertFalse(rest.finish(tally, out))
            self.assertFalse(rest.finish(tally, out))
        self.assertEqual((tally.passed, tally.failed), (0, 1))
        self.assertIn("bench.cu:3: error", out.getvalue())


if __name__ == "__main__":
    unittest.main()
