"""Pictures of where a 2D output's wrong elements are, beside the reports.

A failed output check of a 2D output prints a map in the terminal (common/src/diagnose.cpp,
kit::detail::wrong_map): at most 8 x 32 cells, each a block of elements, ``#`` all wrong, ``+``
some, ``.`` none, under a line "where the wrong elements are (R x C; a cell is a x b)". The
reports get the same map as a PNG, ``maps/<test>.png`` (one per map in a failed test's output),
each cell a square: red all wrong, orange some, light grey none. PNG is written with zlib alone.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Iterable

from .model import Status, TestResult

HEADER = re.compile(r"^\s*where the wrong elements are \((\d+) x (\d+); a cell is (\d+) x (\d+)\)")
MAX_ROWS, MAX_COLS = 8, 32  # the map's size limit in diagnose.cpp
ROW = re.compile(r"^\s{4}([.#+]{1,%d})(?:\s{2}(?:row 0|last row))?\s*$" % MAX_COLS)
CELL_PX = 16
COLOURS = {"#": (204, 51, 51), "+": (240, 160, 48), ".": (232, 232, 232)}
GRID = (255, 255, 255)


def maps_in(output: str) -> list[list[str]]:
    """Every map in a test's output, each as its rows of cell characters."""
    found: list[list[str]] = []
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if not HEADER.match(line):
            continue
        rows = []
        # After the legend line; never more than the kit prints: text a student's code writes
        # to the test's output cannot make a picture of any size.
        for row in lines[i + 2:i + 2 + MAX_ROWS]:
            match = ROW.match(row)
            if match is None:
                break
            rows.append(match.group(1))
        if rows and len({len(r) for r in rows}) == 1:
            found.append(rows)
    return found


def png(rows: list[str]) -> bytes:
    """The map as an RGB PNG: CELL_PX pixels a cell, a white line between cells."""
    width, height = len(rows[0]) * CELL_PX, len(rows) * CELL_PX
    raw = bytearray()
    for y in range(height):
        raw.append(0)  # filter type: none
        for x in range(width):
            edge = x % CELL_PX == CELL_PX - 1 or y % CELL_PX == CELL_PX - 1
            raw += bytes(GRID if edge else COLOURS[rows[y // CELL_PX][x // CELL_PX]])

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(bytes(raw), 9)) + chunk(b"IEND", b""))


def file_name(test: TestResult, index: int) -> str:
    """maps/<lab>_<test id, letters and digits>[_<n>].png"""
    stem = re.sub(r"[^A-Za-z0-9]+", "_", f"{test.lab}_{test.id}").strip("_")
    return f"maps/{stem}{'' if index == 0 else f'_{index + 1}'}.png"


def render(tests: Iterable[TestResult]) -> dict[str, bytes]:
    """Report-relative path -> PNG, for every map in a failed test's output."""
    files: dict[str, bytes] = {}
    for test in tests:
        if test.status is not Status.FAILED:
            continue
        for i, rows in enumerate(maps_in(test.output)):
            files[file_name(test, i)] = png(rows)
    return files
