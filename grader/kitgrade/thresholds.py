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
    """key -> (student ratio, reference ratio); mirrors kit::parse_thresholds."""
    return {key: (ratios[0], ratios[1]) for key, ratios in
            _read(path, 2, "expected 'key student_ratio reference_ratio'").items()}


def _read(path: Path, columns: int, usage: str) -> dict[str, list[float]]:
    """The lines 'key ratio...' of a file (# starts a comment): key -> its `columns` ratios."""
    try:
        text = path.read_text()
    except OSError as err:
        raise ThresholdsError(f"cannot read thresholds file {path}: {err.strerror}") from err
    table: dict[str, list[float]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        where = f"{path}:{number}"
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != columns + 1:
            raise ThresholdsError(f"{where}: {usage}")
        if words[0] in table:
            raise ThresholdsError(f"{where}: duplicate key '{words[0]}'")
        table[words[0]] = [_ratio(word, where) for word in words[1:]]
    return table


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
            _read(path, 1, "expected 'key most_plausible_ratio'").items()}
