"""The student edition: ``kit.py release OUT`` writes a copy of the kit a course can hand out.

What a release holds: the stubs (labs/), the graders without their hidden tests, common/, the docs
without the instructor-only pages, a README for students, the course CI template, and pristine
copies of the stubs in grader/stubs/ (for ``kit.py reset``). What it never holds: solutions/, the
known-wrong and known-right submissions (grader/NN_name/wrong.json, which carry solution code), the hidden
tests (grader/NN_name/hidden/), the fake lab of the kit's own tests, the instructor-only commands
(batch, noise, release, new-lab) and the kit's own CI. Which paths are instructor-only is said once, in
INSTRUCTOR_ONLY below; Markdown files lose their ``<!-- instructor-only -->`` blocks, so one
README serves both editions.

The leak check (``find_leaks``) proves that nothing of the answers went along: every line a
solution adds inside its DONE regions (a "secret": not blank, not a brace, at least MIN_WORDS
identifiers or numbers, and found in no stub) must appear nowhere in the release, the
built documentation site included. Lines are compared with all spaces removed, and HTML is
reduced to its text first, so reformatting or Doxygen's syntax highlighting does not hide a copy.
"""

from __future__ import annotations

import argparse
import fnmatch
import html
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .manifest import Manifest
from .regions import _CLOSE, _OPEN
from .context import UsageError

INSTRUCTOR_ONLY: tuple[str, ...] = (
    "solutions/*",
    "grader/*/wrong.json",
    "grader/selftest/*",
    "grader/*/hidden/*",
    "grader/kitgrade/batch.py",
    "grader/kitgrade/noise.py",
    "grader/kitgrade/calibrate.py",
    "grader/kitgrade/release.py",
    "grader/kitgrade/new_lab.py",
    "grader/kitgrade/bench_grader.py",
    "grader/kitgrade/mutate.py",
    "grader/*/equivalent.json",
    "grader/tests/test_batch.py",
    "grader/tests/test_noise.py",
    "grader/tests/test_calibrate.py",
    "grader/tests/test_release.py",
    "grader/tests/test_new_lab.py",
    "grader/tests/test_bench_grader.py",
    "grader/tests/test_mutate.py",
    "grader/tests/test_instructor_tree.py",
    "grader/tests/test_wrong.py",
    "docs/grading.md",
    "docs/instructors.md",
    "docs/engine_log.md",
    "docs/writing_labs.md",
    "docs/figures/measure.py",
    "grader/tests/test_measure.py",
    "ci/gradescope/*",
    "ci/prairielearn/*",
    "ci/platform-grade",
    "ci/mutate-gpus",
    "ci/engine-targets",
    "grader/kitgrade/platforms.py",
    "grader/kitgrade/gradescope.py",
    "grader/kitgrade/leaderboard.py",
    "grader/tests/test_leaderboard.py",
    "grader/tests/test_gradescope.py",
    ".ci/*",
    "grader/stubs/*",
    "grader/edition.json",
)
"""Paths (relative, POSIX, fnmatch patterns) that stay in the instructor's copy."""

EDITION_FILE = "grader/edition.json"
"""Written into a release: {"edition": "student", "made_from": ...}."""

STUBS_DIR = "grader/stubs"
"""Pristine copies of the stubs in a release, as grader/stubs/<lab>/<file> (kit.py reset)."""

BLOCK_OPEN = "<!-- instructor-only -->"
BLOCK_CLOSE = "<!-- /instructor-only -->"

MIN_WORDS = 5
"""A solution line with fewer identifiers and numbers than this (`return i;`,
`float sum = 0.0f;`, a parameter `const float* __restrict__ a,`) is too common to be a secret:
it is not checked."""

_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|\d+(?:\.\d+)?")
_SPACE = re.compile(r"[\s\u00a0]+")
_TAG = re.compile(r"<[^>]*>")
_TEXT_SUFFIXES = frozenset({
    ".md", ".txt", ".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".c", ".py", ".json", ".cmake",
    ".in", ".yml", ".yaml", ".conf", ".sh", ".html", ".htm", ".js", ".css", ".xml", ".svg",
    ".tex", ".dot", ".csv", ".toml", ".cfg", ".ini", "",
})
_SKIP_DIRS = frozenset({".git", "__pycache__", "CMakeFiles"})
_MAX_SCAN_BYTES = 8 * 1024 * 1024


class ReleaseError(Exception):
    """The release cannot be written as asked (one line, exit code 2)."""


