"""Tests of the thresholds-file check that runs before grading.

Run: python3 -m unittest discover -s grader/tests -t grader
"""
import io
import os
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from kitgrade import cli, counters, thresholds

ROOT = Path(__file__).resolve().parents[2]


class ThresholdsFile(unittest.TestCase):
    def load_text(self, text: str):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp, "t.conf")
            path.write_text(text)
            return thresholds.load(path)

    def test_the_kits_file_is_valid_and_reference_bars_are_stricter(self):
        table = thresholds.load(ROOT / "grader" / "thresholds.conf")
        self.assertIn("indexing.saxpy_vs_device_copy", table)
        for key, (student, reference) in table.items():
            if counters.is_counter_key(key):  # a most: the reference's is lower
                self.assertLessEqual(reference, student, key)
            else:
                self.assertGreaterEqual(reference, student, key)

    def test_malformed_lines_name_the_line(self):
        for text, message in [("a 0.5\n", ":1: expected"), ("\na 0.5 x\n", ":2: 'x' is not"),
                              ("a 1 2\na 1 2\n", ":2: duplicate key"), ("a 0 1\n", "'0' is not")]:
            with self.assertRaises(thresholds.ThresholdsError) as caught:
                self.load_text(text)
            self.assertIn(message, str(caught.exception))

    def test_sections_for_gpu_models_parse_as_the_graders_do(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp, "t.conf")
            path.write_text("a 0.6 0.9\nb 1 2\n[NVIDIA H200]  # a GPU\na 0.5 0.8\n[sm_89]\nb 1 1\n")
            sections = thresholds.load_sections(path)
            self.assertEqual(sections["NVIDIA H200"], {"a": (0.5, 0.8)})
            self.assertEqual(sections["sm_89"], {"b": (1.0, 1.0)})
            self.assertEqual(thresholds.load(path), {"a": (0.6, 0.9), "b": (1.0, 2.0)})
        for text, message in [("a 1 2\n[]\n", ":2: expected a section header"),
                              ("a 1 2\n[X]\n[X]\n", ":3: section [X] appears twice"),
                              ("a 1 2\n[X]\nb 1 2\n", ":3: 'b' is not a key of the default")]:
            with self.assertRaises(thresholds.ThresholdsError) as caught:
                self.load_text(text)
            self.assertIn(message, str(caught.exception))

    def test_a_new_key_goes_into_the_default_section_not_a_gpus(self):
        text = "# bars\na 0.6 0.9\n\n# calibrate: 5 runs\n[NVIDIA H100]\na 0.7 0.95\n"
        added = thresholds.with_default_lines(text, "b 1 2\n")
        self.assertEqual(added, "# bars\na 0.6 0.9\nb 1 2\n\n# calibrate: 5 runs\n"
                                "[NVIDIA H100]\na 0.7 0.95\n")
        self.assertEqual(thresholds.with_default_lines("a 0.6 0.9", "b 1 2\n"),
                         "a 0.6 0.9\nb 1 2\n")
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp, "t.conf")
            path.write_text(added)
            self.assertEqual(set(thresholds.load(path)), {"a", "b"})

    def test_graded_speed_gives_points_between_the_floor_and_the_bar(self):
        from kitgrade import runner
        from kitgrade.model import Status, TestResult
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp, "t.conf")
            path.write_text("a 0.6 0.9 0.2\nb 1.5 1.8\n[NVIDIA H200]\na 0.5 0.8 0.3\n")
            self.assertEqual(thresholds.floors(path), {"": {"a": 0.2}, "NVIDIA H200": {"a": 0.3}})

            def perf(ratio, key="a", section="default", status=Status.FAILED, bar="0.600"):
                return TestResult(lab="l", step="s.perf", id=f"P.{key}{ratio}", title="t",
                                  kind="perf", points=10, status=status, reason="below the bar",
                                  measurements={"ratio": ratio, "threshold": bar,
                                                "threshold_key": key,
                                                "threshold_section": section})
            tests = [perf("0.400"), perf("0.100"), perf("0.700", status=Status.PASSED),
                     perf("1.000", key="b", bar="1.500"), perf("0.400", section="NVIDIA H200",
                                                                bar="0.500")]
            runner.graded_speed(tests, path)
            self.assertEqual([t.score for t in tests], [5.0, 0, 10, 0, 5.0])
            self.assertIn("graded speed: 5 of 10 points (ratio 0.4 between the floor 0.2",
                          tests[0].reason)
            self.assertNotIn("graded_score", tests[3].measurements)  # b: all or nothing
            again = TestResult.from_dict(tests[0].to_dict())
            self.assertEqual(again.score, 5.0)  # survives kit-results.json
        with self.assertRaises(thresholds.ThresholdsError):
            self.load_text("a 0.6 0.9 0.6\n")

    def test_grade_stops_with_exit_2_and_no_reports_on_a_bad_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            bad = Path(tmp, "bad.conf")
            bad.write_text("indexing.saxpy_vs_device_copy 0.6 fast\n")
            err = io.StringIO()
            with mock.patch.dict(os.environ, {"KIT_THRESHOLDS": str(bad)}):
                code = cli.main(["grade", "01", "--no-build", "--build-dir", str(Path(tmp, "b"))],
                                root=ROOT, stdout=io.StringIO(), stderr=err)
            self.assertEqual(code, 2)
            self.assertIn("'fast' is not a positive ratio", err.getvalue())
            self.assertFalse(Path(tmp, "b", "reports").exists())


if __name__ == "__main__":
    unittest.main()
