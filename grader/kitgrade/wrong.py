"""Known-wrong and known-right submissions of a lab: ``grader/NN_name/wrong.json``.

Each entry is a plausible student mistake written as text edits of the reference solution (or,
for a name starting ``right_``, a correct alternative that must lose nothing). The selftest grades
every one and checks that it loses exactly the steps in ``loses`` with a failure message
containing ``message``; an entry with ``racecheck`` names a GoogleTest filter on which
compute-sanitizer's racecheck must report a hazard; an entry with ``likely`` names part of the
diagnosis line (``likely: ...``, kit/diagnose.h) a failing test must print. CMake (common/cmake/KitLab.cmake) builds a
grader binary per entry from the same file.

This module is the one parser of those files: validated on load, so a typo in a field is reported
with its place (``grader/01_indexing/wrong.json: submissions[2].loses: ...``), and ``apply``
reports an edit whose text is no longer in the solution. Instructor-only: a student edition has
no solutions/ and no wrong.json.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .manifest import Lab, ManifestError

FILE_NAME = "wrong.json"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_FIELDS = {"name", "mistake", "edits", "loses", "message", "racecheck", "base", "refused",
           "only_refused", "likely", "timeout_s", "alone_timeout_s"}


class WrongError(ManifestError):
    """A wrong.json that is malformed, or an edit that no longer applies."""


@dataclass(frozen=True)
class Edit:
    """Replace `find` by `replace` in `file`: everywhere, or only inside the DONE region `region`
    (anchored on the region id rather than on teaching comments, which may be reworded), and
    only its `occurrence`-th match there when given (1 = the first)."""

    file: str
    find: str
    replace: str
    region: str | None = None
    occurrence: int | None = None


@dataclass(frozen=True)
class WrongSubmission:
    name: str
    mistake: str
    edits: tuple[Edit, ...]
    loses: tuple[str, ...]
    message: str
    racecheck: str | None = None
    base: str = "solution"
    """What the edits apply to: the reference solution, or the untouched stub ("stub"): an attack
    on the grader that must not turn a stub's 0 into points."""
    refused: bool = False
    """The inspection of the student's objects (kitgrade.inspect) must refuse it: the whole lab
    scores 0 unrun. The selftest grades it a second time with the inspection off, where it must
    still lose exactly `loses` (the protection of the judge/worker split alone)."""

    only_refused: bool = False
    """Only the inspection can stop it (say, an #include of the reference solution: the worker
    then runs the reference): the selftest does not grade it again without the inspection."""

    likely: str | None = None
    """Part of the diagnosis (kit/diagnose.h) that a failing test's "likely:" line must hold:
    the mistake the pattern of wrong elements names."""

    timeout_s: float | None = None
    """The time limit of each test of the steps it loses (`loses`) in the selftest, instead of
    the lab's: for a mistake that hangs on purpose, so that each of its hanging tests does not
    cost the lab's whole limit (students are graded with the lab's). The tests of the steps it
    keeps keep the lab's limit: beside its hangs they may run long, and must still pass."""

    alone_timeout_s: float | None = None
    """The time limit of each of its timed and perf tests of the steps it loses in the selftest,
    instead of timeout_s or the lab's: those run with nothing else on the GPU, so a tighter
    limit cuts a hang in one of them short without risking a slow, healthy test beside other
    submissions' hangs."""

    @property
    def is_attack(self) -> bool:
        """A cheating submission (name attack_*): an attack on the grader itself."""
        return self.name.startswith("attack_")

    @property
    def is_right(self) -> bool:
        """A known-right alternative: it must get full marks."""
        return self.name.startswith("right_")


def path(root: Path, lab: Lab) -> Path:
    return root / "grader" / lab.id / FILE_NAME


def load(root: Path, lab: Lab) -> list[WrongSubmission]:
    """The lab's submissions (none when it has no wrong.json), validated against `lab`."""
    file = path(root, lab)
    if not file.is_file():
        return []
    where = str(file.relative_to(root)) if file.is_relative_to(root) else str(file)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise WrongError(f"{where}: cannot read it as JSON ({err})") from err
    return parse(data, lab, where)