@dataclass(frozen=True)
class Secret:
    """A line of a solution that a release must not contain."""

    text: str
    where: str
    """solutions/<lab>/<file>:<line>"""

    @property
    def key(self) -> str:
        return _squash(self.text)


@dataclass(frozen=True)
class Leak:
    secret: Secret
    path: str


def is_instructor_only(relpath: str) -> bool:
    return any(fnmatch.fnmatchcase(relpath, pattern) or relpath == pattern.rstrip("/*")
               for pattern in INSTRUCTOR_ONLY)


def strip_instructor_blocks(text: str) -> str:
    """Drops every <!-- instructor-only --> ... <!-- /instructor-only --> block (lines included)."""
    out: list[str] = []
    depth = 0
    for line in text.splitlines(keepends=True):
        marker = line.strip()
        if marker == BLOCK_OPEN:
            depth += 1
        elif marker == BLOCK_CLOSE and depth:
            depth -= 1
        elif depth == 0:
            out.append(line)
    return "".join(out)


def source_files(root: Path) -> list[str]:
    """The kit's files (relative POSIX paths): git's tracked and untracked-but-not-ignored files,
    or, outside git, every file below root except build folders."""
    try:
        proc = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
                               "--exclude-standard"], capture_output=True, check=True)
        names = [n for n in proc.stdout.decode("utf-8", "replace").split("\0") if n]
        return sorted(n for n in names if (root / n).is_file())
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and not
                       (rel == Path(".") and d.startswith(("build", "out", ".")))]
        found += [(rel / f).as_posix() for f in filenames]
    return sorted(found)


def write_release(root: Path, out: Path, manifest: Manifest, *, git_init: bool = True) -> list[str]:
    """Writes the student edition of the kit at `root` into the new folder `out`; returns the
    relative paths written."""
    if out.exists() and any(out.iterdir()):
        raise ReleaseError(f"{out} exists and is not empty; give a new folder")
    if _inside(out, root) and not out.resolve().relative_to(root.resolve()).parts[0].startswith("build"):
        raise ReleaseError(f"{out} is inside the kit; write the release outside it (or under build/)")
    written = []
    for rel in source_files(root):
        if is_instructor_only(rel):
            continue
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".md"):
            text = (root / rel).read_text(encoding="utf-8")
            target.write_text(strip_instructor_blocks(text), encoding="utf-8")
        else:
            shutil.copy2(root / rel, target)
        written.append(rel)
    for lab in manifest.labs:
        for name in lab.student_files:
            rel = f"{STUBS_DIR}/{lab.id}/{name}"
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / "labs" / lab.id / name, out / rel)
            written.append(rel)
    (out / EDITION_FILE).write_text(json.dumps(
        {"edition": "student", "made_from": _describe(root)}, indent=2) + "\n", encoding="utf-8")
    written.append(EDITION_FILE)
    if git_init and shutil.which("git"):
        _git_init(out)
    return written


def secrets_of(root: Path, manifest: Manifest) -> list[Secret]:
    """Every line the reference solutions add inside their DONE regions that is worth hiding."""
    # A line some stub already shows (a global index, a kernel's signature) is no secret.
    stubs = "\n".join(_squash(line) for path in sorted((root / "labs").rglob("*")) if path.is_file()
                      for line in _read(path).splitlines())
    found: list[Secret] = []
    for lab in manifest.labs:
        for name in lab.student_files:
            solution = root / "solutions" / lab.id / name
            if not solution.is_file():
                continue
            inside = False
            for number, line in enumerate(_read(solution).splitlines(), 1):
                if _OPEN.match(line):
                    inside = True
                elif _CLOSE.match(line):
                    inside = False
                elif inside and _worth_hiding(line) and _squash(line) not in stubs:
                    found.append(Secret(line.strip(), f"solutions/{lab.id}/{name}:{number}"))
    return found


def find_leaks(secrets: Sequence[Secret], directory: Path) -> tuple[list[Leak], int]:
    """(every secret found in a text file below `directory`, how many files were scanned).
    HTML is reduced to its text; everything is compared with spaces removed."""
    by_key: dict[str, Secret] = {}
    for secret in secrets:
        by_key.setdefault(secret.key, secret)
    leaks: list[Leak] = []
    scanned = 0
    for path in _text_files(directory):
        text = _read(path)
        if path.suffix in (".html", ".htm", ".xml", ".svg", ".js"):
            text = html.unescape(_TAG.sub("", text))
        haystack = "\n".join(_squash(line) for line in text.splitlines())
        scanned += 1
        rel = path.relative_to(directory).as_posix()
        leaks += [Leak(secret, rel) for key, secret in by_key.items() if key in haystack]
    return leaks, scanned


