"""Banned libraries: finds a lab's student code using a library the lab forbids.

A lab about writing a GEMM must not hand the work to cuBLAS, and a lab about writing a
reduction must not call CUB, so a lab's lab.json may list ``banned_libraries`` (see
manifest.BannedLibrary). Before any test runs, the runner looks for them in two independent
ways:

* **source scan**: each student file, with comments and string literals blanked out (so a
  comment that mentions ``cub::DeviceReduce`` is no offence), is searched line by line for
  the library's ``patterns``; a hit is reported as ``file:line`` with the offending text;
* **symbol scan**: ``nm -C`` lists the symbols of the student's compiled library (the static
  archive the grader links), and the demangled names are searched for the library's
  ``symbols`` (function symbols only), so a call hidden behind macros is still caught.
  Without ``nm`` this scan is skipped, with a note in the reports.

Every test of a step the ban covers is then reported failed, without being run, with a message
naming the file and line (or symbol); the other steps are graded as usual.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .manifest import BannedLibrary, Lab

NM_TIMEOUT_S = 60.0
SHOWN_PER_LIBRARY = 3
"""Uses listed per library in a test's message; the rest are counted."""
SYMBOL_SHOWN_CHARS = 100

_INCLUDE_SO_FAR = re.compile(r"^\s*#\s*include\s*$|__has_include\s*\(\s*$")
_IDENTIFIER_TAIL = re.compile(r"[A-Za-z0-9_.]*$")
_RAW_PREFIXES = ("R", "u8R", "uR", "UR", "LR")
_CODE_SYMBOLS = "UTtWwi"
"""nm's letters for functions: undefined (called), text, weak (template instances), indirect."""
_NM_LINE = re.compile(r"^\s*(?:[0-9a-fA-F]+\s+)?([A-Za-z?])\s+(.*\S)\s*$")


@dataclass(frozen=True)
class SourceFile:
    """A student file to scan, and how to name it in a message (e.g. labs/05_x/x.cu)."""

    path: Path
    shown: str


@dataclass(frozen=True)
class Violation:
    library: str
    where: str
    """``file:line`` for a source hit, ``archive (member)`` for a symbol."""
    text: str
    """The offending source text or symbol name."""
    is_symbol: bool = False

    def describe(self) -> str:
        what = f"symbol `{self.text}`" if self.is_symbol else f"`{self.text}`"
        return f"{self.where} uses {self.library} ({what})"


@dataclass
class BanCheck:
    """What the scans found for one lab, and notes for the reports."""

    lab: Lab
    violations: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def libraries_used(self) -> list[BannedLibrary]:
        used = {v.library for v in self.violations}
        return [b for b in self.lab.banned_libraries if b.name in used]

    def verdict_for(self, step_id: str) -> tuple[str, str] | None:
        """(reason, message) failing every test of `step_id`, or None when it is not banned."""
        libraries = [b for b in self.libraries_used() if b.applies_to(step_id)]
        if not libraries:
            return None
        everything = _or_list([b.name for b in self.lab.banned_libraries])
        lines = []
        for library in libraries:
            uses = [v for v in self.violations if v.library == library.name]
            for i, use in enumerate(uses[:SHOWN_PER_LIBRARY]):
                line = use.describe()
                if i == 0:
                    line += f": this lab must not call {everything} — {library.why}"
                lines.append(line)
            if len(uses) > SHOWN_PER_LIBRARY:
                lines.append(f"... and {len(uses) - SHOWN_PER_LIBRARY} more uses of {library.name}")
        reason = f"uses {_and_list([b.name for b in libraries])}, banned in this lab (test not run)"
        return reason, "\n".join(lines)


def check(lab: Lab, sources: Sequence[SourceFile], archive: Path | None) -> BanCheck:
    """Scans the student's sources and compiled library for every banned library of `lab`."""
    result = BanCheck(lab)
    if not lab.banned_libraries:
        return result
    scanned = 0
    for source in sources:
        try:
            text = source.path.read_text(encoding="utf-8", errors="replace")
        except OSError as err:
            result.notes.append(f"source scan: cannot read {source.shown}: {err.strerror}")
            continue
        scanned += 1
        for library in lab.banned_libraries:
            result.violations += scan_source(text, source.shown, library)
    symbols_scanned = _scan_archive(lab, archive, result)

    names = ", ".join(b.name for b in lab.banned_libraries)
    where = f"{scanned} source file(s)" + (f" and {archive.name}" if symbols_scanned and archive else "")
    used = result.libraries_used()
    if used:
        result.notes.insert(0, f"banned libraries ({names}): {_and_list([b.name for b in used])} "
                               f"found in {where}; the steps that ban them score 0")
    else:
        result.notes.insert(0, f"banned libraries ({names}): none found in {where}")
    return result


def _scan_archive(lab: Lab, archive: Path | None, result: BanCheck) -> bool:
    """Adds symbol violations; returns whether the symbol scan ran."""
    if not any(b.symbols for b in lab.banned_libraries):
        return False
    if archive is None or not archive.is_file():
        shown = archive if archive is not None else "(none given)"
        result.notes.append(f"symbol scan skipped: no compiled library at {shown} (source scan only)")
        return False
    nm_output, problem = run_nm(archive)
    if nm_output is None:
        result.notes.append(f"symbol scan skipped: {problem} (source scan only)")
        return False
    for library in lab.banned_libraries:
        result.violations += scan_symbols(nm_output, archive.name, library)
    return True


# ---------------------------------------------------------------- source scan

