"""kit.py gradescope: the autograder zip of this very kit (a file copy: no build)."""

from __future__ import annotations

import io
import shutil
import stat
import tempfile
import unittest
import zipfile
from pathlib import Path

from kitgrade import release
from kitgrade.cli import main

ROOT = Path(__file__).resolve().parents[2]


class GradescopeZipTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = Path(tempfile.mkdtemp())
        cls.zip = cls.tmp / "autograder.zip"
        out, err = io.StringIO(), io.StringIO()
        cls.code = main(["gradescope", str(cls.zip), "05"], root=ROOT, stdout=out, stderr=err)
        cls.output = out.getvalue() + err.getvalue()
        cls.unpacked = cls.tmp / "source"
        if cls.zip.is_file():
            with zipfile.ZipFile(cls.zip) as archive:
                archive.extractall(cls.unpacked)
                cls.modes = {i.filename: i.external_attr >> 16 for i in archive.infolist()}

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp)

    def test_written_without_a_solution_line(self) -> None:
        self.assertEqual(self.code, 0, self.output)
        self.assertIn("no solution line is in it", self.output)
        leaks, scanned = release.find_leaks(release.secrets_of(ROOT, _manifest()), self.unpacked)
        self.assertEqual(leaks, [])
        self.assertGreater(scanned, 100)

    def test_gradescope_finds_its_two_scripts_at_the_top_executable(self) -> None:
        for name in ("setup.sh", "run_autograder"):
            self.assertTrue(self.modes[name] & stat.S_IXUSR, name)
        text = (self.unpacked / "run_autograder").read_text()
        self.assertIn('LABS="${LABS-05_divergence}"', text)
        self.assertIn("/autograder/source/kit", text)
        self.assertIn("cd /autograder/source/kit", (self.unpacked / "setup.sh").read_text())
        self.assertTrue(self.modes["kit/ci/gradescope/run_autograder"] & stat.S_IXUSR)
        self.assertTrue(self.modes["kit/ci/platform-grade"] & stat.S_IXUSR)

    def test_the_grading_copy_has_the_graders_and_hidden_tests_not_the_answers(self) -> None:
        kit = self.unpacked / "kit"
        for rel in ("grader/kit.py", "grader/kitgrade/platforms.py", "grader/thresholds.conf",
                    "labs/05_divergence", "common/src/remote_judge.cpp", "CMakeLists.txt",
                    "setup.sh"):
            self.assertTrue((kit / rel).exists(), rel)
        self.assertTrue(list(kit.glob("grader/*/hidden/*.c*")))
        for rel in ("solutions", "grader/05_divergence/wrong.json", ".ci", "docs"):
            self.assertFalse((kit / rel).exists(), rel)

    def test_an_unknown_lab_is_a_usage_error(self) -> None:
        err = io.StringIO()
        code = main(["gradescope", str(self.tmp / "x.zip"), "99"], root=ROOT, stdout=io.StringIO(),
                    stderr=err)
        self.assertEqual(code, 2)
        self.assertIn("unknown lab", err.getvalue())
        self.assertFalse((self.tmp / "x.zip").exists())


def _manifest():
    from kitgrade.manifest import load_manifest
    return load_manifest(ROOT / "grader" / "labs.json")


if __name__ == "__main__":
    unittest.main()
