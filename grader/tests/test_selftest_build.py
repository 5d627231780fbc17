"""How the selftest spends its time: it builds what its first grading needs, then the rest of
the tree in a thread beside the next steps, and counts that build once (unless
KIT_SELFTEST_BUILD_BESIDE=0); it grades two labs' known-wrong submissions at a time."""

from __future__ import annotations

import io
import os
import tempfile
import threading
import time
import unittest
from pathlib import Path
from unittest import mock

from kitgrade import selftest
from kitgrade.build import BuildError

from kitgrade import wrong
from kitgrade.model import LabResult, RunResult

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


class WrongLanesTest(unittest.TestCase):
    """Step 5: WRONG_LANES labs' known-wrong runs at a time, each lab's results kept apart and
    in order whatever order the runs end in."""

    def grade_together(self, lanes: str) -> tuple[selftest._Together, int, float]:
        labs = [make_lab(f"0{n}_lab{n}") for n in (1, 2, 3)]
        running, most, lock = [0], [0], threading.Lock()

        def fake_run(targets, options, on_result=None):  # type: ignore[no-untyped-def]
            wrongs = [t for t in targets if t.binary.name.startswith("wrong ")]
            if wrongs:
                with lock:
                    running[0] += 1
                    most[0] = max(most[0], running[0])
                # The first lab's run is the slowest: the others end before it.
                time.sleep(0.6 if wrongs[0].lab.id == "01_lab1" else 0.2)
                with lock:
                    running[0] -= 1
            return RunResult(1, "student", {}, "now", [
                LabResult(t.lab.id, t.binary.name, "student", {}) for t in targets])

        def fake_target(root, build_dir, lab, variant, wrong=None):  # type: ignore[no-untyped-def]
            return selftest.runner.LabTarget(
                lab, Path("/nonexistent") / (f"wrong {wrong}" if wrong else variant))

        def fake_load(root, lab):  # type: ignore[no-untyped-def]
            return [wrong.WrongSubmission(f"{lab.id}_{n}", "m", (), ("s",), "msg")
                    for n in (1, 2)]

        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.dict(os.environ, {selftest.LANES_ENV: lanes}), \
                mock.patch.object(selftest.runner, "run", fake_run), \
                mock.patch.object(selftest.runner, "lab_target", fake_target), \
                mock.patch.object(selftest.wrong, "load", fake_load):
            began = time.monotonic()
            together = selftest._grade_together(ROOT, labs, Path(tmp), 1, 4, True, None,
                                                io.StringIO())
            return together, most[0], time.monotonic() - began

    def test_two_labs_at_a_time_each_with_its_own_results_in_order(self) -> None:
        together, most, seconds = self.grade_together("2")
        self.assertEqual(most, 2)
        self.assertLess(seconds, 1.0)  # 0.6 beside 0.2 + 0.2, not 1.0 one after the other
        self.assertEqual([lab.id for lab, _ in together.wrongs], ["01_lab1", "02_lab2", "03_lab3"])
        for lab, run in together.wrongs:
            self.assertEqual([r.title for r in run.results], [f"wrong {lab.id}_{n}" for n in (1, 2)])

    def test_one_lane_grades_one_lab_after_another(self) -> None:
        _, most, seconds = self.grade_together("1")
        self.assertEqual(most, 1)
        self.assertGreaterEqual(seconds, 1.0)


if __name__ == "__main__":
    unittest.main()