def describe_leaks(leaks: Iterable[Leak], limit: int = 20) -> list[str]:
    lines = [f"{leak.path}: contains {leak.secret.where}: {leak.secret.text}" for leak in leaks]
    return lines[:limit] + ([f"... and {len(lines) - limit} more"] if len(lines) > limit else [])


def _worth_hiding(line: str) -> bool:
    stripped = line.strip()
    if not stripped or set(stripped) <= set("{}();"):
        return False
    return len(_WORD.findall(stripped)) >= MIN_WORDS


def _squash(text: str) -> str:
    return _SPACE.sub("", text)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _text_files(directory: Path) -> Iterable[Path]:
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.suffix not in _TEXT_SUFFIXES:
                continue
            try:
                if path.is_symlink() or path.stat().st_size > _MAX_SCAN_BYTES:
                    continue
                with path.open("rb") as f:
                    if b"\0" in f.read(4096):  # a binary without a suffix (an executable)
                        continue
            except OSError:
                continue
            yield path


def _inside(path: Path, parent: Path) -> bool:
    try:
        path.resolve().relative_to(parent.resolve())
        return True
    except ValueError:
        return False


def _describe(root: Path) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty"],
                              capture_output=True, text=True, check=True)
        return proc.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _git_init(out: Path) -> None:
    """A release is a repository of its own, ready to push as the course's template."""
    git = ["git", "-C", str(out), "-c", "user.name=CUDA lab kit", "-c", "user.email=kit@localhost",
           "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"]
    try:
        subprocess.run([*git, "init", "-q"], check=True, capture_output=True)
        subprocess.run([*git, "add", "-A"], check=True, capture_output=True)
        subprocess.run([*git, "commit", "-q", "-m", "CUDA lab kit, student edition"], check=True,
                       capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        shutil.rmtree(out / ".git", ignore_errors=True)  # a plain folder is still a release


# ---------------------------------------------------------------- command

RELEASE_HELP = """Writes the student edition of the kit into OUT (a new or empty folder): the
stubs, the graders without hidden tests, common/, the docs for students, a README for students
and the course CI template; no solutions/, no wrong.json, no hidden tests, no instructor-only
pages or commands. It then checks that no line of a reference solution went along (the leak
check) and prints the two commands a student runs. --check DIR runs only the leak check, on any
folder (a release after its docs were built, for example).

Exit codes: 0 written (or checked) and no leak, 1 a solution line was found, 2 usage error."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "release", help="write the student edition (no answers) into a folder",
        description=RELEASE_HELP)
    parser.add_argument("out", type=Path, metavar="OUT", nargs="?",
                        help="new folder for the student edition")
    parser.add_argument("--check", type=Path, metavar="DIR",
                        help="only look for solution lines in DIR (nothing is written)")
    parser.add_argument("--no-git", action="store_true",
                        help="do not make the release a git repository with one commit")
    parser.set_defaults(handler=_cmd_release)


def _cmd_release(args: argparse.Namespace, ctx) -> int:

    manifest = ctx.manifest()
    if not (ctx.root / "solutions").is_dir():
        raise UsageError("this copy of the kit has no solutions/: it is a student edition already")
    if (args.out is None) == (args.check is None):
        raise UsageError("release: give OUT (write a release) or --check DIR (check one)")
    secrets = secrets_of(ctx.root, manifest)
    if args.check is not None:
        directory = args.check.absolute()
        if not directory.is_dir():
            raise UsageError(f"not a directory: {directory}")
    else:
        directory = args.out.absolute()
        try:
            written = write_release(ctx.root, directory, manifest, git_init=not args.no_git)
        except ReleaseError as err:
            raise UsageError(str(err)) from err
        ctx.stdout.write(f"Student edition written to {directory} ({len(written)} files)\n")
    leaks, scanned = find_leaks(secrets, directory)
    if leaks:
        ctx.stdout.write(f"LEAK: {len(leaks)} solution line(s) found in {directory}:\n")
        ctx.stdout.write("".join(f"  {line}\n" for line in describe_leaks(leaks)))
        return 1
    ctx.stdout.write(f"Leak check: none of {len(secrets)} solution lines is in the "
                     f"{scanned} text files of {directory}\n")
    if args.out is not None:
        ctx.stdout.write(
            "A student runs, in that folder:\n"
            "  bash setup.sh && python3 grader/kit.py grade 01   # install, build, grade lab 01\n"
            "  python3 grader/kit.py selftest                     # the edition's own tests\n")
    return 0
