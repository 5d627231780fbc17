"""Hidden tests: instructor-only tests (KIT_HIDDEN_TEST in grader/NN_name/hidden/), listed with
"hidden": true and reported with their lab's hidden_visibility.

Run all runner tests from the repository root:
    python3 -m unittest discover -s grader/tests -t grader
"""

from __future__ import annotations

import json
import shutil
import tempfile
import unittest
from pathlib import Path
from typing import Any

from kitgrade import runner
from kitgrade.manifest import DEFAULT_HIDDEN_VISIBILITY, ManifestError, parse_manifest
from kitgrade.model import Status, TestResult
from kitgrade.protocol import ProtocolError, parse_listing

from .support import fake_env, lab_entry, make_fake_binary

SEED = 424242


def grade_alpha(tmp: Path, **lab_fields: Any) -> dict[str, TestResult]:
    """Grades the fake lab 01_alpha with extra lab.json fields; its tests by id."""
    lab = parse_manifest({"labs": [{**lab_entry("01_alpha"), **lab_fields}]}).labs[0]
    target = runner.LabTarget(lab, make_fake_binary(tmp / "bin", "01_alpha"))
    (result,) = runner.run([target], runner.RunOptions("student", SEED, 2)).labs
    return {t.id: t for t in result.tests}


class HiddenResultTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_a_hidden_test_gets_the_labs_hidden_visibility(self) -> None:
        with fake_env(FAKE_TESTS="pass,fail", FAKE_HIDDEN="fail"):
            tests = grade_alpha(self.tmp, hidden_visibility="after_published")
        hidden, visible = tests["Host.Fails"], tests["Host.Passes"]
        self.assertEqual((hidden.hidden, hidden.visibility), (True, "after_published"))
        self.assertEqual((visible.hidden, visible.visibility), (False, "visible"))
        self.assertIs(hidden.status, Status.FAILED)  # graded like any other test
        self.assertEqual(hidden.score, 0)

    def test_hidden_visibility_defaults_to_after_the_due_date(self) -> None:
        with fake_env(FAKE_TESTS="pass", FAKE_HIDDEN="pass"):
            tests = grade_alpha(self.tmp)
        self.assertEqual(DEFAULT_HIDDEN_VISIBILITY, "after_due_date")
        self.assertEqual((tests["Host.Passes"].hidden, tests["Host.Passes"].visibility),
                         (True, "after_due_date"))
        self.assertEqual(tests["Host.Passes"].score, 2)

    def test_the_title_marker_still_hides_a_visible_test(self) -> None:
        with fake_env(FAKE_TESTS="hidden"):
            tests = grade_alpha(self.tmp, hidden_visibility="visible")
        marked = tests["Host.Hidden"]
        self.assertEqual((marked.title, marked.visibility, marked.hidden),
                         ("edge cases pass", "hidden", False))

    def test_hidden_survives_the_round_trip_and_old_results_read_as_visible(self) -> None:
        with fake_env(FAKE_TESTS="pass", FAKE_HIDDEN="pass"):
            test = grade_alpha(self.tmp)["Host.Passes"]
        data = json.loads(json.dumps(test.to_dict()))
        self.assertIs(data["hidden"], True)
        self.assertEqual(TestResult.from_dict(data), test)
        del data["hidden"]  # kit-results.json written before hidden tests existed
        self.assertIs(TestResult.from_dict(data).hidden, False)


class HiddenListingTest(unittest.TestCase):
    STEPS = ("alpha.1",)

    def listing(self, **overrides: Any) -> str:
        test = {"id": "Suite.Name", "step": "alpha.1", "kind": "host", "points": 1, "title": "t"}
        test.update(overrides)
        return json.dumps({"lab": "01_alpha", "variant": "student", "tests": [test]})

    def test_hidden_is_read_and_defaults_to_false(self) -> None:
        for listed, expected in (({"hidden": True}, True), ({"hidden": False}, False), ({}, False)):
            with self.subTest(listed=listed):
                (spec,) = parse_listing(self.listing(**listed), "01_alpha", "student", self.STEPS)
                self.assertIs(spec.hidden, expected)

    def test_a_malformed_hidden_is_a_protocol_error(self) -> None:
        for value in (1, 0, "true", None, [True]):
            with self.subTest(value=value), self.assertRaises(ProtocolError) as caught:
                parse_listing(self.listing(hidden=value), "01_alpha", "student", self.STEPS)
            self.assertIn("tests[0].hidden: expected true or false", str(caught.exception))


class HiddenVisibilityManifestTest(unittest.TestCase):
    def test_each_visibility_is_accepted(self) -> None:
        for value in ("visible", "hidden", "after_due_date", "after_published"):
            with self.subTest(value=value):
                lab = parse_manifest({"labs": [{**lab_entry("01_alpha"),
                                                "hidden_visibility": value}]}).labs[0]
                self.assertEqual(lab.hidden_visibility, value)
        self.assertEqual(parse_manifest({"labs": [lab_entry("01_alpha")]}).labs[0]
                         .hidden_visibility, "after_due_date")

    def test_a_bad_hidden_visibility_names_the_field(self) -> None:
        cases = [("secret", "labs[0].hidden_visibility: 'secret' is not one of visible, hidden, "
                            "after_due_date, after_published"),
                 (True, "labs[0].hidden_visibility: expected str, got bool"),
                 (["hidden"], "labs[0].hidden_visibility: expected str, got list")]
        for value, expected in cases:
            with self.subTest(value=value), self.assertRaises(ManifestError) as caught:
                parse_manifest({"labs": [{**lab_entry("01_alpha"), "hidden_visibility": value}]})
            self.assertIn(expected, str(caught.exception))


if __name__ == "__main__":
    unittest.main()
