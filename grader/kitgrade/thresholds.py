"""Validates the thresholds file before grading starts (the C++ side reads the same grammar).

A typo in grader/thresholds.conf would otherwise surface as a failed performance test in every
submission; checking it first turns it into one clear usage error (exit 2) and no reports.
"""
from __future__ import annotations

import os
from pathlib import Path


class ThresholdsError(ValueError):
    """The file is missing or malformed; the message names the file and line."""


def thresholds_path(root: Path) -> Path:
    """KIT_THRESHOLDS when set, else the kit's grader/thresholds.conf (as the graders do)."""
    override = os.environ.get("KIT_THRESHOLDS")
    return Path(override) if override else root / "grader" / "thresholds.conf"


def load(path: Path) -> dict[str, tuple[float, float]]:
    """The default section: key -> (student ratio, reference ratio); mirrors
    kit::parse_thresholds."""
    return load_sections(path)[""]


def load_sections(path: Path) -> dict[str, dict[str, tuple[float, float]]]:
    """Every section, "" being the default: section -> key -> (student, reference). A line
    `[NAME]` starts the section of a GPU model (the start of the CUDA device name) or of a compute
    capability (`sm_90`); mirrors kit::parse_threshold_table."""
    return {name: {key: (r[0], r[1]) for key, r in keys.items()}
            for name, keys in _bars(path).items()}


def floors(path: Path) -> dict[str, dict[str, float]]:
    """The keys graded on a scale (a fourth column, `key student reference floor`), by section:
    section -> key -> floor, the ratio under which a student's perf test earns nothing."""
    return {name: {key: r[2] for key, r in keys.items() if len(r) == 3}
            for name, keys in _bars(path).items()}


def with_default_lines(text: str, lines: str) -> str:
    """`text` of a thresholds file with `lines` added at the end of its default section: before
    the first `[NAME]` header and the comment lines right above it (a key after a header would
    belong to that GPU's section), or at the end when there is no header."""
    kept = text.splitlines(keepends=True)
    at = next((i for i, line in enumerate(kept) if line.split("#", 1)[0].strip().startswith("[")),
              len(kept))
    while at > 0 and at < len(kept) and kept[at - 1].lstrip().startswith("#"):
        at -= 1
    while at > 0 and at < len(kept) and not kept[at - 1].strip():
        at -= 1
    head = "".join(kept[:at])
    if head and not head.endswith("\n"):
        head += "\n"
    tail = "".join(kept[at:])
    return head + lines + ("\n" if tail and not tail.startswith("\n") else "") + tail


def _bars(path: Path) -> dict[str, dict[str, list[float]]]:
    sections = _read(path, 2, "expected 'key student_ratio reference_ratio [floor_ratio]'",
                     headers=True, optional=1)
    for name, keys in sections.items():
        for key, ratios in keys.items():
            if len(ratios) == 3 and ratios[2] >= ratios[0]:
                raise ThresholdsError(f"{path}: [{name or 'default'}] {key}: the floor "
                                      f"{ratios[2]:g} must be below the student bar {ratios[0]:g}")
    return sections


def _read(path: Path, columns: int, usage: str, headers: bool = False,
          optional: int = 0) -> dict[str, dict[str, list[float]]]:
    """The lines 'key ratio...' of a file (# starts a comment), by section ("" before any
    `[NAME]` header, the only section when `headers` is false): section -> key -> ratios."""
    try:
        text = path.read_text()
    except OSError as err:
        raise ThresholdsError(f"cannot read thresholds file {path}: {err.strerror}") from err
    sections: dict[str, dict[str, list[float]]] = {"": {}}
    current = sections[""]
    for number, line in enumerate(text.splitlines(), 1):
        where = f"{path}:{number}"
        content = line.split("#", 1)[0].strip()
        if not content:
            continue
        if headers and content.startswith("["):
            name = content[1:-1] if content.endswith("]") else ""
            if not name:
                raise ThresholdsError(
                    f"{where}: expected a section header '[GPU name]' or '[sm_XY]'")
            if name in sections:
                raise ThresholdsError(f"{where}: section [{name}] appears twice")
            current = sections[name] = {}
            continue
        words = content.split()
        if not columns + 1 <= len(words) <= columns + 1 + optional:
            raise ThresholdsError(f"{where}: {usage}")
        if words[0] in current:
            raise ThresholdsError(f"{where}: duplicate key '{words[0]}'")
        if current is not sections[""] and words[0] not in sections[""]:
            raise ThresholdsError(f"{where}: '{words[0]}' is not a key of the default section")
        current[words[0]] = [_ratio(word, where) for word in words[1:]]
    return sections


def _ratio(word: str, where: str) -> float:
    try:
        value = float(word)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1000:
        raise ThresholdsError(f"{where}: '{word}' is not a positive ratio")
    return value


PLAUSIBLE_FILE = "plausible.conf"
"""grader/plausible.conf: per threshold key, the largest ratio the lab's technique can honestly
reach. A result above it is flagged for review in the reports, never failed or passed by it."""


def load_plausible(path: Path) -> dict[str, float]:
    """key -> most plausible ratio; lines are 'key ratio' (# comments)."""
    return {key: ratios[0] for key, ratios in
            _read(path, 1, "expected 'key most_plausible_ratio'")[""].items()}