def parse(data: Any, lab: Lab, where: str) -> list[WrongSubmission]:
    if not isinstance(data, dict) or not isinstance(data.get("submissions"), list):
        raise WrongError(f"{where}: expected an object with a 'submissions' list")
    if data.get("lab", lab.id) != lab.id:
        raise WrongError(f"{where}: lab is {data.get('lab')!r}, expected {lab.id!r}")
    steps = {step.id for step in lab.steps}
    found: list[WrongSubmission] = []
    for i, item in enumerate(data["submissions"]):
        at = f"{where}: submissions[{i}]"
        if not isinstance(item, dict):
            raise WrongError(f"{at}: expected an object")
        unknown = set(item) - _FIELDS
        if unknown:
            raise WrongError(f"{at}: unknown field(s) {', '.join(sorted(unknown))}")
        name = item.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise WrongError(f"{at}.name: expected a snake_case name")
        for key in ("mistake", "message"):
            if not isinstance(item.get(key), str):
                raise WrongError(f"{at}.{key}: expected a string")
        loses = item.get("loses")
        if not isinstance(loses, list) or not all(isinstance(s, str) for s in loses):
            raise WrongError(f"{at}.loses: expected a list of step ids")
        bad = [s for s in loses if s not in steps]
        if bad:
            raise WrongError(f"{at}.loses: {', '.join(bad)} is not a step of {lab.id}")
        if name.startswith("right_") and (loses or item["message"]):
            raise WrongError(f"{at}: a right_ submission loses nothing and is told nothing")
        if not name.startswith("right_") and not loses:
            raise WrongError(f"{at}.loses: a wrong submission must lose some step")
        racecheck = item.get("racecheck")
        if racecheck is not None and (not isinstance(racecheck, str) or not racecheck):
            raise WrongError(f"{at}.racecheck: expected a GoogleTest filter")
        base = item.get("base", "solution")
        if base not in ("solution", "stub"):
            raise WrongError(f"{at}.base: expected \"solution\" or \"stub\"")
        refused = item.get("refused", False)
        only_refused = item.get("only_refused", False)
        if not isinstance(refused, bool) or not isinstance(only_refused, bool):
            raise WrongError(f"{at}.refused, only_refused: expected true or false")
        if only_refused and not refused:
            raise WrongError(f"{at}.only_refused: needs \"refused\": true")
        likely = item.get("likely")
        if likely is not None and (not isinstance(likely, str) or not likely):
            raise WrongError(f"{at}.likely: expected part of a diagnosis line")
        timeout_s, alone_timeout_s = item.get("timeout_s"), item.get("alone_timeout_s")
        for key, seconds in (("timeout_s", timeout_s), ("alone_timeout_s", alone_timeout_s)):
            if seconds is not None and (isinstance(seconds, bool)
                                        or not isinstance(seconds, (int, float))
                                        or not 0 < seconds <= lab.timeout_s):
                raise WrongError(f"{at}.{key}: expected seconds above 0, at most the lab's "
                                 f"{lab.timeout_s:g}")
        edits = item.get("edits")
        if not isinstance(edits, list) or not edits:
            raise WrongError(f"{at}.edits: expected a non-empty list")
        parsed = []
        for j, edit in enumerate(edits):
            if (not isinstance(edit, dict) or not {"file", "find", "replace"} <= set(edit)
                    or not set(edit) <= {"file", "find", "replace", "region", "occurrence"}
                    or not all(isinstance(edit[k], str) for k in ("file", "find", "replace"))):
                raise WrongError(f"{at}.edits[{j}]: expected {{file, find, replace}} strings "
                                 "(and optionally region, occurrence)")
            region, occurrence = edit.get("region"), edit.get("occurrence")
            if region is not None and region not in steps:
                raise WrongError(f"{at}.edits[{j}].region: {region!r} is not a step of {lab.id}")
            if occurrence is not None and (isinstance(occurrence, bool)
                                           or not isinstance(occurrence, int) or occurrence < 1):
                raise WrongError(f"{at}.edits[{j}].occurrence: expected a number from 1")
            if edit["file"] not in lab.student_files:
                raise WrongError(f"{at}.edits[{j}].file: {edit['file']} is not a student file "
                                 f"of {lab.id}")
            if not edit["find"]:
                raise WrongError(f"{at}.edits[{j}].find: empty")
            parsed.append(Edit(edit["file"], edit["find"], edit["replace"], region, occurrence))
        found.append(WrongSubmission(name, item["mistake"], tuple(parsed), tuple(loses),
                                     item["message"], racecheck, base, refused, only_refused,
                                     likely, timeout_s, alone_timeout_s))
    names = [s.name for s in found]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise WrongError(f"{where}: submission(s) named twice: {', '.join(twice)}")
    return found


