"""Known-wrong submissions (grader/NN_name/wrong.json): validation and how edits apply."""

from __future__ import annotations

import unittest
from pathlib import Path

from kitgrade import wrong
from kitgrade.manifest import parse_manifest

from .support import temp_dir

LAB = parse_manifest({"labs": [{
    "id": "01_x", "title": "X", "timeout_s": 5, "student_files": ["x.cu"],
    "steps": [{"id": "x.1", "title": "one", "hints": ["h"]},
              {"id": "x.2", "title": "two", "hints": ["h"]}]}]}).labs[0]
SOLUTION = """int a() {
  // DONE(x.1): first
  sync(); sync();
  // END(x.1)
}
int b() {
  // DONE(x.2): second
  sync();
  // END(x.2)
}
"""


def entry(**edit: object) -> dict:
    return {"submissions": [{"name": "drops_a_sync", "mistake": "m", "loses": ["x.1"],
                             "message": "", "edits": [{"file": "x.cu", **edit}]}]}


class WrongTest(unittest.TestCase):
    def setUp(self) -> None:
        self.root = temp_dir(self)
        (self.root / "solutions" / "01_x").mkdir(parents=True)
        (self.root / "solutions" / "01_x" / "x.cu").write_text(SOLUTION)

    def apply(self, **edit: object) -> str:
        sub = wrong.parse(entry(**edit), LAB, "wrong.json")[0]
        return wrong.apply(self.root, LAB, sub)["x.cu"]

    def test_everywhere_by_default(self) -> None:
        self.assertEqual(self.apply(find="sync();", replace="").count("sync();"), 0)

    def test_region_and_occurrence_anchor_an_edit(self) -> None:
        text = self.apply(find="sync();", replace="/*gone*/", region="x.1", occurrence=2)
        self.assertIn("sync(); /*gone*/", text)
        self.assertIn("  sync();\n  // END(x.2)", text)  # the other region is untouched

    def test_an_edit_that_no_longer_applies_is_reported(self) -> None:
        with self.assertRaisesRegex(wrong.WrongError, "no longer there"):
            self.apply(find="reworded comment", replace="")
        with self.assertRaisesRegex(wrong.WrongError, "no longer there"):
            self.apply(find="sync();", replace="", region="x.2", occurrence=2)

    def test_malformed_entries_name_their_field(self) -> None:
        bad = [({"find": "a", "replace": "b", "file": "y.cu"}, "not a student file"),
               ({"find": "a", "replace": "b", "file": "x.cu", "region": "x.9"}, "region"),
               ({"find": "a", "replace": "b", "file": "x.cu", "occurrence": 0}, "occurrence"),
               ({"find": "", "replace": "b", "file": "x.cu"}, "find: empty")]
        for edit, message in bad:
            data = {"submissions": [{"name": "n", "mistake": "m", "loses": ["x.1"], "message": "",
                                     "edits": [edit]}]}
            with self.assertRaisesRegex(wrong.WrongError, message):
                wrong.parse(data, LAB, "wrong.json")
        data = entry(find="a", replace="b")
        data["submissions"][0]["loses"] = ["x.7"]
        with self.assertRaisesRegex(wrong.WrongError, r"submissions\[0\]\.loses"):
            wrong.parse(data, LAB, "wrong.json")

    def test_likely_names_part_of_a_diagnosis(self) -> None:
        data = entry(find="a", replace="b")
        data["submissions"][0]["likely"] = "rounded down"
        self.assertEqual(wrong.parse(data, LAB, "wrong.json")[0].likely, "rounded down")
        data["submissions"][0]["likely"] = ""
        with self.assertRaisesRegex(wrong.WrongError, r"submissions\[0\]\.likely"):
            wrong.parse(data, LAB, "wrong.json")

    def test_a_time_limit_of_its_own_at_most_the_labs(self) -> None:
        data = entry(find="a", replace="b")
        self.assertIsNone(wrong.parse(data, LAB, "wrong.json")[0].timeout_s)
        data["submissions"][0]["timeout_s"] = 2.5
        self.assertEqual(wrong.parse(data, LAB, "wrong.json")[0].timeout_s, 2.5)
        for bad in (0, -1, 6, True, "2"):  # the lab's limit is 5 s
            data["submissions"][0]["timeout_s"] = bad
            with self.assertRaisesRegex(wrong.WrongError, r"submissions\[0\]\.timeout_s"):
                wrong.parse(data, LAB, "wrong.json")

    def test_a_time_limit_of_its_own_for_the_tests_that_run_alone(self) -> None:
        data = entry(find="a", replace="b")
        self.assertIsNone(wrong.parse(data, LAB, "wrong.json")[0].alone_timeout_s)
        data["submissions"][0]["alone_timeout_s"] = 1.5
        self.assertEqual(wrong.parse(data, LAB, "wrong.json")[0].alone_timeout_s, 1.5)
        for bad in (0, 6, False, "1"):  # the lab's limit is 5 s
            data["submissions"][0]["alone_timeout_s"] = bad
            with self.assertRaisesRegex(wrong.WrongError,
                                        r"submissions\[0\]\.alone_timeout_s"):
                wrong.parse(data, LAB, "wrong.json")

    def test_the_kits_own_submissions_all_load_and_apply(self) -> None:
        root = Path(__file__).resolve().parents[2]
        from kitgrade.manifest import load_manifest
        count = 0
        for lab in load_manifest(root / "grader" / "labs.json").labs:
            for sub in wrong.load(root, lab):
                wrong.apply(root, lab, sub)
                count += 1
        self.assertGreater(count, 60)


if __name__ == "__main__":
    unittest.main()
