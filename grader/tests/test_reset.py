"""kit.py reset: stubs from grader/stubs/ or from git's HEAD, backups, confirmation, refusals.

Run all runner tests from the repository root:
    python3 -m unittest discover -s grader/tests -t grader
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import tempfile
import unittest
from datetime import datetime
from pathlib import Path
from unittest import mock

from kitgrade.cli import main
from kitgrade.reset import backup_path

from .support import lab_entry, make_repo

STUB = "// stub of 01_alpha\n"
MINE = "// my work on 01_alpha\n__global__ void k() {}\n"


class FakeTerminal(io.StringIO):
    """stdin of a terminal where the student types `answers`."""

    def isatty(self) -> bool:
        return True


class ResetCase(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.root = make_repo(self.tmp / "repo", ["01_alpha"])
        self.lab = self.root / "labs" / "01_alpha"

    def kit(self, *argv: str, stdin: io.StringIO | None = None) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with mock.patch("sys.stdin", stdin if stdin is not None else io.StringIO()):
            code = main(["reset", *argv], root=self.root, stdout=out, stderr=err)
        return code, out.getvalue(), err.getvalue()

    def backups(self, name: str = "a.cu") -> list[Path]:
        return sorted(self.lab.glob(f"{name}.backup-*"))


@unittest.skipUnless(shutil.which("git"), "git is not installed")
class FromGitTest(ResetCase):
    """The instructor's repository: labs/ holds the stubs at HEAD."""

    def setUp(self) -> None:
        super().setUp()
        git = ["git", "-C", str(self.root), "-c", "user.name=kit", "-c", "user.email=kit@example.com"]
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "stubs"]):
            subprocess.run(git + args, check=True, capture_output=True)
        (self.lab / "a.cu").write_text(MINE)

    def test_yes_resets_and_keeps_a_backup(self) -> None:
        code, out, err = self.kit("01", "--yes")
        self.assertEqual((code, err), (0, ""))
        self.assertEqual((self.lab / "a.cu").read_text(), STUB)
        [backup] = self.backups()
        self.assertRegex(backup.name, r"^a\.cu\.backup-\d{8}-\d{6}$")
        self.assertEqual(backup.read_text(), MINE)
        self.assertEqual(out, f"labs/01_alpha/a.cu: reset to the stub; your version is "
                              f"labs/01_alpha/{backup.name}\n")

    def test_one_file_by_name_or_path(self) -> None:
        for name in ("a.cu", "labs/01_alpha/a.cu"):
            with self.subTest(name=name):
                (self.lab / "a.cu").write_text(MINE)
                self.assertEqual(self.kit("alpha", name, "--yes")[0], 0)
                self.assertEqual((self.lab / "a.cu").read_text(), STUB)

    def test_file_already_the_stub(self) -> None:
        (self.lab / "a.cu").write_text(STUB)
        code, out, _ = self.kit("01", "a.cu")  # no --yes and no terminal: nothing to ask
        self.assertEqual(code, 0)
        self.assertEqual(out, "labs/01_alpha/a.cu is already the stub; nothing to do.\n")
        self.assertEqual(self.backups(), [])

    def test_no_terminal_and_no_yes_refuses(self) -> None:
        code, out, err = self.kit("01")
        self.assertEqual(code, 2)
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertIn("there is no terminal to ask on: add --yes", err)
        self.assertEqual((self.lab / "a.cu").read_text(), MINE)
        self.assertEqual(self.backups(), [])

    def test_asks_on_a_terminal(self) -> None:
        code, out, _ = self.kit("01", stdin=FakeTerminal("n\n"))
        self.assertEqual(code, 0)
        self.assertRegex(out, r"^Reset labs/01_alpha/a\.cu to the stub\? Your version is kept as "
                              r"a\.cu\.backup-\d{8}-\d{6}\.  \[y/N\] "
                              r"labs/01_alpha/a\.cu: left as it is\.\n$")
        self.assertEqual((self.lab / "a.cu").read_text(), MINE)
        code, out, _ = self.kit("01", stdin=FakeTerminal(""))  # end of input: no
        self.assertEqual((self.lab / "a.cu").read_text(), MINE)
        code, out, _ = self.kit("01", stdin=FakeTerminal("y\n"))
        self.assertIn("a.cu: reset to the stub", out)
        self.assertEqual((self.lab / "a.cu").read_text(), STUB)
        self.assertEqual(self.backups()[0].read_text(), MINE)

    def test_missing_file_is_restored_without_asking(self) -> None:
        (self.lab / "a.cu").unlink()
        code, out, _ = self.kit("01")
        self.assertEqual(code, 0)
        self.assertEqual(out, "labs/01_alpha/a.cu was missing: restored the stub.\n")
        self.assertEqual((self.lab / "a.cu").read_text(), STUB)

    def test_unknown_file_lists_the_lab_files(self) -> None:
        code, _, err = self.kit("01", "b.cu", "--yes")
        self.assertEqual(code, 2)
        self.assertEqual(err, "error: lab 01_alpha has no student file 'b.cu'; its files: a.cu\n")
        self.assertEqual(self.kit("01", "labs/02_beta/a.cu", "--yes")[0], 2)
        self.assertEqual(self.kit("99", "--yes")[0], 2)

    def test_file_not_committed(self) -> None:
        manifest = self.root / "grader" / "labs.json"
        entry = lab_entry("01_alpha")
        entry["student_files"] = ["a.cu", "new.cu"]
        manifest.write_text(json.dumps({"labs": [entry]}))
        code, _, err = self.kit("01", "new.cu", "--yes")
        self.assertEqual(code, 2)
        self.assertIn("no stub of labs/01_alpha/new.cu: grader/stubs/01_alpha/ does not exist and "
                      "`git show HEAD:labs/01_alpha/new.cu` failed", err)