def blank_comments_and_strings(text: str) -> str:
    """`text` with comments and the insides of string and character literals turned into spaces.

    Newlines stay, so line numbers and columns still match the original. The path of an
    ``#include "..."`` is kept: it names a header, it is not data. A quote after a digit is a
    C++14 digit separator (``1'000``), not a character literal.
    """
    out = list(text)
    n = len(text)

    def blank(start: int, end: int) -> None:
        for k in range(start, min(end, n)):
            if out[k] != "\n":
                out[k] = " "

    i = 0
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = i
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                j += 1  # a backslash at the end of the line continues the comment
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c == '"':
            token = _IDENTIFIER_TAIL.search(text, 0, i).group(0)  # type: ignore[union-attr]
            if token in _RAW_PREFIXES:
                i = _skip_raw_string(text, i, blank)
                continue
            end = _literal_end(text, i, '"')
            line_so_far = text[text.rfind("\n", 0, i) + 1:i]
            if not _INCLUDE_SO_FAR.search(line_so_far):
                blank(i + 1, end - 1)
            i = end
        elif c == "'":
            token = _IDENTIFIER_TAIL.search(text, 0, i).group(0)  # type: ignore[union-attr]
            if token and token[0].isdigit():
                i += 1  # digit separator
                continue
            end = _literal_end(text, i, "'")
            blank(i + 1, end - 1)
            i = end
        else:
            i += 1
    return "".join(out)


def _literal_end(text: str, start: int, quote: str) -> int:
    """Index just past the literal opened at `start`; an unterminated one ends at its line."""
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == quote:
            return i + 1
        elif text[i] == "\n":
            return i
        else:
            i += 1
    return len(text)


def _skip_raw_string(text: str, quote: int, blank) -> int:  # type: ignore[no-untyped-def]
    """Blanks R"delim( ... )delim" opened at `quote`; returns the index after it."""
    paren = text.find("(", quote + 1, quote + 18)
    if paren < 0:
        return quote + 1
    closing = ")" + text[quote + 1:paren] + '"'
    end = text.find(closing, paren + 1)
    end = len(text) if end < 0 else end + len(closing)
    blank(quote + 1, end - 1)
    return end


def scan_source(text: str, shown: str, library: BannedLibrary) -> list[Violation]:
    """One violation per line where any of the library's patterns matches the blanked text."""
    found = []
    patterns = [re.compile(p) for p in library.patterns]
    for number, line in enumerate(blank_comments_and_strings(text).splitlines(), 1):
        matches = [m for p in patterns for m in [p.search(line)] if m]
        if matches:
            first = min(matches, key=lambda m: m.start())
            found.append(Violation(library.name, f"{shown}:{number}", _offending_text(line, first)))
    return found


def _offending_text(line: str, match: re.Match[str]) -> str:
    """The match, widened to a whole qualified name (cub:: -> cub::DeviceReduce::Sum), or the
    whole line for a preprocessor directive."""
    if line.lstrip().startswith("#"):
        return " ".join(line.split())
    tail = re.match(r"[\w:]*", line[match.end():])
    return (match.group(0) + (tail.group(0) if tail else "")).strip()


# ---------------------------------------------------------------- symbol scan

def run_nm(archive: Path) -> tuple[str | None, str]:
    """(``nm -C`` output, "") or (None, why it could not run)."""
    nm = shutil.which("nm")
    if nm is None:
        return None, "nm not found on PATH"
    try:
        proc = subprocess.run([nm, "-C", str(archive)], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, errors="replace",
                              timeout=NM_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"nm could not run: {err}"
    if proc.returncode != 0:
        detail = proc.stderr.strip().splitlines()
        return None, f"nm exited with code {proc.returncode}" + (f": {detail[-1]}" if detail else "")
    return proc.stdout, ""


def parse_nm(output: str) -> list[tuple[str, str, str]]:
    """(archive member, nm type letter, demangled name) for every symbol, defined or undefined."""
    member = ""
    symbols = []
    for line in output.splitlines():
        if not line.strip():
            continue
        if line.endswith(":") and " " not in line:
            member = line[:-1]
            continue
        match = _NM_LINE.match(line)
        if match:
            symbols.append((member, match.group(1), match.group(2)))
    return symbols


def scan_symbols(nm_output: str, archive_name: str, library: BannedLibrary) -> list[Violation]:
    """One violation per archive member with a function symbol matching the library's patterns.

    Only functions count (called, ``U``, or compiled from the library's headers, ``T``/``W``):
    one library's headers may define another's data objects (CUB's headers define Thrust
    placeholders), but code only lands in the student's library when it is used. The symbol
    shown is the most telling one: a call into the library first, then a function outside the
    library's internal ``detail`` namespaces, then the shortest.
    """
    patterns = [re.compile(p) for p in library.symbols]
    best: dict[str, tuple[bool, bool, int, str]] = {}
    for member, kind, symbol in parse_nm(nm_output):
        if kind not in _CODE_SYMBOLS or not any(p.search(symbol) for p in patterns):
            continue
        rank = (kind != "U", "detail::" in symbol, len(symbol), symbol)
        if member not in best or rank < best[member]:
            best[member] = rank
    return [Violation(library.name, f"{archive_name} ({member or 'archive'})", _shorten(symbol),
                      is_symbol=True)
            for member, (_, _, _, symbol) in best.items()]


def _shorten(symbol: str) -> str:
    return symbol if len(symbol) <= SYMBOL_SHOWN_CHARS else symbol[:SYMBOL_SHOWN_CHARS - 1] + "…"


def _or_list(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _and_list(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
