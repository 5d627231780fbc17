"""Known-wrong and known-right submissions of a lab: ``grader/NN_name/wrong.json``.

Each entry is a plausible student mistake written as text edits of the reference solution (or,
for a name starting ``right_``, a correct alternative that must lose nothing). The selftest grades
every one and checks that it loses exactly the steps in ``loses`` with a failure message
containing ``message``; an entry with ``racecheck`` names a GoogleTest filter on which
compute-sanitizer's racecheck must report a hazard. CMake (common/cmake/KitLab.cmake) builds a
grader binary per entry from the same file.

This module is the one parser of those files: validated on load, so a typo in a field is reported
with its place (``grader/01_indexing/wrong.json: submissions[2].loses: ...``), and ``apply``
reports an edit whose text is no longer in the solution. Instructor-only: a student edition has
no solutions/ and no wrong.json.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .manifest import Lab, ManifestError

FILE_NAME = "wrong.json"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_FIELDS = {"name", "mistake", "edits", "loses", "message", "racecheck"}


class WrongError(ManifestError):
    """A wrong.json that is malformed, or an edit that no longer applies."""


@dataclass(frozen=True)
class Edit:
    file: str
    find: str
    replace: str


@dataclass(frozen=True)
class WrongSubmission:
    name: str
    mistake: str
    edits: tuple[Edit, ...]
    loses: tuple[str, ...]
    message: str
    racecheck: str | None = None

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
        edits = item.get("edits")
        if not isinstance(edits, list) or not edits:
            raise WrongError(f"{at}.edits: expected a non-empty list")
        parsed = []
        for j, edit in enumerate(edits):
            if not isinstance(edit, dict) or set(edit) != {"file", "find", "replace"} or not all(
                    isinstance(edit[k], str) for k in edit):
                raise WrongError(f"{at}.edits[{j}]: expected {{file, find, replace}} strings")
            if edit["file"] not in lab.student_files:
                raise WrongError(f"{at}.edits[{j}].file: {edit['file']} is not a student file "
                                 f"of {lab.id}")
            if not edit["find"]:
                raise WrongError(f"{at}.edits[{j}].find: empty")
            parsed.append(Edit(edit["file"], edit["find"], edit["replace"]))
        found.append(WrongSubmission(name, item["mistake"], tuple(parsed), tuple(loses),
                                     item["message"], racecheck))
    names = [s.name for s in found]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise WrongError(f"{where}: submission(s) named twice: {', '.join(twice)}")
    return found


def apply(root: Path, lab: Lab, sub: WrongSubmission) -> dict[str, str]:
    """The submission's files: the reference solution's with its edits applied in order (as
    KitLab.cmake does). Raises WrongError when an edit's text is not in the file any more."""
    files = {}
    for name in lab.student_files:
        solution = root / "solutions" / lab.id / name
        stub = root / "labs" / lab.id / name
        files[name] = (solution if solution.is_file() else stub).read_text(encoding="utf-8")
    for edit in sub.edits:
        if edit.find not in files[edit.file]:
            raise WrongError(f"grader/{lab.id}/{FILE_NAME}: submission {sub.name}: the text to "
                             f"replace is no longer in solutions/{lab.id}/{edit.file}: "
                             f"{edit.find[:80]!r}")
        files[edit.file] = files[edit.file].replace(edit.find, edit.replace)
    return files
