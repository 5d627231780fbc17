"""Tests of the handouts' figures (docs/figures/make_figures.py).

The script draws every figure as SVG into a folder; these tests run it into a temp dir and check
that each expected file is written and parses as XML, that the figures carry the numbers they
illustrate, and that every `\\image html NAME` of docs/labs/*.md is one of the files it writes
(Doxygen would otherwise only warn about a missing image at docs-build time). The measured
figures are drawn from small made-up data files in a temp dir (MeasuredFiguresTest): from two
GPUs, from one, and from none, when no figure may be drawn and the fragments stay empty.

Run: python3 -m unittest discover -s grader/tests -t grader
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "figures" / "make_figures.py"
SVG = "{http://www.w3.org/2000/svg}"


def load_script():
    spec = importlib.util.spec_from_file_location("make_figures", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FiguresTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.module = load_script()
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = Path(cls.tmp.name) / "figures"
        result = subprocess.run([sys.executable, str(SCRIPT), str(cls.out)], capture_output=True,
                                text=True, timeout=120)
        cls.result = result

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def text_of(self, name):
        root = ET.parse(self.out / name).getroot()
        return " ".join(t.text or "" for t in root.iter(f"{SVG}text"))

    def test_script_succeeds(self):
        self.assertEqual(self.result.returncode, 0, self.result.stderr)

    def test_every_figure_is_written_and_well_formed(self):
        expected = set(self.module.FIGURES) | {
            name for name, (dataset, _, _) in self.module.MEASURED.items()
            if self.module.load_measured(self.module.DATA, dataset)}
        self.assertGreaterEqual(len(expected), 7)
        written = {p.name for p in self.out.glob("*.svg")}
        self.assertEqual(written, expected)
        for name in sorted(expected):
            with self.subTest(figure=name):
                root = ET.parse(self.out / name).getroot()
                self.assertEqual(root.tag, f"{SVG}svg")
                self.assertTrue(root.get("viewBox"))
                self.assertTrue(list(root.iter(f"{SVG}text")), "a figure without text")

    def test_every_lab_has_a_figure(self):
        labs = {re.match(r"lab(\d\d)_", n).group(1) for n in self.module.FIGURES
                if n.startswith("lab")}
        self.assertEqual(labs, {f"{i:02d}" for i in range(1, 8)})

    def test_handout_images_are_generated(self):
        written = {p.name for p in self.out.glob("*.svg")}
        referenced = {}
        for md in sorted((ROOT / "docs" / "labs").glob("*.md")):
            for name in re.findall(r"\\image\s+html\s+(\S+)", md.read_text(encoding="utf-8")):
                referenced.setdefault(name.strip('"'), md.name)
        self.assertTrue(referenced, "no handout embeds a figure")
        for name, md in referenced.items():
            with self.subTest(image=name, handout=md):
                self.assertIn(name, written)
        for n in range(1, 8):
            handouts = [md for md in referenced.values() if md.startswith(f"{n:02d}_")]
            self.assertTrue(handouts, f"handout {n:02d} embeds no figure")

    def test_handouts_include_only_fragments_that_are_written(self):
        # A handout shows a measured figure through its fragment (NAME.md beside NAME.svg); the
        # other fragments it includes are the generated tables (NN_name_*.md, thresholds.md).
        fragments = {p.name for p in self.out.glob("*.md")}
        self.assertEqual(fragments, {n[:-len(".svg")] + ".md" for n in self.module.MEASURED})
        shown = set()
        for md in sorted((ROOT / "docs" / "labs").glob("*.md")):
            for name in re.findall(r"^\\include\{doc\}\s+(\S+)\s*$",
                                   md.read_text(encoding="utf-8"), re.M):
                if not re.match(r"\d\d_|thresholds\.md$", name):
                    with self.subTest(fragment=name, handout=md.name):
                        self.assertIn(name, fragments)
                        shown.add(name)
        self.assertEqual(shown, fragments, "a measured figure that no handout shows")

    def test_figures_show_the_right_counts(self):
        self.assertIn("24 idle", self.text_of("lab01_grid_1d.svg"))
        self.assertIn("1808 idle", self.text_of("lab02_edge_guard.svg"))
        sectors = self.text_of("lab03_sectors.svg")
        self.assertIn("stride 1: 4 sectors", sectors)
        self.assertIn("stride 32: 32 sectors", sectors)
        banks = self.text_of("lab03_banks.svg")
        self.assertIn("32 passes", banks)
        self.assertIn("1 pass", banks)
        self.assertIn("done at 1.5 T", self.text_of("lab07_timeline.svg"))

    def test_occupancy_model_matches_the_handout(self):
        occ = self.module.occupancy
        # Lab 06's worked example: 256 threads, 40 registers, 20 KiB: 6 blocks, registers.
        self.assertEqual(occ(256, 40, 20 * 1024), (6, 0.75, ["registers"]))
        # The handout's H100 table: 32 registers at 256 threads ties warps and registers.
        self.assertEqual(occ(256, 32, 0)[0], 8)
        self.assertEqual(sorted(occ(256, 32, 0)[2]), ["registers", "warps"])
        self.assertEqual(occ(256, 72, 0)[0], 3)
        self.assertEqual(occ(256, 12, 33008)[:2], (6, 0.75))
        # 800 threads at 80 registers: checked as 28 warps, refused.
        self.assertEqual(occ(800, 80, 0)[0], 0)

    def test_measured_data_have_a_source_line(self):
        for csv_file in (ROOT / "docs" / "figures" / "data").glob("*.csv"):
            with self.subTest(data=csv_file.name):
                gpu, _, dataset = csv_file.stem.partition("_")
                self.assertIn(dataset, {d for d, _, _ in self.module.MEASURED.values()})
                first = csv_file.read_text(encoding="utf-8").splitlines()[0]
                self.assertRegex(first, r"^# measured \d{4}-\d\d-\d\d on .+ by: .")
                self.assertIn(gpu.upper(), first)


# Made-up measurements, only to exercise the drawing: two GPUs' files of every data set.
SYNTHETIC = {
    "bandwidth": "kernel,lab,gbps,ratio_to_memcpy\nsaxpy_fast,01,{a},1.011\n"
                 "scale_shift_fast,02,{a},0.951\ntranspose_padded,03,{a},0.932\n",
    "stride": "stride,gbps,memcpy_gbps,ratio_to_memcpy\n" + "".join(
        f"{s},{{a}},{{b}},{0.8 / s:.3f}\n" for s in (1, 2, 4, 8, 16, 32)),
    "lab04_ladder": "kernel,tflops,ratio_to_cublas\nnaive,{a},0.123\ntiled,{a},0.177\n"
                    "register-blocked,{a},0.777\ncuBLAS,{b},1.000\n",
    "reduction": "kernel,gbps,ratio_to_cub\ninterleaved,{a},0.141\nsequential,{a},0.294\n"
                 "best,{a},0.987\nCUB,{b},1.000\n",
    "streams_timeline": "run,stream,chunk,stage,start_ms,end_ms\n"
                        "serial,0,0,copy-in,0,1\nserial,0,0,kernel,1,2\nserial,0,0,copy-out,2,3\n"
                        "serial,0,1,copy-in,3,4\nserial,0,1,kernel,4,5\nserial,0,1,copy-out,5,6\n"
                        "pipelined,0,0,copy-in,0,1\npipelined,0,0,kernel,1,2\n"
                        "pipelined,0,0,copy-out,2,3\npipelined,1,1,copy-in,0,2\n"
                        "pipelined,1,1,kernel,2,3\npipelined,1,1,copy-out,3,{a}\n"
                        "ideal,,,bound,0,4.000\n",
}


def write_synthetic(data, gpus):
    data.mkdir(parents=True, exist_ok=True)
    for gpu, a, b in gpus:
        for dataset, text in SYNTHETIC.items():
            (data / f"{gpu}_{dataset}.csv").write_text(
                f"# measured 2026-01-02 on NVIDIA {gpu.upper()} (made up) by: a test\n"
                + text.format(a=a, b=b), encoding="utf-8")


class MeasuredFiguresTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.module = load_script()

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def draw(self, data):
        out = self.root / "out"
        result = subprocess.run([sys.executable, str(SCRIPT), str(out), str(data)],
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        return out

    def text_of(self, path):
        root = ET.parse(path).getroot()
        self.assertEqual(root.tag, f"{SVG}svg")
        return " ".join(t.text or "" for t in root.iter(f"{SVG}text"))

    def test_two_gpus_are_drawn_side_by_side(self):
        write_synthetic(self.root / "data", [("h100", "5.5", "50.5"), ("h200", "4.25", "60.5")])
        out = self.draw(self.root / "data")
        for name in self.module.MEASURED:
            with self.subTest(figure=name):
                text = self.text_of(out / name)
                self.assertIn("H100", text)
                self.assertIn("H200", text)
                self.assertIn("(made up)", text)
                fragment = (out / (name[:-len(".svg")] + ".md")).read_text(encoding="utf-8")
                self.assertTrue(fragment.startswith(f"\\image html {name} "), fragment)
                self.assertIn("the H100 and the H200", fragment)
                self.assertIn("h100_", fragment)
                self.assertIn("h200_", fragment)
        self.assertIn("0.40", self.text_of(out / "lab03_stride.svg"))  # stride 2: 0.8 / 2
        self.assertIn("cuBLAS H200", self.text_of(out / "lab04_ladder.svg"))
        self.assertIn("0.99", self.text_of(out / "lab05_reduction.svg"))
        timeline = self.text_of(out / "lab07_measured_timeline.svg")
        self.assertIn("H100: serial 6.00 ms, pipelined 5.50 ms", timeline)
        self.assertIn("ideal 4.00 ms", timeline)
        self.assertIn("K1", timeline)

    def test_one_gpu_is_enough(self):
        write_synthetic(self.root / "data", [("h100", "5.5", "50.5")])
        out = self.draw(self.root / "data")
        for name in self.module.MEASURED:
            with self.subTest(figure=name):
                self.assertIn("H100", self.text_of(out / name))
                fragment = (out / (name[:-len(".svg")] + ".md")).read_text(encoding="utf-8")
                self.assertIn("on the H100", fragment)

    def test_without_data_nothing_measured_is_drawn_or_shown(self):
        out = self.root / "out"
        out.mkdir()
        (out / "lab03_stride.svg").write_text("<svg/>")  # from an earlier build with data
        self.draw(self.root / "empty")
        for name in self.module.MEASURED:
            with self.subTest(figure=name):
                self.assertFalse((out / name).exists())
                fragment = out / (name[:-len(".svg")] + ".md")
                self.assertEqual(fragment.read_text(encoding="utf-8"), "")


if __name__ == "__main__":
    unittest.main()
