"""Tests of the handouts' figures (docs/figures/make_figures.py).

The script draws every figure as SVG into a folder; these tests run it into a temp dir and check
that each expected file is written and parses as XML, that the figures carry the numbers they
illustrate, and that every `\\image html NAME` of docs/labs/*.md is one of the files it writes
(Doxygen would otherwise only warn about a missing image at docs-build time).

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
        expected = set(self.module.FIGURES)
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
                first = csv_file.read_text(encoding="utf-8").splitlines()[0]
                self.assertTrue(first.startswith("#"))
                self.assertIn("H100", first)
                self.assertIn("kit.py grade", first)


if __name__ == "__main__":
    unittest.main()
