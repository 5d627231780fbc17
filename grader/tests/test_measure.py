"""Tests of the figures' measurement command (docs/figures/measure.py), without a GPU.

Stand-ins for the reference benchmarks (small Python programs named like them, in a temp build
folder's bin/) answer as Google Benchmark would: the JSON of --benchmark_out, or lab 07's CSV of
--kit_timeline_csv, or "not run: ..." without a GPU. The tests run measure.py's main() on them
(--no-build) and check the files it writes, that it writes none when a GPU or a number is
missing, and that make_figures.py draws every figure from what it wrote. Instructor only, as
measure.py is: it measures the reference solution.

Run: python3 -m unittest discover -s grader/tests -t grader
"""

from __future__ import annotations

import contextlib
import csv
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "docs" / "figures"
GPU = "NVIDIA H100 80GB HBM3, sm_90, 132 SMs, SM clock 1755/1980 MHz, memory clock 2619 MHz"


def load(name):
    """docs/figures/NAME.py as a module (registered first: its dataclasses look it up)."""
    spec = importlib.util.spec_from_file_location(f"figures_{name}", FIGURES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def bench(name, **counters):
    return {"name": name, "run_type": "iteration", **counters}


# What each stand-in reports: made-up numbers, in the benchmarks' own names and counters.
BENCHMARKS = {
    "bench_01_indexing_reference": [
        bench("BM_Saxpy/67108864/manual_time", **{"GB/s": 3050.0, "copy_ratio": 1.011})],
    "bench_02_bounds_reference": [
        bench("BM_ScaleShiftFast/67108864/manual_time", **{"GB/s": 2850.0, "copy_ratio": 0.951})],
    "bench_03_coalescing_reference": [
        bench("BM_Transpose/padded/8192/iterations:1/manual_time",
              **{"GB/s": 2800.0, "copy_ratio": 0.932})] + [
        bench(f"BM_StridedCopy/stride:{s}/iterations:1/manual_time",
              **{"GB/s": 2400.0 / s, "copy_GB/s": 3000.0, "copy_ratio": 0.8 / s})
        for s in (1, 2, 4, 8, 16, 32)],
    "bench_04_tiling_reference": [
        bench(f"BM_Matmul/{k}/4096/iterations:1/manual_time",
              **{"TFLOP/s": t, "vs_cublas": t / 50.0, "vs_naive": t / 6.0})
        for k, t in (("cublas_fp32", 50.0), ("naive", 6.0), ("tiled", 9.0), ("blocked", 39.0))],
    "bench_05_divergence_reference": [
        bench(f"reduce_benchmark/{k}/iterations:1/manual_time",
              **{"GB/s": g, "cub_GB/s": 3000.0, "cub_ratio": g / 3000.0})
        for k, g in (("interleaved", 420.0), ("sequential", 880.0), ("shuffle", 1250.0),
                     ("grid_stride", 2900.0), ("best", 2950.0))] + [
        bench("BM_CubSum/iterations:1/manual_time", **{"GB/s": 3000.0})],
}
TIMELINE = ("run,stream,chunk,stage,start_ms,end_ms\n"
            "serial,0,0,copy-in,0,1.5\nserial,0,0,kernel,1.5,3\nserial,0,0,copy-out,3,4.5\n"
            "serial,0,1,copy-in,4.5,6\nserial,0,1,kernel,6,7.5\nserial,0,1,copy-out,7.5,9\n"
            "pipelined,0,0,copy-in,0,1.5\npipelined,0,0,kernel,1.5,3\n"
            "pipelined,0,0,copy-out,3,4.5\npipelined,1,1,copy-in,0,3\n"
            "pipelined,1,1,kernel,3,4.5\npipelined,1,1,copy-out,4.5,6.123456\n"
            "ideal,,,bound,0,6\n")

STAND_IN = """#!{python}
import json, os, sys
if os.environ.get("FAKE_NO_GPU"):
    print("not run: no CUDA device (no NVIDIA driver found)")
    sys.exit(0)
args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
if "--kit_timeline_csv" in args:
    open(args["--kit_timeline_csv"], "w").write({timeline!r})
else:
    json.dump({{"context": {{"date": "2026-01-02T03:04:05+00:00", "gpu": {gpu!r}}},
               "benchmarks": json.loads({benchmarks!r})}}, open(args["--benchmark_out"], "w"))
"""


class MeasureTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.measure = load("measure")

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        self.out = self.root / "data"
        self.stand_ins(BENCHMARKS)

    def tearDown(self):
        self.tmp.cleanup()

    def stand_ins(self, benchmarks):
        bin_dir = self.root / "build" / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        for name in [*self.measure.FILTERS, self.measure.TIMELINE_PROGRAM]:
            program = bin_dir / name
            program.write_text(STAND_IN.format(
                python=sys.executable, timeline=TIMELINE, gpu=GPU,
                benchmarks=json.dumps(benchmarks.get(name, []))), encoding="utf-8")
            program.chmod(0o755)

    def run_main(self, *extra):
        stdout, stderr = io.StringIO(), io.StringIO()
        argv = ["--no-build", "--build-dir", str(self.root / "build"), "--out", str(self.out),
                *extra]
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = self.measure.main(argv)
        return code, stdout.getvalue() + stderr.getvalue()

    def test_every_data_set_is_written_with_its_source_line(self):
        code, output = self.run_main()
        self.assertEqual(code, 0, output)
        names = {p.name for p in self.out.iterdir()}
        self.assertEqual(names, {f"h100_{d.name}.csv" for d in self.measure.DATASETS})
        for dataset in self.measure.DATASETS:
            with self.subTest(dataset=dataset.name):
                lines = (self.out / f"h100_{dataset.name}.csv").read_text().splitlines()
                self.assertTrue(lines[0].startswith(
                    "# measured 2026-01-02 on NVIDIA H100 80GB HBM3 (sm_90, 132 SMs,"), lines[0])
                self.assertIn(" by: python3 docs/figures/measure.py (", lines[0])
                for program in dataset.sources:
                    self.assertIn(program, lines[0])
                rows = list(csv.DictReader(lines[1:]))
                self.assertEqual(tuple(rows[0]), dataset.columns)
        ladder = (self.out / "h100_lab04_ladder.csv").read_text().splitlines()[1:]
        self.assertEqual(ladder, ["kernel,tflops,ratio_to_cublas", "naive,6.00,0.120",
                                  "tiled,9.00,0.180", "register-blocked,39.00,0.780",
                                  "cuBLAS,50.00,1.000"])
        stride = (self.out / "h100_stride.csv").read_text().splitlines()
        self.assertEqual(stride[2:4], ["1,2400.0,3000.0,0.800", "2,1200.0,3000.0,0.400"])
        self.assertIn("CUB,3000.0,1.000", (self.out / "h100_reduction.csv").read_text())
        self.assertIn("pipelined,1,1,copy-out,4.500,6.123",
                      (self.out / "h100_streams_timeline.csv").read_text())

    def test_make_figures_draws_every_measured_figure_from_the_files(self):
        self.assertEqual(self.run_main()[0], 0)
        figures = self.root / "figures"
        result = subprocess.run([sys.executable, str(FIGURES / "make_figures.py"), str(figures),
                                 str(self.out)], capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        for name in load("make_figures").MEASURED:
            with self.subTest(figure=name):
                self.assertTrue((figures / name).is_file())
                self.assertIn(f"\\image html {name}",
                              (figures / (name[:-len(".svg")] + ".md")).read_text())

    def test_without_a_gpu_it_says_why_and_writes_nothing(self):
        with mock.patch.dict(os.environ, {"FAKE_NO_GPU": "1"}):
            code, output = self.run_main()
        self.assertEqual(code, 4)
        self.assertEqual(output, "measure: not run: no CUDA device (no NVIDIA driver found)\n")
        self.assertFalse(self.out.exists())

    def test_a_missing_benchmark_stops_it_before_any_file(self):
        self.stand_ins({k: v for k, v in BENCHMARKS.items() if "05" not in k})
        code, output = self.run_main()
        self.assertEqual(code, 3)
        self.assertIn("bench_05_divergence_reference reported no benchmark", output)
        self.assertFalse(self.out.exists())

    def test_slug_names_the_files(self):
        self.assertEqual(self.run_main("--slug", "h100sxm")[0], 0)
        self.assertTrue((self.out / "h100sxm_stride.csv").is_file())
        with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
            self.measure.main(["--slug", "H100_x"])

    def test_gpu_slug(self):
        slug = self.measure.gpu_slug
        self.assertEqual(slug("NVIDIA H100 80GB HBM3"), "h100")
        self.assertEqual(slug("NVIDIA H200"), "h200")
        self.assertEqual(slug("NVIDIA GeForce RTX 4090"), "rtx4090")
        self.assertEqual(slug("NVIDIA A100-SXM4-80GB"), "a100")
        self.assertEqual(slug("Tesla T4"), "t4")
        self.assertEqual(slug("NVIDIA GH200 480GB"), "gh200")
        self.assertEqual(slug("Some GPU"), "somegpu")


if __name__ == "__main__":
    unittest.main()