class FromStubsFolderTest(ResetCase):
    """A student edition: pristine copies in grader/stubs/<lab>/, and no git history needed."""

    def setUp(self) -> None:
        super().setUp()
        stubs = self.root / "grader" / "stubs" / "01_alpha"
        stubs.mkdir(parents=True)
        (stubs / "a.cu").write_text("// the shipped stub\n")
        (self.lab / "a.cu").write_text(MINE)

    def test_resets_from_the_stubs_folder(self) -> None:
        code, out, _ = self.kit("01", "--yes")
        self.assertEqual(code, 0)
        self.assertEqual((self.lab / "a.cu").read_text(), "// the shipped stub\n")
        self.assertEqual(self.backups()[0].read_text(), MINE)

    def test_a_second_reset_keeps_both_backups(self) -> None:
        first = backup_path(self.lab / "a.cu")
        first.write_text("an older backup")
        self.kit("01", "--yes")  # within the same second: must not overwrite `first`
        self.assertEqual(first.read_text(), "an older backup")
        self.assertEqual(len(self.backups()), 2)
        self.assertIn(MINE, [b.read_text() for b in self.backups()])

    def test_stub_missing_from_the_folder(self) -> None:
        (self.root / "grader" / "stubs" / "01_alpha" / "a.cu").unlink()
        code, _, err = self.kit("01", "--yes")
        self.assertEqual(code, 2)
        self.assertIn("no stub of a.cu: cannot read grader/stubs/01_alpha/a.cu", err)
        self.assertEqual((self.lab / "a.cu").read_text(), MINE)


class NoStubTest(ResetCase):
    def test_neither_stubs_nor_git(self) -> None:
        code, _, err = self.kit("01", "--yes")
        self.assertEqual(code, 2)
        self.assertTrue(err.startswith("error: no stub of labs/01_alpha/a.cu: grader/stubs/01_alpha/ "
                                       "does not exist"), err)


class BackupPathTest(unittest.TestCase):
    def test_never_an_existing_name(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "x.cu"
            now = datetime(2024, 5, 1, 12, 1, 2)
            self.assertEqual(backup_path(path, now).name, "x.cu.backup-20240501-120102")
            (Path(tmp) / "x.cu.backup-20240501-120102").write_text("")
            self.assertEqual(backup_path(path, now).name, "x.cu.backup-20240501-120102-2")
            (Path(tmp) / "x.cu.backup-20240501-120102-2").write_text("")
            self.assertEqual(backup_path(path, now).name, "x.cu.backup-20240501-120102-3")
            self.assertTrue(re.match(r"x\.cu\.backup-\d{8}-\d{6}$", backup_path(path).name))


if __name__ == "__main__":
    unittest.main()
