"""Manifest loading, validation and lab/step lookup.

Run all runner tests from the repository root:
    python3 -m unittest discover -s grader/tests -t grader
"""

from __future__ import annotations

import json
import tempfile
import unittest
from pathlib import Path

from kitgrade import runner
from kitgrade.manifest import ManifestError, load_manifest, parse_manifest

from .support import lab_entry

REAL_MANIFEST = Path(__file__).resolve().parents[1] / "labs.json"


class RealManifestTest(unittest.TestCase):
    def test_lab_01_has_six_steps_with_three_hints_each(self) -> None:
        manifest = load_manifest(REAL_MANIFEST)
        lab = manifest.find_lab("01_indexing")
        assert lab is not None
        self.assertEqual([s.id for s in lab.steps],
                         ["indexing.1", "indexing.2", "indexing.3", "indexing.4", "indexing.5",
                          "indexing.perf"])
        self.assertTrue(all(len(s.hints) == 3 for s in lab.steps))
        self.assertEqual(lab.student_files, ("index_math.cuh", "indexing.cu"))
        self.assertEqual(lab.timeout_s, 60)
        self.assertEqual(lab.banned_libraries, ())

    def test_lab_05_bans_cub_and_thrust_from_its_reduction_steps(self) -> None:
        lab = load_manifest(REAL_MANIFEST).find_lab("05")
        assert lab is not None
        self.assertEqual([(b.name, b.steps) for b in lab.banned_libraries],
                         [("CUB", ("divergence.2", "divergence.perf")),
                          ("Thrust", ("divergence.2", "divergence.perf"))])


class LookupTest(unittest.TestCase):
    def setUp(self) -> None:
        self.manifest = parse_manifest({"labs": [lab_entry("01_alpha"), lab_entry("02_beta")]})

    def test_lab_by_id_number_or_name(self) -> None:
        for query in ("02_beta", "02", "2", "beta", "BETA"):
            lab = self.manifest.find_lab(query)
            self.assertIsNotNone(lab, query)
            assert lab is not None
            self.assertEqual(lab.id, "02_beta")
        self.assertIsNone(self.manifest.find_lab("gamma"))

    def test_step_by_id_or_suffix(self) -> None:
        lab = self.manifest.labs[0]
        self.assertEqual(lab.find_step("1").id, "alpha.1")  # type: ignore[union-attr]
        self.assertEqual(lab.find_step("alpha.perf").id, "alpha.perf")  # type: ignore[union-attr]
        self.assertIsNone(lab.find_step("9"))

    def test_visibility_defaults_to_visible_and_passes_through(self) -> None:
        entry = lab_entry("01_alpha")
        entry["steps"][1]["visibility"] = "hidden"
        lab = parse_manifest({"labs": [entry]}).labs[0]
        self.assertEqual([s.visibility for s in lab.steps],
                         ["visible", "hidden", "visible", "visible"])


