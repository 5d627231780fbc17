"""Tests of the wrong-element map pictures beside the reports (kitgrade.wrong_maps).

Run: python3 -m unittest discover -s grader/tests -t grader
"""
import struct
import tempfile
import unittest
import zlib
from pathlib import Path

from kitgrade import reports, wrong_maps
from kitgrade.model import LabResult, RunResult, Status, TestResult

# What common/src/diagnose.cpp prints under a failed 2D check (a grid rounded down on x).
OUTPUT = """Value of: kit::output_matches(...)
  Actual: false (out: 120 of 1023 elements wrong)
  likely: the last columns were never written
  where the wrong elements are (31 x 33; a cell is 4 x 2)
    '#' all wrong, '+' some, '.' none:
    ................+  row 0
    ................+
    ................+  last row
seed 7
"""


def decode(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the raw scanlines of a PNG written by wrong_maps.png."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat, width, height = 8, b"", 0, 0
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length:at + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    return width, height, zlib.decompress(idat)


def failed(output: str, status: Status = Status.FAILED) -> TestResult:
    return TestResult("01_indexing", "indexing.2", "AddBiases2d.Shapes/31x33", "t", "gpu", 1,
                      status, "failed", output)


class WrongMaps(unittest.TestCase):
    def test_the_printed_map_is_read_back(self) -> None:
        self.assertEqual(wrong_maps.maps_in(OUTPUT), [["................+"] * 3])
        self.assertEqual(wrong_maps.maps_in("no map here\n"), [])

    def test_a_map_larger_than_the_kit_prints_is_cut_to_its_size(self) -> None:
        huge = OUTPUT.replace("................+", "#" * 100000) + "    ####\n" * 100
        for rows in wrong_maps.maps_in(huge):
            self.assertLessEqual(len(rows), wrong_maps.MAX_ROWS)
            self.assertLessEqual(max(map(len, rows)), wrong_maps.MAX_COLS)

    def test_each_cell_is_a_square_of_its_colour(self) -> None:
        width, height, raw = decode(wrong_maps.png([".#", "+."]))
        px = wrong_maps.CELL_PX
        self.assertEqual((width, height), (2 * px, 2 * px))
        stride = 1 + 3 * width

        def pixel(x: int, y: int) -> tuple[int, ...]:
            at = y * stride + 1 + 3 * x
            return tuple(raw[at:at + 3])

        self.assertEqual(pixel(1, 1), wrong_maps.COLOURS["."])
        self.assertEqual(pixel(px + 1, 1), wrong_maps.COLOURS["#"])
        self.assertEqual(pixel(1, px + 1), wrong_maps.COLOURS["+"])

    def test_reports_hold_a_png_per_map_of_a_failed_test_only(self) -> None:
        run = RunResult(7, "student", {}, "now", [LabResult(
            "01_indexing", "Thread indexing", "student", {"indexing.2": "2D"},
            [failed(OUTPUT), failed(OUTPUT, Status.PASSED)])])
        with tempfile.TemporaryDirectory() as tmp:
            stale = Path(tmp) / "maps" / "old.png"
            stale.parent.mkdir()
            stale.write_bytes(b"x")
            paths = reports.write_reports(run, Path(tmp))
            maps = sorted(p.name for p in (Path(tmp) / "maps").iterdir())
            self.assertEqual(maps, ["01_indexing_AddBiases2d_Shapes_31x33.png"])
            self.assertIn(Path(tmp) / "maps" / maps[0], paths)
            width, height, _ = decode((Path(tmp) / "maps" / maps[0]).read_bytes())
            self.assertEqual((width, height), (17 * wrong_maps.CELL_PX, 3 * wrong_maps.CELL_PX))


if __name__ == "__main__":
    unittest.main()
