"""Result model and every report format, from a hand-built RunResult (no processes).

Run all runner tests from the repository root:
    python3 -m unittest discover -s grader/tests -t grader
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path
from unittest import mock

from kitgrade import reports
from kitgrade.model import LabResult, RunResult, Status, TestResult

NASTY_OUTPUT = "line 1 | pipe\n\x1b[31mred\x1b[0m and a NUL \x00\n```\nend"


def sample_run() -> RunResult:
    def test(test_id: str, step: str, kind: str, points: float, status: Status, reason: str = "",
             output: str = "", **extra: object) -> TestResult:
        return TestResult(lab="01_alpha", step=step, id=test_id, title=f"title of {test_id}",
                          kind=kind, points=points, status=status, reason=reason, output=output,
                          duration_s=0.25, **extra)  # type: ignore[arg-type]

    alpha = LabResult("01_alpha", "Lab alpha", "student",
                      {"alpha.1": "First step", "alpha.2": "Second step", "alpha.perf": "Fast"})
    alpha.tests = [
        test("Host.Passes", "alpha.1", "host", 2, Status.PASSED, measurements={"seed": "7"}),
        test("Host.Fails", "alpha.1", "host", 3, Status.FAILED, output=NASTY_OUTPUT),
        test("Host.Hidden", "alpha.1", "host", 1, Status.PASSED, visibility="hidden"),
        test("Crash.Segv", "alpha.2", "host", 1, Status.CRASHED, "crashed: SIGSEGV", "segv tail"),
        test("Hang.Sleeps", "alpha.2", "host", 1, Status.TIMED_OUT, "timed out after 2 s"),
        test("Gpu.Works", "alpha.2", "gpu", 2, Status.NOT_RUN, "no CUDA device"),
        test("Perf.Saxpy", "alpha.perf", "perf", 4.5, Status.PASSED,
             measurements={"ratio": "0.91", "threshold": "0.60", "student_gbps": "2710",
                           "ceiling_gbps": "2980"}),
    ]
    beta = LabResult("02_beta", "Lab beta", "student", {"beta.1": "Only"},
                     error="binary not built: /b/bin/grade_02_beta")
    return RunResult(seed=123, variant="student",
                     device={"available": True, "name": "Fake H100", "cc": "9.0"},
                     started_at="2024-01-01T00:00:00+00:00", labs=[alpha, beta])


class ModelTest(unittest.TestCase):
    def test_scores_and_subtotals(self) -> None:
        run = sample_run()
        alpha = run.labs[0]
        self.assertEqual((alpha.score, alpha.max_score), (7.5, 14.5))
        self.assertEqual([(s.step, s.title, s.score, s.max_score) for s in alpha.subtotals()],
                         [("alpha.1", "First step", 3, 6), ("alpha.2", "Second step", 0, 4),
                          ("alpha.perf", "Fast", 4.5, 4.5)])
        self.assertEqual((run.score, run.max_score), (7.5, 14.5))
        self.assertEqual([lab.lab for lab in run.errors], ["02_beta"])

    def test_score_follows_status(self) -> None:
        run = sample_run()
        self.assertTrue(all(t.score == 0 for t in run.tests() if t.status is not Status.PASSED))

    def test_json_round_trip(self) -> None:
        run = sample_run()
        data = json.loads(json.dumps(run.to_dict()))
        self.assertEqual(RunResult.from_dict(data).to_dict(), run.to_dict())
        self.assertEqual(RunResult.from_dict(data), run)

    def test_round_trip_cannot_inflate_score(self) -> None:
        data = sample_run().to_dict()
        data["labs"][0]["tests"][1]["score"] = 3  # a failed test claiming its points
        self.assertEqual(RunResult.from_dict(data).score, 7.5)


class SharedWordingTest(unittest.TestCase):
    def test_describe(self) -> None:
        texts = [reports.describe(t) for t in sample_run().tests()]
        self.assertEqual(texts, ["passed", "failed", "passed", "crashed: SIGSEGV",
                                 "timed out after 2 s", "not run: no CUDA device", "passed"])

    def test_measurement_text(self) -> None:
        perf = sample_run().labs[0].tests[-1]
        self.assertEqual(reports.measurement_text(perf),
                         "ratio 0.91 (threshold 0.60), 2710 GB/s vs ceiling 2980 GB/s")
        perf.measurements = {"ratio": "1.034", "threshold": "0.850", "spread": "0.015",
                             "student_rate": "4275.5 GB/s", "ceiling_rate": "4145.6 GB/s"}
        self.assertEqual(reports.measurement_text(perf),
                         "ratio 1.034 (threshold 0.850), 4275.5 GB/s vs ceiling 4145.6 GB/s")
        self.assertEqual(reports.measurement_text(sample_run().labs[0].tests[0]), "")

    def test_step_label(self) -> None:
        self.assertEqual(reports.step_label("indexing.1"), "Step 1")
        self.assertEqual(reports.step_label("indexing.perf"), "Step perf")


class TerminalTest(unittest.TestCase):
    def test_table_scores_and_details(self) -> None:
        text = reports.render_terminal(sample_run(), colour=False)
        self.assertIn("seed 123 — reproduce with --seed 123", text)
        self.assertIn("01_alpha · Lab alpha · student", text)
        self.assertIn("  Score: 7.5/14.5", text)
        self.assertIn("Score: not graded (binary not built: /b/bin/grade_02_beta)", text)
        self.assertIn("Total: 7.5/14.5 over 2 lab(s) — INCOMPLETE, not graded: 02_beta", text)
        self.assertIn("    Crash.Segv: crashed: SIGSEGV\n        segv tail", text)
        self.assertIn("    Gpu.Works: not run: no CUDA device", text)
        self.assertIn("Perf.Saxpy: passed · ratio 0.91 (threshold 0.60)", text)
        self.assertIn("        line 1 | pipe", text)
        self.assertNotIn("Host.Passes:", text)  # passing tests without numbers need no details
        self.assertNotIn("\x1b[1m", text)
        row = next(line for line in text.splitlines() if "title of Host.Fails" in line)
        self.assertRegex(row, r"^  1 +title of Host\.Fails +host +failed +0/3$")

    def test_at_most_the_width_titles_shortened_messages_wrapped(self) -> None:
        run = sample_run()
        long = run.labs[0].tests[0]
        long.title = "a title much longer than the table's title column could ever hold [n_33]"
        long.status, long.reason = Status.FAILED, ""
        long.output = ("expected 44, got 0: " + "lab04::phase_count(700, 16) " * 6 +
                       "\n  /a/path/that/is/much/longer/than/any/line/" + "x" * 90)
        for width in (80, 60):
            text = reports.render_terminal(run, width=width)
            self.assertEqual([line for line in text.splitlines() if len(line) > width], [])
            self.assertIn("… [n_33]", text)
            self.assertIn("lab04::phase_count(700, 16)", text)  # wrapped between words
        wide = reports.render_terminal(run, width=200)
        self.assertIn(long.title, wide)

    def test_not_run_lines_grouped_by_reason(self) -> None:
        run = sample_run()
        gpu = run.labs[0].tests[5]
        run.labs[0].tests += [TestResult("01_alpha", "alpha.2", f"Gpu.More{i}", "t", "gpu", 1,
                                         Status.NOT_RUN, gpu.reason) for i in range(3)]
        text = reports.render_terminal(run)
        self.assertIn("    4 tests: not run: no CUDA device", text)
        self.assertNotIn("Gpu.More1", text.split("Details:")[1])

    def test_long_titles_keep_their_parameter(self) -> None:
        title = "saxpy writes a*x+y to every element, none outside the array [n_1048583]"
        short = reports._truncate(title, 48)
        self.assertEqual(len(short), 48)
        self.assertTrue(short.endswith("… [n_1048583]"), short)
        self.assertEqual(reports._truncate("x" * 60, 10), "x" * 9 + "…")

    def test_colour_only_on_a_tty_without_no_color(self) -> None:
        tty = mock.Mock(spec=io.StringIO)
        tty.isatty.return_value = True
        with mock.patch.dict(os.environ, {"TERM": "xterm"}):
            os.environ.pop("NO_COLOR", None)
            self.assertTrue(reports.use_colour(tty))
            self.assertFalse(reports.use_colour(io.StringIO()))
            os.environ["NO_COLOR"] = "1"
            self.assertFalse(reports.use_colour(tty))
        self.assertIn("\x1b[32mpassed", reports.render_terminal(sample_run(), colour=True))


class JUnitTest(unittest.TestCase):
    def setUp(self) -> None:
        self.root = ET.fromstring(reports.render_junit(sample_run()))

    def case(self, name: str) -> ET.Element:
        (case,) = [c for c in self.root.iter("testcase") if c.get("name") == name]
        return case

    def test_counts(self) -> None:
        alpha, beta = self.root.findall("testsuite")
        self.assertEqual({k: alpha.get(k) for k in ("name", "tests", "failures", "errors", "skipped")},
                         {"name": "01_alpha", "tests": "7", "failures": "1", "errors": "2", "skipped": "1"})
        self.assertEqual((beta.get("errors"), self.root.get("tests")), ("1", "8"))

    def test_outcome_elements(self) -> None:
        failure = self.case("Host.Fails").find("failure")
        assert failure is not None
        self.assertIn("red", failure.text or "")
        self.assertNotIn("\x00", failure.text or "")
        self.assertEqual(self.case("Crash.Segv").find("error").get("message"), "crashed: SIGSEGV")  # type: ignore[union-attr]
        self.assertEqual(self.case("Hang.Sleeps").find("error").get("type"), "timed out")  # type: ignore[union-attr]
        self.assertEqual(self.case("Gpu.Works").find("skipped").get("message"), "no CUDA device")  # type: ignore[union-attr]
        self.assertEqual(list(self.case("Host.Passes")), [self.case("Host.Passes").find("properties")])
        self.assertIsNotNone(self.case("lab could not be graded").find("error"))

    def test_properties(self) -> None:
        props = {p.get("name"): p.get("value") for p in self.case("Perf.Saxpy").iter("property")}
        self.assertEqual((props["points"], props["score"], props["kind"], props["ratio"]),
                         ("4.5", "4.5", "perf", "0.91"))
        self.assertEqual(self.case("Perf.Saxpy").get("classname"), "01_alpha")


class GradescopeTest(unittest.TestCase):
    def setUp(self) -> None:
        self.doc = json.loads(reports.render_gradescope(sample_run()))
        self.tests = {t["name"]: t for t in self.doc["tests"]}

    def test_top_level(self) -> None:
        self.assertEqual((self.doc["score"], self.doc["max_score"], self.doc["visibility"]),
                         (7.5, 14.5, "visible"))
        self.assertIn("seed 123", self.doc["output"])
        self.assertIn("Fake H100", self.doc["output"])
        self.assertEqual(sum(t["score"] for t in self.doc["tests"]), self.doc["score"])

    def test_tests(self) -> None:
        passed = self.tests["01_alpha · Step 1 · title of Host.Passes"]
        self.assertEqual((passed["score"], passed["max_score"], passed["status"], passed["visibility"]),
                         (2, 2, "passed", "visible"))
        crashed = self.tests["01_alpha · Step 2 · title of Crash.Segv"]
        self.assertEqual((crashed["status"], crashed["output"]), ("failed", "crashed: SIGSEGV\nsegv tail"))
        self.assertEqual(self.tests["01_alpha · Step 2 · title of Gpu.Works"]["output"],
                         "not run: no CUDA device")
        self.assertEqual(self.tests["01_alpha · Step 1 · title of Host.Hidden"]["visibility"], "hidden")
        self.assertIn("ratio 0.91", self.tests["01_alpha · Step perf · title of Perf.Saxpy"]["output"])
        self.assertEqual({t["status"] for t in self.doc["tests"]}, {"passed", "failed"})
        self.assertIn("02_beta · could not be graded", self.tests)


class ThresholdSectionTest(unittest.TestCase):
    def test_a_bar_from_a_gpu_section_is_named_next_to_it(self) -> None:
        test = TestResult(lab="l", step="s.perf", id="P", title="t", kind="perf", points=1,
                          status=Status.PASSED, measurements={"ratio": "0.86", "threshold": "0.835",
                                                              "threshold_section": "NVIDIA H200"})
        self.assertEqual(reports.measurement_text(test), "ratio 0.86 (threshold 0.835, [NVIDIA H200])")
        test.measurements["threshold_section"] = "default"
        self.assertEqual(reports.measurement_text(test), "ratio 0.86 (threshold 0.835)")


class PrairieLearnTest(unittest.TestCase):
    """The fields of PrairieLearn's external-grader results (its docs/externalGrading.md,
    "Grading results"): score in [0, 1] when gradable; gradable false with format_errors when
    not; tests with name, description, points, max_points, message and output."""

    TEST_FIELDS = {"name", "description", "points", "max_points", "message", "output"}

    def check_fields(self, data: dict) -> None:
        self.assertLessEqual(set(data), {"gradable", "score", "message", "output", "tests",
                                         "format_errors", "images"})
        self.assertIsInstance(data["gradable"], bool)
        for test in data["tests"]:
            self.assertEqual(set(test), self.TEST_FIELDS)
            self.assertIsInstance(test["name"], str)
            self.assertLessEqual(test["points"], test["max_points"])
        if data["gradable"]:
            self.assertTrue(0.0 <= data["score"] <= 1.0)
        else:
            self.assertNotIn("score", data)
            self.assertTrue(data["format_errors"])

    def test_a_graded_run_has_a_fraction_and_every_test(self) -> None:
        run = sample_run()
        run.labs = run.labs[:1]  # only the lab that was graded
        data = json.loads(reports.render_prairielearn(run))
        self.check_fields(data)
        self.assertTrue(data["gradable"])
        self.assertAlmostEqual(data["score"], 7.5 / 14.5)
        self.assertEqual(len(data["tests"]), 7)
        perf = data["tests"][-1]
        self.assertEqual((perf["points"], perf["max_points"]), (4.5, 4.5))
        self.assertEqual(perf["description"], "title of Perf.Saxpy")
        hidden = data["tests"][2]
        self.assertEqual(hidden["description"], "a hidden test")
        self.assertEqual(hidden["output"], "")
        self.assertNotIn("Host.Hidden", json.dumps(data))

    def test_a_lab_that_could_not_be_graded_makes_it_not_gradable(self) -> None:
        data = json.loads(reports.render_prairielearn(sample_run()))
        self.check_fields(data)
        self.assertFalse(data["gradable"])
        self.assertIn("binary not built", data["format_errors"][0])

    def test_written_with_the_other_reports(self) -> None:
        self.assertIn("prairielearn.json", reports.render_all(sample_run()))


class MarkdownTest(unittest.TestCase):
    def test_summary(self) -> None:
        text = reports.render_markdown(sample_run())
        self.assertIn("**Score: 7.5/14.5**", text)
        self.assertIn("**Total: 7.5/14.5", text)
        self.assertIn("| alpha.2 | title of Crash.Segv | host | 💥 crashed: SIGSEGV | 0/1 |", text)
        self.assertIn("````text\n" + NASTY_OUTPUT + "\n````", text)  # fence outlasts the output's ```
        self.assertIn("binary not built", text)


class WriteTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.dir)

    def test_writes_every_report(self) -> None:
        paths = reports.write_reports(sample_run(), self.dir / "reports" / "student")
        self.assertEqual(sorted(p.name for p in paths),
                         ["junit.xml", "kit-results.json", "prairielearn.json", "results.json",
                          "summary.md"])
        self.assertEqual(sorted(p.name for p in (self.dir / "reports" / "student").iterdir()),
                         sorted(p.name for p in paths))  # no temp files left behind
        data = json.loads((self.dir / "reports" / "student" / "kit-results.json").read_text())
        self.assertEqual(RunResult.from_dict(data), sample_run())

    def test_atomic_write_keeps_old_file_on_failure(self) -> None:
        target = self.dir / "results.json"
        target.write_text("old")
        with mock.patch("kitgrade.reports.os.replace", side_effect=OSError("disk full")), \
                self.assertRaises(OSError):
            reports.write_atomic(target, "new")
        self.assertEqual(target.read_text(), "old")
        self.assertEqual([p.name for p in self.dir.iterdir()], ["results.json"])
        reports.write_atomic(target, "new")
        self.assertEqual(target.read_text(), "new")


if __name__ == "__main__":
    unittest.main()
