"""Facts of the instructor's copy of the kit: its solutions and known-wrong submissions.
A student edition (kit.py release) has neither, and leaves this file out."""

from __future__ import annotations

import unittest
from pathlib import Path

from kitgrade import regions, runner
from kitgrade.manifest import load_manifest

ROOT = Path(__file__).resolve().parents[2]


class InstructorTreeTest(unittest.TestCase):
    def test_every_solution_is_its_stub_with_the_regions_filled_in(self) -> None:
        labs = load_manifest(ROOT / "grader" / "labs.json").labs
        self.assertEqual(regions.check_tree(ROOT, labs), [])

    def test_reference_and_wrong_builds_follow_the_cmake_layout(self) -> None:
        lab = load_manifest(ROOT / "grader" / "labs.json").find_lab("05")
        assert lab is not None
        build = Path("/b")
        reference = runner.lab_target(ROOT, build, lab, "reference")
        self.assertEqual(reference.sources[1].shown, "solutions/05_divergence/divergence.cu")
        wrong = runner.lab_target(ROOT, build, lab, "student", wrong="x")
        self.assertEqual(wrong.binary, build / "bin" / "wrong_05_divergence_x")
        self.assertEqual(wrong.archive.name, "liblab_05_divergence_wrong_x.a")  # type: ignore[union-attr]


if __name__ == "__main__":
    unittest.main()
