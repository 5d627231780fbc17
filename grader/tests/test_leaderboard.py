"""kit.py leaderboard over a batch's reports, and Gradescope's leaderboard field."""

from __future__ import annotations

import io
import json
import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace

from kitgrade import leaderboard, reports
from kitgrade.model import LabResult, RunResult, Status, TestResult


def _lab(ratio: float | None, correct: bool = True, perf_passed: bool = True) -> LabResult:
    lab = LabResult("04_tiling", "Tiling", "student", {"tiling.1": "a", "tiling.perf": "p"})
    tests = [TestResult(lab="04_tiling", step="tiling.1", id="T.Correct", title="t", kind="gpu",
                        points=5, status=Status.PASSED if correct else Status.FAILED)]
    if ratio is not None:
        tests.append(TestResult(
            lab="04_tiling", step="tiling.perf", id="P.Blocked", title="p", kind="perf", points=5,
            status=Status.PASSED if perf_passed else Status.FAILED,
            measurements={"ratio": f"{ratio:.3f}", "threshold": "0.400",
                          "threshold_key": "tiling.blocked_vs_cublas"}))
    lab.tests = tests
    return lab


def _run(lab: LabResult) -> RunResult:
    return RunResult(seed=1, variant="student", device={"available": True, "name": "GPU"},
                     started_at="x", labs=[lab])


class LeaderboardTest(unittest.TestCase):
    def test_ranks_correct_submissions_by_ratio(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            for name, lab in (("ada", _lab(0.61)), ("bo", _lab(0.83)), ("cy", _lab(0.95, False)),
                              ("di", _lab(0.35, perf_passed=False)), ("ed", _lab(None))):
                (out / name).mkdir()
                (out / name / "kit-results.json").write_text(json.dumps(_run(lab).to_dict()))
            stdout = io.StringIO()
            args = SimpleNamespace(out=out)
            self.assertEqual(leaderboard._cmd_leaderboard(args, SimpleNamespace(stdout=stdout)), 0)
            text = (out / "leaderboard.md").read_text()
            self.assertIn("## tiling.blocked_vs_cublas", text)
            self.assertIn("| 1 | bo | 0.830 | yes |", text)
            self.assertIn("| 2 | ada | 0.610 | yes |", text)
            self.assertIn("| 3 | di | 0.350 | no |", text)
            self.assertNotIn("cy", text)  # fast but wrong: does not rank
            rows = (out / "leaderboard.csv").read_text().splitlines()
            self.assertEqual(rows[0], "key,rank,submission,ratio,bar_reached")
            self.assertEqual(rows[1], "tiling.blocked_vs_cublas,1,bo,0.830,1")
            self.assertEqual(stdout.getvalue(), text)

    def test_gradescope_gets_a_leaderboard_field_only_for_correct_labs(self) -> None:
        data = json.loads(reports.render_gradescope(_run(_lab(0.83))))
        self.assertEqual(data["leaderboard"],
                         [{"name": "tiling.blocked_vs_cublas", "value": 0.83, "order": "desc"}])
        data = json.loads(reports.render_gradescope(_run(_lab(0.95, correct=False))))
        self.assertNotIn("leaderboard", data)


if __name__ == "__main__":
    unittest.main()
