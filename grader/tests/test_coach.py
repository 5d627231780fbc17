"""kitgrade.coach: a crash, a hang or a CUDA error gets a "likely:" paragraph saying why."""

from __future__ import annotations

import unittest

from kitgrade import coach
from kitgrade.model import Status


def advice(status: Status, reason: str, output: str = "") -> str:
    return coach.advice("02", status, reason, output) or ""


class CoachTest(unittest.TestCase):
    def test_a_hang_points_at_loops_and_barriers(self) -> None:
        text = advice(Status.TIMED_OUT, "timed out after 60 s")
        self.assertTrue(text.startswith("likely: the test never finished"), text)
        self.assertIn("a grid-stride step of 0", " ".join(text.split()))
        self.assertIn("__syncthreads()", text)

    def test_cuda_errors_by_message_or_name(self) -> None:
        for words, expected in (
                ("left the GPU in an error state: an illegal memory access was encountered",
                 "python3 grader/kit.py sanitize 02"),
                ("cudaErrorMisalignedAddress", "float2 or float4 access"),
                ("too many resources requested for launch", "launch smaller blocks"),
                ("invalid configuration argument", "a grid or block of 0"),
                ("unspecified launch failure", "a kernel faulted"),
                ("cudaErrorMemoryAllocation", "byte count")):
            with self.subTest(words=words):
                self.assertIn(expected, " ".join(advice(Status.FAILED, "", words).split()))

    def test_signals_and_early_exits(self) -> None:
        for reason, expected in (("crashed: SIGSEGV", "device pointer"),
                                 ("crashed: SIGFPE", "division"),
                                 ("crashed: SIGABRT", "a failed assert"),
                                 ("crashed: exited with code 0 before reporting a result",
                                  "ended the program"),
                                 ("crashed: no authentic result (the result file is not signed "
                                  "by the kit's main())", "result files")):
            with self.subTest(reason=reason):
                self.assertIn(expected, " ".join(advice(Status.CRASHED, reason).split()))

    def test_nothing_for_a_plain_failure_or_an_own_diagnosis(self) -> None:
        self.assertEqual(advice(Status.FAILED, "", "out: 3 of 1000 elements wrong"), "")
        own = "out: 3 of 1000 elements wrong\nlikely: the grid is rounded down"
        self.assertEqual(advice(Status.FAILED, "", own + "\nan illegal memory access"), "")
        self.assertEqual(advice(Status.NOT_RUN, "not run: too little GPU memory (out of memory)"),
                         "")
        self.assertEqual(advice(Status.PASSED, ""), "")

    def test_words_a_student_prints_do_not_choose_a_verdicts_advice(self) -> None:
        # Student code can print anything into its output; the timeout and crash rules follow
        # the runner's status, so a failed test that prints "timed out" or "SIGSEGV" gets none.
        printed = "timed out after 60 s\ncrashed: SIGSEGV\nexited with code 0"
        self.assertEqual(advice(Status.FAILED, "", printed), "")
        self.assertEqual(advice(Status.PASSED, "", "an illegal memory access"), "")

    def test_fits_80_columns_indented_and_one_screen(self) -> None:
        for rule in coach.RULES:
            status = next(iter(rule.statuses))
            text = advice(status, rule.words[0])
            self.assertTrue(text.startswith("likely: "), rule)
            self.assertTrue(all(len(line) <= coach.WIDTH for line in text.splitlines()), text)
            self.assertLessEqual(len(text.splitlines()), coach.LINES, text)


if __name__ == "__main__":
    unittest.main()
