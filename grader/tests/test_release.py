"""The student edition (kit.py release): what it leaves out, and the leak check."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import unittest
from pathlib import Path

from kitgrade import release
from kitgrade.cli import main
from kitgrade.manifest import load_manifest, parse_manifest

from .support import temp_dir

ROOT = Path(__file__).resolve().parents[2]

STUB = """// lab file
int f(int n) {
  // TODO(x.1): compute it
  return 0;
  // END(x.1)
}
"""
SOLUTION = """// lab file
int f(int n) {
  // DONE(x.1): compute it
  const int total = first_value(n) * second_value(n) + 7;
  return total;
  // END(x.1)
}
"""


def _tiny_kit(root: Path) -> None:
    (root / "labs" / "01_x").mkdir(parents=True)
    (root / "solutions" / "01_x").mkdir(parents=True)
    (root / "labs" / "01_x" / "x.cu").write_text(STUB)
    (root / "solutions" / "01_x" / "x.cu").write_text(SOLUTION)


TINY_MANIFEST = parse_manifest({"labs": [{
    "id": "01_x", "title": "X", "timeout_s": 5, "student_files": ["x.cu"],
    "steps": [{"id": "x.1", "title": "one", "hints": ["h"]}]}]})


class BlocksAndPathsTest(unittest.TestCase):
    def test_instructor_blocks_are_dropped_with_their_markers(self) -> None:
        text = ("a\n<!-- instructor-only -->\nsecret\n<!-- /instructor-only -->\nb\n"
                "  <!-- instructor-only -->\nx\n  <!-- /instructor-only -->\n")
        self.assertEqual(release.strip_instructor_blocks(text), "a\nb\n")

    def test_instructor_only_paths(self) -> None:
        for path in ("solutions/01_indexing/indexing.cu", "grader/01_indexing/wrong.json",
                     "grader/02_bounds/hidden/test_hidden.cu", "grader/kitgrade/batch.py",
                     "grader/selftest/fake_lab.cu", "docs/grading.md", ".ci/run",
                     "docs/figures/measure.py", "grader/tests/test_measure.py"):
            self.assertTrue(release.is_instructor_only(path), path)
        for path in ("labs/01_indexing/indexing.cu", "grader/02_bounds/test_bounds.cu",
                     "grader/kitgrade/cli.py", "docs/labs/01_indexing.md", "README.md",
                     "docs/figures/make_figures.py", "docs/figures/data/h100_stride.csv"):
            self.assertFalse(release.is_instructor_only(path), path)


class LeakCheckTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = temp_dir(self)
        _tiny_kit(self.tmp / "kit")
        self.secrets = release.secrets_of(self.tmp / "kit", TINY_MANIFEST)
        self.out = self.tmp / "out"
        self.out.mkdir()

    def test_only_new_long_lines_of_a_region_are_secrets(self) -> None:
        self.assertEqual([s.text for s in self.secrets],
                         ["const int total = first_value(n) * second_value(n) + 7;"])
        self.assertEqual(self.secrets[0].where, "solutions/01_x/x.cu:4")

    def test_a_copy_is_found_whatever_its_spacing(self) -> None:
        (self.out / "notes.md").write_text("Try:\n    const int total=first_value(n)*second_value(n)+7;\n")
        leaks, scanned = release.find_leaks(self.secrets, self.out)
        self.assertEqual(scanned, 1)
        self.assertEqual([leak.path for leak in leaks], ["notes.md"])

    def test_a_copy_in_highlighted_html_is_found(self) -> None:
        (self.out / "page.html").write_text(
            '<div class="line"><span class="keyword">const</span> <span class="keywordtype">int'
            '</span> total = first_value(n) * second_value(n) &#43; 7;</div>\n')
        leaks, _ = release.find_leaks(self.secrets, self.out)
        self.assertEqual([leak.path for leak in leaks], ["page.html"])

    def test_binaries_and_clean_files_are_no_leak(self) -> None:
        (self.out / "prog").write_bytes(b"\x7fELF\0\0 const int total = first_value(n) * second_value(n) + 7;")
        (self.out / "other.cu").write_text("int total = first_value(n) + 7;\n")
        leaks, _ = release.find_leaks(self.secrets, self.out)
        self.assertEqual(leaks, [])


class ReleaseOfThisKitTest(unittest.TestCase):
    """Writes a release of this very kit (a file copy: no build) and checks it."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = temp_dir(cls)
        cls.out = cls.tmp / "edition"
        stdout, stderr = io.StringIO(), io.StringIO()
        cls.code = main(["release", str(cls.out)], root=ROOT, stdout=stdout, stderr=stderr)
        cls.stdout = stdout.getvalue() + stderr.getvalue()

    def test_written_and_leak_free(self) -> None:
        self.assertEqual(self.code, 0, self.stdout)
        self.assertIn("Leak check: none of", self.stdout)

    def test_no_answers_no_hidden_tests_no_instructor_parts(self) -> None:
        for rel in ("solutions", "grader/01_indexing/wrong.json", "grader/selftest", "grader/kitgrade/batch.py",
                    "grader/kitgrade/noise.py", "grader/kitgrade/release.py", "docs/grading.md",
                    ".ci"):
            self.assertFalse((self.out / rel).exists(), rel)
        self.assertEqual(list(self.out.glob("grader/*/hidden")), [])
        self.assertNotIn(release.BLOCK_OPEN, (self.out / "README.md").read_text())
        self.assertNotIn("kit.py batch", (self.out / "README.md").read_text())

    def test_hidden_tests_exist_in_the_kit(self) -> None:
        """Without them the test above would prove nothing."""
        self.assertGreaterEqual(len({p.parent.parent for p in ROOT.glob("grader/*/hidden/*.c*")}), 2)

    def test_stubs_are_kept_for_reset_and_the_edition_is_marked(self) -> None:
        for lab in load_manifest(ROOT / "grader" / "labs.json").labs:
            for name in lab.student_files:
                self.assertEqual((self.out / release.STUBS_DIR / lab.id / name).read_bytes(),
                                 (ROOT / "labs" / lab.id / name).read_bytes())
        edition = json.loads((self.out / release.EDITION_FILE).read_text())
        self.assertEqual(edition["edition"], "student")

    def test_a_git_repository_with_one_commit(self) -> None:
        log = subprocess.run(["git", "-C", str(self.out), "log", "--oneline"], capture_output=True,
                             text=True)
        self.assertEqual(len(log.stdout.splitlines()), 1, log.stdout + log.stderr)

    def test_its_command_line_has_no_instructor_commands(self) -> None:
        proc = subprocess.run([sys.executable, str(self.out / "grader" / "kit.py"), "--help"],
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for command in ("grade", "hint", "list", "selftest"):
            self.assertIn(command, proc.stdout)
        for command in ("batch", "noise", "release"):
            self.assertNotIn(f"    {command} ", proc.stdout)
        proc = subprocess.run([sys.executable, str(self.out / "grader" / "kit.py"), "release", "x"],
                              capture_output=True, text=True)
        self.assertEqual(proc.returncode, 2)
        proc = subprocess.run([sys.executable, str(self.out / "grader" / "kit.py"), "grade", "--help"],
                              capture_output=True, text=True)
        self.assertNotIn("--variant", proc.stdout)  # no reference solution to grade
        self.assertNotIn("reference", proc.stdout)

    def test_refuses_a_folder_that_is_not_empty(self) -> None:
        stderr = io.StringIO()
        code = main(["release", str(self.out)], root=ROOT, stdout=io.StringIO(), stderr=stderr)
        self.assertEqual(code, 2)
        self.assertIn("not empty", stderr.getvalue())

    def test_check_finds_a_planted_solution_line(self) -> None:
        solution = (ROOT / "solutions" / "01_indexing" / "indexing.cu").read_text()
        secret = next(s for s in release.secrets_of(ROOT, load_manifest(ROOT / "grader" / "labs.json"))
                      if s.where.startswith("solutions/01_indexing/indexing.cu"))
        self.assertIn(secret.text, solution)
        planted = self.tmp / "planted"
        (planted / "docs").mkdir(parents=True)
        (planted / "docs" / "page.md").write_text(f"```\n{secret.text}\n```\n")
        stdout = io.StringIO()
        code = main(["release", "--check", str(planted)], root=ROOT, stdout=stdout,
                    stderr=io.StringIO())
        self.assertEqual(code, 1)
        self.assertIn("docs/page.md: contains solutions/01_indexing/indexing.cu", stdout.getvalue())


if __name__ == "__main__":
    unittest.main()
