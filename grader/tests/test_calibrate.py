"""kit.py calibrate: bars proposed from runs of the reference, the section written, --check."""

from __future__ import annotations

import io
import json
import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace

from kitgrade import calibrate, thresholds

H200 = "NVIDIA H200"


def _run(ratios: dict[str, float], host_status: str = "passed", device: str = H200) -> dict:
    tests = [{"lab": "03_coalescing", "step": "coalescing.1", "id": "Host.Works", "title": "t",
              "kind": "host", "points": 1, "score": 1, "status": host_status, "reason": "",
              "output": "", "duration_s": 0.1, "measurements": {}, "visibility": "visible"}]
    for key, ratio in ratios.items():
        tests.append({"lab": "03_coalescing", "step": "coalescing.perf", "id": f"Perf.{key}",
                      "title": "t", "kind": "perf", "points": 5, "score": 5, "status": "passed",
                      "reason": "", "output": "", "duration_s": 1.0, "visibility": "visible",
                      "measurements": {"ratio": f"{ratio:.3f}", "threshold": "0.900",
                                       "threshold_key": key}})
    return {"seed": 1, "variant": "reference", "started_at": "x", "submission": None,
            "device": {"available": True, "name": device, "cc": "9.0"},
            "score": 0, "max_score": 0,
            "labs": [{"lab": "03_coalescing", "title": "C", "variant": "reference", "steps": {},
                      "error": None, "notes": [], "score": 0, "max_score": 0, "subtotals": [],
                      "tests": tests}]}


CONF = """# the kit's bars
coalescing.transpose_vs_device_copy     0.75      0.90
coalescing.transpose_vs_naive           2.5       4.0
"""


class CalibrateTest(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.root = Path(self._tmp.name)
        (self.root / "grader").mkdir()
        self.conf = self.root / "grader" / "thresholds.conf"
        self.conf.write_text(CONF)
        self.out = self.root / "runs"

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def runs(self, *results: dict) -> None:
        for i, data in enumerate(results, start=1):
            (self.out / f"run-{i:02d}").mkdir(parents=True)
            (self.out / f"run-{i:02d}" / "kit-results.json").write_text(json.dumps(data))

    def calibrate(self, *extra: str) -> tuple[int, str, str]:
        parser = calibrate.argparse.ArgumentParser()
        sub = parser.add_subparsers()
        calibrate.register(sub)
        args = parser.parse_args(["calibrate", "--runs", "3", "--out", str(self.out), *extra])
        out, err = io.StringIO(), io.StringIO()
        ctx = SimpleNamespace(root=self.root, stdout=out, stderr=err)
        code = args.handler(args, ctx)
        return code, out.getvalue(), err.getvalue()

    def test_proposed_bars_sit_three_spreads_below_the_lowest_ratio(self) -> None:
        # 0.853..0.857: spread 0.004, margin max(0.012, 2% of 0.853 = 0.01706) -> 0.835.
        self.assertEqual(calibrate.propose([0.853, 0.857, 0.854], (0.75, 0.90)), (0.695, 0.835))
        # A noisy key: spread 0.1 -> margin 0.3.
        self.assertEqual(calibrate.propose([5.9, 6.0, 5.95], (2.5, 4.0)), (3.5, 5.6))
        self.assertEqual(calibrate.propose([5.9, 6.0], (2.5, 4.0), student=3.0), (3.0, 5.6))

    def test_writes_a_section_for_the_gpu_that_the_graders_then_use(self) -> None:
        self.runs(*[_run({"coalescing.transpose_vs_device_copy": r,
                          "coalescing.transpose_vs_naive": 6.0}) for r in (0.853, 0.854, 0.857)])
        code, out, err = self.calibrate()
        self.assertEqual(code, 0, err)
        self.assertIn("(in use fails here)", out)  # 0.853 < 0.90: the H200's finding
        self.assertIn(f"wrote section [{H200}]", out)
        sections = thresholds.load_sections(self.conf)
        self.assertEqual(sections[H200]["coalescing.transpose_vs_device_copy"], (0.695, 0.835))
        self.assertEqual(calibrate.section_for(sections, "coalescing.transpose_vs_device_copy",
                                               "NVIDIA H200", "9.0"), H200)
        self.assertEqual(calibrate.section_for(sections, "coalescing.transpose_vs_device_copy",
                                               "NVIDIA H100 80GB HBM3", "9.0"), "")
        # Again: the section is replaced, not repeated, and the default section is untouched.
        code, out, _ = self.calibrate("--student", "coalescing.transpose_vs_naive=3")
        self.assertEqual(code, 0)
        text = self.conf.read_text()
        self.assertEqual(text.count(f"[{H200}]"), 1)
        self.assertEqual(text.count("# calibrate:"), 1)
        self.assertTrue(text.startswith(CONF))
        self.assertEqual(thresholds.load_sections(self.conf)[H200]["coalescing.transpose_vs_naive"],
                         (3.0, 5.88))
        # --check now finds the section's bars in use, and they hold.
        code, out, _ = self.calibrate("--check")
        self.assertEqual(code, 0)
        self.assertIn("the bars in use hold on this GPU", out)
        self.assertIn(f"coalescing: {H200}", out)

    def test_check_reports_failing_bars_and_writes_nothing(self) -> None:
        self.runs(*[_run({"coalescing.transpose_vs_device_copy": 0.85})] * 3)
        code, out, _ = self.calibrate("--check")
        self.assertEqual(code, 1)
        self.assertIn("fail here for coalescing.transpose_vs_device_copy", out)
        self.assertEqual(self.conf.read_text(), CONF)

    def test_refuses_to_write_when_the_reference_fails_correctness(self) -> None:
        self.runs(_run({"coalescing.transpose_vs_device_copy": 0.95}),
                  _run({"coalescing.transpose_vs_device_copy": 0.95}, host_status="failed"),
                  _run({"coalescing.transpose_vs_device_copy": 0.95}))
        code, _, err = self.calibrate()
        self.assertEqual(code, 1)
        self.assertIn("not written: the reference failed correctness tests", err)
        self.assertEqual(self.conf.read_text(), CONF)

    def test_runs_from_two_gpu_models_are_refused(self) -> None:
        self.runs(_run({"coalescing.transpose_vs_naive": 6.0}),
                  _run({"coalescing.transpose_vs_naive": 6.0}, device="NVIDIA H100 80GB HBM3"),
                  _run({"coalescing.transpose_vs_naive": 6.0}))
        code, _, err = self.calibrate()
        self.assertEqual(code, 2)
        self.assertIn("calibrate needs runs on one GPU model", err)


if __name__ == "__main__":
    unittest.main()