def apply(root: Path, lab: Lab, sub: WrongSubmission) -> dict[str, str]:
    """The submission's files: the reference solution's (or the stub's, for base "stub") with its
    edits applied in order. Raises WrongError when an edit's text (or region) is not in the file
    any more."""
    files = {}
    folder = "labs" if sub.base == "stub" else "solutions"
    for name in lab.student_files:
        solution = root / "solutions" / lab.id / name
        stub = root / "labs" / lab.id / name
        source = solution if solution.is_file() and sub.base != "stub" else stub
        files[name] = source.read_text(encoding="utf-8")
    for edit in sub.edits:
        files[edit.file] = _apply_edit(files[edit.file], edit, f"grader/{lab.id}/{FILE_NAME}: "
                                       f"submission {sub.name}: {folder}/{lab.id}/{edit.file}")
    return files


def _apply_edit(text: str, edit: Edit, where: str) -> str:
    start, end = 0, len(text)
    if edit.region is not None:
        opener = re.search(rf"^[ \t]*//[ \t]*DONE\({re.escape(edit.region)}\):.*$", text, re.M)
        closer = opener and re.search(rf"^[ \t]*//[ \t]*END\({re.escape(edit.region)}\)",
                                      text[opener.end():], re.M)
        if not opener or not closer:
            raise WrongError(f"{where}: has no region {edit.region}")
        start, end = opener.end(), opener.end() + closer.start()
    body = text[start:end]
    count = body.count(edit.find)
    if count == 0 or (edit.occurrence or 1) > count:
        raise WrongError(f"{where}: the text to replace is no longer there"
                         f"{' (region ' + edit.region + ')' if edit.region else ''}: "
                         f"{edit.find[:80]!r}")
    if edit.occurrence is None:
        body = body.replace(edit.find, edit.replace)
    else:
        at = -1
        for _ in range(edit.occurrence):
            at = body.index(edit.find, at + 1)
        body = body[:at] + edit.replace + body[at + len(edit.find):]
    return text[:start] + body + text[end:]


def write(root: Path, lab: Lab, out_dir: Path) -> list[str]:
    """Writes every submission's files to out_dir/<name>/ (a file only when its content changed,
    so a reconfigure rebuilds nothing) and returns the names."""
    names = []
    for sub in load(root, lab):
        for name, text in apply(root, lab, sub).items():
            _write_if_changed(out_dir / sub.name / name, text)
        names.append(sub.name)
    return names


def _write_if_changed(target: Path, text: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.is_file() or target.read_text(encoding="utf-8") != text:
        target.write_text(text, encoding="utf-8")


NAMES_FILE = "names.txt"
"""In OUT_ROOT/<lab>/: the lab's known-wrong submissions, one name a line (KitLab.cmake reads it)."""


def main(argv: list[str]) -> int:
    """`python3 -m kitgrade.wrong ROOT OUT_ROOT`: for every lab of grader/labs.json with a
    wrong.json, writes its submissions' files to OUT_ROOT/<lab>/<name>/ and their names to
    OUT_ROOT/<lab>/names.txt. grader/CMakeLists.txt runs it once at configure time, for all the
    labs (one interpreter start, not one a lab), so the edits are applied in one place."""
    if len(argv) != 2:
        sys.stderr.write("usage: python3 -m kitgrade.wrong ROOT OUT_ROOT\n")
        return 2
    from .manifest import load_manifest
    root, out_root = Path(argv[0]), Path(argv[1])
    try:
        for lab in load_manifest(root / "grader" / "labs.json").labs:
            if not (root / "grader" / lab.id / "wrong.json").is_file():
                continue
            names = write(root, lab, out_root / lab.id)
            _write_if_changed(out_root / lab.id / NAMES_FILE, "".join(f"{n}\n" for n in names))
    except ManifestError as err:
        sys.stderr.write(f"{err}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