class ValidationTest(unittest.TestCase):
    def assert_rejected(self, mutate, expected: str) -> None:
        data = {"labs": [lab_entry("01_alpha"), lab_entry("02_beta")]}
        mutate(data)
        with self.assertRaises(ManifestError) as caught:
            parse_manifest(data)
        self.assertIn(expected, str(caught.exception))

    def test_errors_name_the_bad_field(self) -> None:
        cases = [
            (lambda d: d["labs"][0].pop("title"), "labs[0].title: missing"),
            (lambda d: d["labs"][1].update(timeout_s="60"), "labs[1].timeout_s: expected int or float"),
            (lambda d: d["labs"][1].update(timeout_s=0), "labs[1].timeout_s: expected a positive"),
            (lambda d: d["labs"][0].update(id="indexing"), "labs[0].id: 'indexing' is not of the form"),
            (lambda d: d["labs"].append(lab_entry("01_alpha")), "duplicate lab id '01_alpha'"),
            (lambda d: d["labs"][0]["steps"][2].update(hints=[]), "labs[0].steps[2].hints"),
            (lambda d: d["labs"][0]["steps"][2].update(hints="one"), "labs[0].steps[2].hints"),
            (lambda d: d["labs"][0]["steps"][0].update(id="beta.1"), "labs[0].steps[0].id: 'beta.1'"),
            (lambda d: d["labs"][0]["steps"][1].update(id="alpha.1"), "duplicate step id 'alpha.1'"),
            (lambda d: d["labs"][0]["steps"][0].update(visibility="secret"), "steps[0].visibility"),
            (lambda d: d["labs"][0]["steps"][0].update(hint=["typo"]), "steps[0].hint: unknown field"),
            (lambda d: d["labs"][0].update(student_files=[""]), "labs[0].student_files"),
            (lambda d: d["labs"][0].update(steps=[]), "labs[0].steps: expected at least one"),
            (lambda d: d.update(labs=[]), "labs: expected at least one lab"),
            (lambda d: d["labs"].append(3), "labs[2]: expected an object"),
            (lambda d: d.update(extra=1), "labs.json: extra: unknown field"),
            (lambda d: d["labs"][0].update(worker_queues=0), "labs[0].worker_queues: expected 1"),
            (lambda d: d["labs"][0].update(worker_queues=33), "labs[0].worker_queues: expected 1"),
            (lambda d: d["labs"][0].update(worker_queues="4"), "labs[0].worker_queues: expected int"),
        ]
        for mutate, expected in cases:
            with self.subTest(expected=expected):
                self.assert_rejected(mutate, expected)

    def test_worker_queues_reach_the_judge_only_where_a_lab_sets_them(self) -> None:
        data = {"labs": [dict(lab_entry("01_alpha"), worker_queues=4), lab_entry("02_beta")]}
        alpha, beta = parse_manifest(data).labs
        self.assertEqual((alpha.worker_queues, beta.worker_queues), (4, None))
        worker = Path("/b/bin/worker_01_alpha")
        with_queues = runner.LabTarget(alpha, Path("/b/bin/grade_01_alpha"), worker=worker)
        without = runner.LabTarget(beta, Path("/b/bin/grade_02_beta"), worker=worker)
        self.assertIn("--kit_worker_queues=4", with_queues.judge_args("student"))
        self.assertFalse(any("queues" in arg for arg in without.judge_args("student")))
        real = {lab.id: lab.worker_queues for lab in load_manifest(REAL_MANIFEST).labs}
        self.assertEqual(real["07_streams"], 4)  # four streams side by side

    def test_banned_libraries_are_validated(self) -> None:
        def ban(**fields):  # type: ignore[no-untyped-def]
            entry = {"name": "CUB", "patterns": ["cub::"], "symbols": ["^cub::"],
                     "steps": ["alpha.2"], "why": "write it yourself"}
            entry.update(fields)
            return lambda d: d["labs"][0].update(banned_libraries=[entry])
        where = "labs[0].banned_libraries[0]"
        cases = [
            (ban(name=""), f"{where}.name: must not be empty"),
            (ban(why=3), f"{where}.why: expected str"),
            (ban(patterns="cub::"), f"{where}.patterns: expected list"),
            (ban(patterns=["("]), f"{where}.patterns[0]: '(' is not a valid regular expression"),
            (ban(symbols=["ok", ""]), f"{where}.symbols[1]: expected a non-empty string"),
            (ban(patterns=[], symbols=[]), f"{where}: give at least one of 'patterns'"),
            (ban(steps=["alpha.9"]), f"{where}.steps[0]: 'alpha.9' is not a step of this lab"),
            (ban(steps=["alpha.2", "alpha.2"]), f"{where}.steps: duplicate step 'alpha.2'"),
            (ban(lib="x"), f"{where}.lib: unknown field"),
            (lambda d: d["labs"][0].update(banned_libraries={}), "labs[0].banned_libraries: expected list"),
        ]
        for mutate, expected in cases:
            with self.subTest(expected=expected):
                self.assert_rejected(mutate, expected)
        twice = {"name": "CUB", "patterns": ["cub::"], "why": "w"}
        self.assert_rejected(lambda d: d["labs"][0].update(banned_libraries=[twice, twice]),
                             "labs[0].banned_libraries: duplicate library name 'CUB'")

    def test_sanitize_skips_are_validated(self) -> None:
        def skip(**fields):  # type: ignore[no-untyped-def]
            entry = {"tool": "racecheck", "tests": ["Large.*"], "why": "slow"}
            entry.update(fields)
            return lambda d: d["labs"][0].update(sanitize_skip=[entry])
        where = "labs[0].sanitize_skip[0]"
        cases = [
            (skip(tool="helgrind"), f"{where}.tool: 'helgrind' is not one of memcheck"),
            (skip(tests=[]), f"{where}.tests: expected a non-empty list of GoogleTest patterns"),
            (skip(tests=["A.*:B.*"]), f"{where}.tests: expected a non-empty list"),
            (skip(tests=["-A.*"]), f"{where}.tests: expected a non-empty list"),
            (skip(why=""), f"{where}.why: must not be empty"),
            (skip(tset=["x"]), f"{where}.tset: unknown field"),
        ]
        for mutate, expected in cases:
            with self.subTest(expected=expected):
                self.assert_rejected(mutate, expected)
        entry = lab_entry("01_alpha")
        entry["sanitize_skip"] = [{"tool": "racecheck", "tests": ["Large.*"], "why": "slow"}]
        lab = parse_manifest({"labs": [entry]}).labs[0]
        self.assertEqual([s.tests for s in lab.sanitize_skipped("racecheck")], [("Large.*",)])
        self.assertEqual(lab.sanitize_skipped("memcheck"), [])

    def test_a_ban_without_steps_covers_every_step(self) -> None:
        entry = lab_entry("01_alpha")
        entry["banned_libraries"] = [{"name": "CUB", "symbols": ["cub::"], "why": "w"}]
        (ban,) = parse_manifest({"labs": [entry]}).labs[0].banned_libraries
        self.assertEqual((ban.patterns, ban.steps), ((), ()))
        self.assertTrue(ban.applies_to("alpha.perf"))

    def test_unreadable_or_invalid_json_file(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "labs.json"
            with self.assertRaisesRegex(ManifestError, "cannot read lab manifest"):
                load_manifest(path)
            path.write_text("{not json")
            with self.assertRaisesRegex(ManifestError, "labs.json: not valid JSON"):
                load_manifest(path)
            path.write_text(json.dumps({"labs": [lab_entry("01_alpha")]}))
            self.assertEqual(load_manifest(path).lab_ids(), ["01_alpha"])


if __name__ == "__main__":
    unittest.main()


class IncludedLabFiles(unittest.TestCase):
    """labs.json may name a lab by id; its description then lives in grader/<id>/lab.json."""

    def write(self, root, labs_json, lab_files):
        (root / "labs.json").write_text(json.dumps(labs_json))
        for lab_id, data in lab_files.items():
            (root / lab_id).mkdir()
            (root / lab_id / "lab.json").write_text(json.dumps(data))
        return root / "labs.json"

    def lab(self, lab_id):
        name = lab_id.split("_", 1)[1]
        return {"id": lab_id, "title": "T", "timeout_s": 5, "student_files": ["a.cu"],
                "steps": [{"id": f"{name}.1", "title": "S", "hints": ["h"]}]}

    def test_a_lab_named_by_id_is_read_from_its_folder(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = self.write(Path(tmp), {"labs": ["01_alpha"]}, {"01_alpha": self.lab("01_alpha")})
            self.assertEqual(load_manifest(path).lab_ids(), ["01_alpha"])

    def test_a_missing_or_mismatched_lab_file_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = self.write(Path(tmp), {"labs": ["01_alpha", "02_beta"]},
                              {"01_alpha": self.lab("01_alpha")})
            with self.assertRaises(ManifestError) as caught:
                load_manifest(path)
            self.assertIn("labs[1]: cannot read 02_beta/lab.json", str(caught.exception))
        with tempfile.TemporaryDirectory() as tmp:
            path = self.write(Path(tmp), {"labs": ["01_alpha"]}, {"01_alpha": self.lab("02_beta")})
            with self.assertRaises(ManifestError) as caught:
                load_manifest(path)
            self.assertIn("has id '02_beta', expected '01_alpha'", str(caught.exception))
