"""What every command of the kit's command line shares: the context a command runs in, the usage
error and exit codes, lab lookup, argument types, seeds and default folders.

A leaf module: it imports no other command module, so every command imports from here and none
from another command (kitgrade.cli, the entry point, imports them all).
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import shutil
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any, NoReturn, TextIO

from . import thresholds
from .manifest import Lab, Manifest, load_manifest

SEED_MAX = 2**32 - 1


class ExitCode(IntEnum):
    OK = 0
    TESTS_FAILED = 1
    USAGE = 2
    BUILD_OR_BINARY = 3
    NO_GPU = 4
    INTERRUPTED = 130


class UsageError(Exception):
    """Bad command line or configuration: reported in one line, exit code 2."""


@dataclass(frozen=True)
class Context:
    """What every subcommand gets besides its parsed arguments."""

    root: Path
    stdout: TextIO
    stderr: TextIO

    def manifest(self) -> Manifest:
        return load_manifest(self.root / "grader" / "labs.json")


TERMINAL_WIDTH = 80
"""The width of what the kit prints for a person (every --help, list, hint, progress page and
table): a standard terminal's. Where a wider terminal may get more, the command says so (the
grade views, up to student_view.MAX_WIDTH). Help descriptions are written in the sources' own
width and filled to this one (or the terminal's, when narrower)."""

_LIST_MARKER = re.compile(r"\s*(?:\d+\.|[-*]|\d+(?= ))\s+")
_TERM = re.compile(r"\s*\S(?:.*?\S)?\s{2,}(?=\S)")
"""A list entry's start (``1.``, ``-``, an exit code) and a definition row's term and gap."""
_WRAPPED = 60
"""A line at least this long was broken by the author's wrapping, so the next one goes on with
it; a shorter line (a command, a table row, a paragraph's end) ends its item."""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps a description's paragraphs, lists and examples as written, and fills to TERMINAL_WIDTH
    the ones too wide for it: a list entry or a definition row hangs under its text, a command or
    table row no wider than that is left alone."""

    def __init__(self, prog: str, *args: Any, **kwargs: Any) -> None:
        # argparse fills to the terminal's width less 2, however wide the terminal is. (Keywords
        # pass through: newer Pythons give the formatter more of them.)
        width = kwargs.get("width") or shutil.get_terminal_size().columns - 2
        kwargs["width"] = min(width, TERMINAL_WIDTH - 2)
        super().__init__(prog, *args, **kwargs)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(indent + line for line in fill_help(text, width))


def fill_help(text: str, width: int) -> list[str]:
    """The lines of `text`, each item (a paragraph, a list entry or a definition row, with the
    lines that go on with it) that has a line wider than `width` filled again to it."""
    items: list[list[str]] = []
    for line in (line.rstrip() for line in text.splitlines()):
        if items and _goes_on(items[-1], line):
            items[-1].append(line)
        else:
            items.append([line])
    lines: list[str] = []
    for item in items:
        if all(len(line) <= width for line in item):
            lines += item
            continue
        first = item[0]
        lead, hanging = _indent(first), _hanging(item)
        head = first[:hanging]
        # A marker or a term keeps its column, and the text hangs under the text.
        prefix = head if hanging > lead and head.endswith(" ") and head.strip() else " " * lead
        words = " ".join(line.strip() for line in item)[len(prefix.strip()):].strip()
        lines += textwrap.wrap(words, width, initial_indent=prefix,
                               subsequent_indent=" " * max(hanging, lead),
                               break_long_words=False, break_on_hyphens=False)
    return lines


def _goes_on(item: list[str], line: str) -> bool:
    """Whether `line` continues `item`: the item's last line is long (the author's wrapping broke
    it), `line` starts no list entry, and it is indented where the item's text hangs."""
    if not line or _LIST_MARKER.match(line) or len(item[-1]) < _WRAPPED:
        return False
    return _indent(line) == _hanging(item)


def _hanging(item: list[str]) -> int:
    """The column of an item's lines after its first: its second line's, or else under the text
    that follows a list marker or a definition's term, or else the first line's indent."""
    if len(item) > 1:
        return _indent(item[1])
    mark = _LIST_MARKER.match(item[0]) or _TERM.match(item[0])
    return len(mark.group(0)) if mark else _indent(item[0])


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


class Parser(argparse.ArgumentParser):
    """Turns argparse's usage errors into UsageError so they print as one line; its help (and
    every subcommand's) is at most TERMINAL_WIDTH wide (HelpFormatter)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


KIT_ROOT = Path(__file__).resolve().parents[2]
"""The copy of the kit this command line belongs to (which parts it has decides some options)."""

SUBMISSION_BUILD = "build-submission"
"""Default build directory of --submission and batch, so the build of labs/ is left alone."""


def select_labs(manifest: Manifest, names: Sequence[str]) -> list[Lab]:
    labs = [find_lab(manifest, name) for name in names] if names else list(manifest.labs)
    return list(dict.fromkeys(labs))  # "01 indexing" names one lab once


def check_thresholds(ctx: Context) -> None:
    try:
        thresholds.load(thresholds.thresholds_path(ctx.root))
    except thresholds.ThresholdsError as err:
        raise UsageError(str(err)) from err


def env_seed() -> int:
    text = os.environ.get("KIT_SEED")
    if text is None or text == "":
        return secrets.randbelow(SEED_MAX + 1)
    try:
        return seed_arg(text)
    except argparse.ArgumentTypeError as err:
        raise UsageError(f"KIT_SEED: {err}") from err


# ---------------------------------------------------------------- argument types

def seed_arg(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        value = -1
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: expected an integer 0..{SEED_MAX}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def find_lab(manifest: Manifest, name: str) -> Lab:
    lab = manifest.find_lab(name)
    if lab is None:
        raise UsageError(f"unknown lab {name!r}; labs: {', '.join(manifest.lab_ids())}")
    return lab


def default_build_dir(ctx: Context, explicit: Path | None, default: str = "build") -> Path:
    """The build directory a command uses: --build-dir, else <repo>/build (or `default`)."""
    return (explicit or ctx.root / default).absolute()
