"""The noise study's summary: ratios per performance test across runs, and every non-pass."""

from __future__ import annotations

import json
import tempfile
import unittest
from pathlib import Path

from kitgrade import noise


def _run(ratio: str, status: str = "passed") -> dict:
    perf = {"lab": "04_tiling", "step": "tiling.perf", "id": "TilingPerf.BlockedRunsNearCublas",
            "title": "t", "kind": "perf", "points": 8, "score": 8, "status": status,
            "reason": "" if status == "passed" else "ratio below threshold", "output": "",
            "duration_s": 1.0, "measurements": {"ratio": ratio, "threshold": "0.750"},
            "visibility": "visible"}
    host = dict(perf, id="TilingHost.PhaseCountCoversK", kind="host", measurements={},
                status="passed", reason="")
    return {"seed": 1, "variant": "reference", "started_at": "x", "submission": None,
            "device": {"available": True, "name": "NVIDIA H100 80GB HBM3"},
            "score": 0, "max_score": 0,
            "labs": [{"lab": "04_tiling", "title": "T", "variant": "reference", "steps": {},
                      "error": None, "notes": [], "score": 0, "max_score": 0, "subtotals": [],
                      "tests": [host, perf]}]}


class NoiseStudyTest(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.out = Path(self._tmp.name)

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def _write(self, n: int, data: dict) -> None:
        run = self.out / f"run-{n:02d}"
        run.mkdir()
        (run / "kit-results.json").write_text(json.dumps(data))

    def test_min_median_max_across_runs(self) -> None:
        for i, r in enumerate(["0.781", "0.790", "0.779"], start=1):
            self._write(i, _run(r))
        study = noise.collect(self.out)
        self.assertEqual(study.runs, 3)
        self.assertEqual(study.problems, [])
        summary = noise.to_json(study)["perf"][0]
        self.assertEqual((summary["min"], summary["median"], summary["max"]), (0.779, 0.781, 0.79))
        text = noise.markdown(study)
        self.assertIn("| 04_tiling | TilingPerf.BlockedRunsNearCublas | 0.750 | 0.779 | 0.781 | 0.790 | 3 | +0.029 |", text)
        self.assertIn("6 in all (2 per run), 0 not passed", text)
        self.assertIn("NVIDIA H100 80GB HBM3", text)

    def test_a_failing_verdict_is_listed(self) -> None:
        self._write(1, _run("0.781"))
        self._write(2, _run("0.700", status="failed"))
        study = noise.collect(self.out)
        self.assertEqual(len(study.problems), 1)
        self.assertIn("run-02: 04_tiling TilingPerf.BlockedRunsNearCublas: failed", study.problems[0])
        self.assertIn("Verdicts that were not a pass", noise.markdown(study))

    def test_directories_without_results_are_not_runs(self) -> None:
        (self.out / "run-01").mkdir()
        self._write(2, _run("0.781"))
        self.assertEqual(noise.collect(self.out).runs, 1)


if __name__ == "__main__":
    unittest.main()
