#!/usr/bin/env python3
"""Draw the handouts' figures as SVG files: `make_figures.py OUT_DIR [DATA_DIR]`.

Every figure is computed here from the numbers it shows (no hand-drawn picture, no third-party
package): the docs build runs this script (docs/figures/figures.cmake) and Doxygen copies the
files named by the handouts' `\\image html NAME.svg` into the site (IMAGE_PATH).

The measured figures (MEASURED) plot what a GPU really did: DATA_DIR (docs/figures/data/) holds
<gpu>_<set>.csv files written by `python3 docs/figures/measure.py` on each GPU (its docstring
lists the sets and their columns; a file's first line, a '#' comment, says when, on which GPU and
with which benchmark), and each figure shows every GPU it finds. A measured figure is drawn only
from such files, never from made-up numbers, so a handout does not name it directly: it includes
the fragment NAME.md written next to the figure (`\\include{doc} lab03_stride.md`, EXAMPLE_PATH),
which shows the figure and where its numbers come from, and is empty while the set has no file.

One colour means one thing in every figure: blue = working thread / used data, grey = idle,
orange and purple = a second and third category (path B, an edge, a phase), red = what the
figure warns about (a conflict, wasted bytes).
"""

import csv
import math
import os
import statistics
import sys
from xml.sax.saxutils import escape

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
BLUE = "#4c78a8"
LIGHT_BLUE = "#9ecae9"
ORANGE = "#f58518"
PURPLE = "#b279a2"
GREEN = "#54a24b"
RED = "#e45756"
GREY = "#d9d9d9"
DARK = "#333333"
WHITE = "#ffffff"
PHASES = [BLUE, ORANGE, GREEN, PURPLE]
TEXT_SCALE = 1.2  # small text (below 18) is drawn this much larger: see Svg.text


class Svg:
    """A tiny SVG writer: shapes and text in user units (1 unit = 1 px at 100%)."""

    def __init__(self, width, height, title):
        self.width, self.height = width, height
        self.items = []
        self.title = title

    def rect(self, x, y, w, h, fill, stroke=None, sw=1, dash=None, opacity=None):
        attrs = f'x="{x:.2f}" y="{y:.2f}" width="{w:.2f}" height="{h:.2f}" fill="{fill}"'
        if stroke:
            attrs += f' stroke="{stroke}" stroke-width="{sw}"'
        if dash:
            attrs += f' stroke-dasharray="{dash}"'
        if opacity is not None:
            attrs += f' fill-opacity="{opacity}"'
        self.items.append(f"<rect {attrs}/>")

    def line(self, x1, y1, x2, y2, stroke=DARK, sw=1, dash=None, arrow=False):
        attrs = f'x1="{x1:.2f}" y1="{y1:.2f}" x2="{x2:.2f}" y2="{y2:.2f}" stroke="{stroke}" stroke-width="{sw}"'
        if dash:
            attrs += f' stroke-dasharray="{dash}"'
        if arrow:
            attrs += ' marker-end="url(#arrow)"'
        self.items.append(f"<line {attrs}/>")

    def text(self, x, y, s, size=14, anchor="start", fill=DARK, weight="normal", rotate=None):
        # The site shows a figure at the width of the text column (about 650 px for a 1000-unit
        # figure): small text is drawn larger than its nominal size so that it stays readable.
        if size < 18:
            size = round(size * TEXT_SCALE, 1)
        attrs = (f'x="{x:.2f}" y="{y:.2f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"'
                 f' font-weight="{weight}"')
        if rotate is not None:
            attrs += f' transform="rotate({rotate} {x:.2f} {y:.2f})"'
        self.items.append(f"<text {attrs}>{escape(str(s))}</text>")

    def heading(self, s):
        self.text(self.width / 2, 26, s, size=18, anchor="middle", weight="bold")

    def legend(self, x, y, entries, size=14):
        for fill, label in entries:
            self.rect(x, y - 12, 16, 16, fill, stroke=DARK, sw=0.5)
            self.text(x + 22, y + 1, label, size=size)
            x += 22 + 0.55 * size * TEXT_SCALE * len(label) + 30

    def save(self, path):
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
                f'viewBox="0 0 {self.width} {self.height}" font-family="{FONT}">\n'
                f"<title>{escape(self.title)}</title>\n"
                '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
                'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
                f'fill="{DARK}"/></marker></defs>\n'
                f'<rect x="0" y="0" width="{self.width}" height="{self.height}" fill="{WHITE}"/>\n')
        with open(path, "w", encoding="utf-8") as f:
            f.write(head + "\n".join(self.items) + "\n</svg>\n")


def ceil_div(a, b):
    return (a + b - 1) // b


# ---------------------------------------------------------------- lab 01

def lab01_grid_1d(path):
    n, block = 1000, 256
    blocks = ceil_div(n, block)
    idle = blocks * block - n
    s = Svg(1000, 400, "Lab 01: a 1D grid over an array")
    s.heading(f"n = {n}, blockDim.x = {block}: ceil_div({n}, {block}) = {blocks} blocks, "
              f"{blocks * block} threads, {idle} idle")
    x0, y0, scale = 40, 80, 920 / (blocks * block)
    for b in range(blocks):
        bx = x0 + b * block * scale
        first, last = b * block, (b + 1) * block - 1
        active = max(0, min(block, n - first))
        s.rect(bx, y0, active * scale, 60, BLUE)
        if active < block:
            s.rect(bx + active * scale, y0, (block - active) * scale, 60, GREY)
        for w in range(1, block // 32):  # warp boundaries
            s.line(bx + w * 32 * scale, y0, bx + w * 32 * scale, y0 + 60, stroke=WHITE, sw=1)
        s.rect(bx, y0, block * scale, 60, "none", stroke=DARK, sw=2)
        s.text(bx + block * scale / 2, y0 - 10, f"blockIdx.x = {b}", anchor="middle", weight="bold")
        s.text(bx + block * scale / 2, y0 + 36, f"i = {first} .. {last}", anchor="middle",
               fill=WHITE, size=15)
    # the array under the threads
    ay = y0 + 90
    s.rect(x0, ay, n * scale, 26, LIGHT_BLUE, stroke=DARK)
    s.text(x0 + n * scale / 2, ay + 18, f"the array: x[0] .. x[{n - 1}]", anchor="middle")
    s.text(x0 + n * scale + 4, ay + 18, "end", size=13)
    s.line(x0 + n * scale, ay - 35, x0 + n * scale, ay + 30, stroke=RED, sw=2, dash="5,3")
    # zoom on the last warp of the last block
    lw_first = (blocks * block) - 32
    zy, cw = 280, 28
    zx = 40 + (920 - 32 * cw) / 2
    s.text(500, zy - 30, f"zoom: the last warp of block {blocks - 1} (threads {lw_first} .. "
           f"{blocks * block - 1}): {n - lw_first} lanes work, {idle} fail the guard i < n",
           anchor="middle", size=15)
    for lane in range(32):
        i = lw_first + lane
        s.rect(zx + lane * cw, zy, cw - 2, 34, BLUE if i < n else GREY)
        s.text(zx + lane * cw + (cw - 2) / 2, zy + 22, str(lane), anchor="middle", size=12,
               fill=WHITE if i < n else DARK)
    s.text(zx - 6, zy + 22, "lane", anchor="end", size=13)
    zsrc = x0 + lw_first * scale
    s.line(zsrc, y0 + 60, zx, zy, stroke=DARK, dash="3,3")
    s.line(x0 + blocks * block * scale, y0 + 60, zx + 32 * cw - 2, zy, stroke=DARK, dash="3,3")
    s.legend(300, 370, [(BLUE, "thread with an element"), (GREY, "idle thread (i >= n)")])
    s.save(path)


def lab01_block_warps(path):
    bx, by = 16, 4
    s = Svg(1000, 330, "Lab 01: a 16 x 4 block cut into warps")
    s.heading("blockDim = (16, 4): linear = x + 16 y, warp = linear / 32, lane = linear % 32")
    cw, ch, x0, y0 = 44, 44, 100, 80
    for x in range(bx):
        s.text(x0 + x * cw + cw / 2, y0 - 10, str(x), anchor="middle", size=13)
    s.text(x0 - 40, y0 - 10, "x:", size=13)
    for y in range(by):
        s.text(x0 - 12, y0 + y * ch + ch / 2 + 5, f"y = {y}", anchor="end", size=14)
        for x in range(bx):
            linear = x + y * bx
            warp, lane = divmod(linear, 32)
            fill = BLUE if warp == 0 else ORANGE
            hl = (x, y) == (5, 1)
            s.rect(x0 + x * cw, y0 + y * ch, cw - 3, ch - 3, fill,
                   stroke=RED if hl else None, sw=4 if hl else 1)
            s.text(x0 + x * cw + (cw - 3) / 2, y0 + y * ch + ch / 2 + 4, str(lane),
                   anchor="middle", fill=WHITE, size=14, weight="bold" if hl else "normal")
    for warp in range(2):
        top = y0 + warp * 2 * ch
        xr = x0 + bx * cw + 8
        s.line(xr, top + 2, xr + 10, top + 2)
        s.line(xr + 10, top + 2, xr + 10, top + 2 * ch - 5)
        s.line(xr, top + 2 * ch - 5, xr + 10, top + 2 * ch - 5)
        s.text(xr + 16, top + ch + 4, f"warp {warp}", size=15, weight="bold",
               fill=BLUE if warp == 0 else ORANGE)
    s.text(500, y0 + by * ch + 30, "numbers are lanes; thread (5, 1, 0) (red): linear 5 + 1 x 16 = 21 "
           "-> warp 0, lane 21 (not threadIdx.x % 32 = 5)", anchor="middle", size=14)
    s.legend(320, y0 + by * ch + 62, [(BLUE, "warp 0"), (ORANGE, "warp 1")])
    s.save(path)


# ---------------------------------------------------------------- lab 02

def lab02_edge_guard(path):
    rows, cols, bw, bh = 40, 70, 32, 16
    gx, gy = ceil_div(cols, bw), ceil_div(rows, bh)
    tw, th = gx * bw, gy * bh
    right = (tw - cols) * rows
    bottom = (th - rows) * cols
    corner = (tw - cols) * (th - rows)
    c = 8
    x0, y0 = 70, 80
    s = Svg(x0 + tw * c + 310, y0 + th * c + 110, "Lab 02: the 2D edge guard")
    s.heading(f"{rows} x {cols} array (rows x cols), blocks of {bw} x {bh}: grid ({gx}, {gy}) = "
              f"{tw} x {th} threads, {tw * th - rows * cols} idle")
    for y in range(th):
        for x in range(tw):
            if x < cols and y < rows:
                fill = BLUE
            elif x >= cols and y >= rows:
                fill = RED
            elif x >= cols:
                fill = ORANGE
            else:
                fill = PURPLE
            s.rect(x0 + x * c, y0 + y * c, c - 1, c - 1, fill)
    for i in range(gx + 1):
        s.line(x0 + i * bw * c - 0.5, y0 - 0.5, x0 + i * bw * c - 0.5, y0 + th * c, sw=2.5)
    for j in range(gy + 1):
        s.line(x0 - 0.5, y0 + j * bh * c - 0.5, x0 + tw * c, y0 + j * bh * c - 0.5, sw=2.5)
    for i in range(gx):
        s.text(x0 + (i + 0.5) * bw * c, y0 - 8, f"blockIdx.x = {i}", anchor="middle", size=13)
    for j in range(gy):
        s.text(x0 - 8, y0 + (j + 0.5) * bh * c, f"blockIdx.y = {j}", anchor="middle", size=13,
               rotate=-90)
    # edges of the array
    s.line(x0 + cols * c - 0.5, y0 - 4, x0 + cols * c - 0.5, y0 + th * c + 4, stroke=WHITE, sw=2,
           dash="4,3")
    s.line(x0 - 4, y0 + rows * c - 0.5, x0 + tw * c + 4, y0 + rows * c - 0.5, stroke=WHITE, sw=2,
           dash="4,3")
    s.text(x0 + cols * c, y0 + th * c + 18, f"x = cols = {cols}", anchor="middle", size=13)
    s.text(x0 + tw * c + 8, y0 + rows * c + 5, f"y = rows = {rows}", size=13)
    lx, ly = x0 + tw * c + 30, y0 + 20
    for fill, label, count in [
            (BLUE, "works: y < rows && x < cols", rows * cols),
            (ORANGE, "right overhang: x >= cols", right),
            (PURPLE, "bottom overhang: y >= rows", bottom),
            (RED, "corner: both", corner)]:
        s.rect(lx - 22, ly - 12, 16, 16, fill)
        s.text(lx, ly, label, size=13)
        s.text(lx, ly + 17, f"{count} threads", size=13, weight="bold")
        ly += 48
    s.text(lx - 22, ly + 10, "thick lines: block edges", size=13)
    s.text(x0 + tw * c / 2, y0 + th * c + 50,
           f"each edge block keeps some work: block (2, y) has {cols - 2 * bw} working columns, "
           f"block (x, 2) {rows - 2 * bh} working rows", anchor="middle", size=14)
    s.text(x0 + tw * c / 2, y0 + th * c + 75,
           "testing only one axis lets the orange (or the purple) threads write out of place",
           anchor="middle", size=14)
    s.save(path)


# ---------------------------------------------------------------- lab 03

def sectors_for(stride, base=4096):
    return sorted({(base + 4 * lane * stride) // 32 for lane in range(32)})


def lab03_sectors(path):
    s = Svg(1000, 470, "Lab 03: a warp's request in 32-byte sectors")
    s.heading("a warp loads x[L * stride] (4-byte floats, x at byte 4096): sectors per request")
    base = 4096
    first_sector = base // 32
    nsec = 128
    width = 900
    sw = width / nsec
    x0 = 60
    for panel, stride in enumerate([1, 32]):
        top = 70 + panel * 200
        secs = sectors_for(stride, base)
        used = 32 * 4
        s.text(x0, top, f"stride {stride}: {len(secs)} sectors = {len(secs) * 32} bytes moved for "
               f"{used} bytes used" + (" (all used)" if len(secs) * 32 == used else
                                       f" ({used / (len(secs) * 32):.3g} used)"),
               size=15, weight="bold", fill=BLUE if stride == 1 else RED)
        # lanes
        lw = width / 32
        ly = top + 14
        for lane in range(32):
            s.rect(x0 + lane * lw, ly, lw - 2, 22, BLUE)
            if lane % 4 == 0 or lane == 31:
                s.text(x0 + lane * lw + (lw - 2) / 2, ly + 16, str(lane), anchor="middle",
                       size=11, fill=WHITE)
        s.text(x0 - 4, ly + 16, "lane", size=12, anchor="end")
        # memory sectors
        my = top + 110
        for i in range(nsec):
            sec = first_sector + i
            hit = sec in secs
            s.rect(x0 + i * sw, my, sw - 1, 26,
                   (BLUE if stride == 1 else RED) if hit else GREY)
        for i in range(0, nsec + 1, 4):  # 128-byte lines
            s.line(x0 + i * sw - 0.5, my - 4, x0 + i * sw - 0.5, my + 30, sw=1)
        s.text(x0 - 4, my + 18, "mem", size=12, anchor="end")
        s.text(x0, my + 46, f"sector {first_sector} (byte {base})", size=12)
        s.text(x0 + width, my + 46, f"sector {first_sector + nsec - 1} (byte {base + 32 * nsec - 1})",
               size=12, anchor="end")
        for lane in range(32):
            sec = (base + 4 * lane * stride) // 32
            s.line(x0 + lane * lw + (lw - 2) / 2, ly + 22, x0 + (sec - first_sector + 0.5) * sw, my,
                   stroke=DARK, sw=0.7)
    s.legend(70, 455, [(GREY, "32-byte sector not touched"), (BLUE, "sector fetched, fully used"),
                        (RED, "sector fetched, 4 of 32 bytes used")], size=13)
    s.text(960, 50, "tick marks: 128-byte lines (4 sectors)", size=12, anchor="end")
    s.save(path)


def bank_of(row, col, pitch):
    return (row * pitch + col) % 32


def lab03_banks(path):
    c = 12
    s = Svg(1000, 560, "Lab 03: a 32 x 32 shared tile across the 32 banks")
    s.heading("reading column 0 of a shared tile: 32-way bank conflict vs conflict-free")
    for panel, pitch in enumerate([32, 33]):
        x0 = 85 + panel * 490
        y0 = 100
        banks = [bank_of(r, 0, pitch) for r in range(32)]
        passes = max(banks.count(b) for b in set(banks))
        title = (f"tile[32][{pitch}]: column 0 in {len(set(banks))} bank"
                 f"{'s' if len(set(banks)) > 1 else ''} -> {passes} pass{'es' if passes > 1 else ''}")
        s.text(x0 + 16 * c, y0 - 44, title, anchor="middle", size=14, weight="bold",
               fill=RED if passes > 1 else BLUE)
        for b in range(0, 32, 4):
            s.text(x0 + b * c + c / 2, y0 - 8, str(b), anchor="middle", size=11)
        s.text(x0 + 16 * c, y0 - 20, "bank", anchor="middle", size=12)
        for r in range(32):
            if r % 4 == 0:
                s.text(x0 - 6, y0 + r * c + c - 2, f"row {r}", anchor="end", size=11)
            for col in range(32):
                b = bank_of(r, col, pitch)
                fill = (RED if passes > 1 else BLUE) if col == 0 else GREY
                s.rect(x0 + b * c, y0 + r * c, c - 1, c - 1, fill)
        s.text(x0 + 16 * c, y0 + 32 * c + 24,
               "element [r][c] in bank (32 r + c) % 32 = c" if pitch == 32 else
               "element [r][c] in bank (33 r + c) % 32 = (r + c) % 32", anchor="middle", size=13)
    s.legend(90, 530, [(GREY, "other elements (padding left out)"),
                        (RED, "column 0, all in bank 0"), (BLUE, "column 0, one per bank")], size=13)
    s.save(path)


# ---------------------------------------------------------------- lab 04

def lab04_phases(path):
    m, n, k, t = 96, 96, 70, 32
    phases = ceil_div(k, t)
    u = 3
    s = Svg(1000, 700, "Lab 04: a block's tiles walking along k")
    s.heading(f"C = A B, k = {k}, T = {t}: the block computing one {t} x {t} tile of C "
              f"walks k in {phases} phases")
    # layout: B above C, A left of C; the gaps leave room for the zero padding of the last phase
    ax, ay = 60, 60 + k * u + 100
    bx, by = ax + k * u + 100, 60
    cx, cy = bx, ay
    # outlines
    s.rect(ax, ay, k * u, m * u, "#f4f4f4", stroke=DARK, sw=1.5)
    s.rect(bx, by, n * u, k * u, "#f4f4f4", stroke=DARK, sw=1.5)
    s.rect(cx, cy, n * u, m * u, "#f4f4f4", stroke=DARK, sw=1.5)
    s.text(ax + k * u / 2, ay + m * u + 22, f"A ({m} x {k})", anchor="middle", size=15, weight="bold")
    s.text(bx + n * u + 10, by + k * u / 2, f"B ({k} x {n})", size=15, weight="bold")
    s.text(cx + n * u / 2, cy + m * u + 22, f"C ({m} x {n})", anchor="middle", size=15, weight="bold")
    r0, c0 = t, t  # the block's tile
    tx0, ty0 = 30, 90
    for p in range(phases):
        w = min(t, k - p * t)
        col = PHASES[p % len(PHASES)]
        s.rect(ax + p * t * u, ay + r0 * u, w * u, t * u, col, stroke=DARK)
        s.text(ax + (p * t + w / 2) * u, ay + (r0 + t / 2) * u + 5, f"A{p}", anchor="middle",
               fill=WHITE, size=14, weight="bold")
        s.rect(bx + c0 * u, by + p * t * u, t * u, w * u, col, stroke=DARK)
        s.text(bx + (c0 + t / 2) * u, by + (p * t + w / 2) * u + 5, f"B{p}", anchor="middle",
               fill=WHITE, size=14, weight="bold")
        if w < t:  # the padded part of the last phase
            s.rect(ax + (p * t + w) * u, ay + r0 * u, (t - w) * u, t * u, "none", stroke=col,
                   sw=2, dash="5,3")
            s.rect(bx + c0 * u, by + (p * t + w) * u, t * u, (t - w) * u, "none", stroke=col,
                   sw=2, dash="5,3")
    s.rect(cx + c0 * u, cy + r0 * u, t * u, t * u, RED, stroke=DARK)
    s.text(cx + (c0 + t / 2) * u, cy + (r0 + t / 2) * u + 5, "C tile", anchor="middle",
           fill=WHITE, size=13, weight="bold")
    for p in range(phases):
        lo, hi = p * t, min(k, (p + 1) * t) - 1
        s.text(tx0, ty0 + p * 26, f"phase {p}: k = {lo} .. {hi}" + (
            f" ({hi - lo + 1} wide," if hi - lo + 1 < t else ""),
            size=14, fill=PHASES[p], weight="bold")
        if hi - lo + 1 < t:
            s.text(tx0 + 20, ty0 + p * 26 + 20, f"zero-padded to {t})", size=14, fill=PHASES[p],
                   weight="bold")
    ty0 += 20
    s.text(tx0, ty0 + phases * 26 + 10,
           "C tile = " + " + ".join(f"A{p} B{p}" for p in range(phases)), size=15)
    s.text(tx0, ty0 + phases * 26 + 36, "each phase: copy A_p and B_p to shared", size=13)
    s.text(tx0, ty0 + phases * 26 + 54, "memory, barrier, T products per thread,", size=13)
    s.text(tx0, ty0 + phases * 26 + 72, "barrier; dashed: the zeros of the padding", size=13)
    s.save(path)


def lab04_reuse(path):
    """Naive: every thread fetches its own row of A and column of B. Tiled: a block of T x T
    threads fetches T rows of A and T columns of B once, and each value serves T threads."""
    s = Svg(1000, 570, "Lab 04: why tiling reuses data")
    s.heading("Who fetches what from global memory")
    u, n, t = 5, 32, 8  # matrices of n x n cells of u units; the tile is t x t cells
    panels = (
        (60, "Naive: one thread alone",
         ("thread (r, c) fetches row r of A and column c", "of B itself: 2 loads per FMA, and every value",
          "is fetched again by each thread that needs it")),
        (540, f"Tiled: a block of T x T threads (T = {t})",
         ("the block fetches T rows of A and T columns of B", "once: 2 / T loads per FMA, each value serving",
          "the T threads of its row or column")))
    for panel, (x0, title, notes) in enumerate(panels):
        y0 = 90
        s.text(x0, y0 - 30, title, size=16, weight="bold")
        ax, ay = x0, y0 + n * u + 20     # A below-left, B above-right, C below-right
        bx, by = x0 + n * u + 20, y0
        cx, cy = bx, ay
        for (x, y, name) in ((ax, ay, "A"), (bx, by, "B"), (cx, cy, "C")):
            s.rect(x, y, n * u, n * u, "#f4f4f4", stroke=DARK, sw=1.2)
            s.text(x + n * u / 2, y + n * u + 18, name, anchor="middle", size=14, weight="bold")
        if panel == 0:
            r, c = 12, 20
            s.rect(ax, ay + r * u, n * u, u, BLUE)
            s.rect(bx + c * u, by, u, n * u, BLUE)
            s.rect(cx + c * u, cy + r * u, u, u, RED)
            s.line(ax + n * u + 4, ay + r * u + u / 2, cx + c * u - 2, cy + r * u + u / 2,
                   stroke=BLUE, sw=1.5, arrow=True)
            s.line(bx + c * u + u / 2, by + n * u + 4, cx + c * u + u / 2, cy + r * u - 2,
                   stroke=BLUE, sw=1.5, arrow=True)
        else:
            r0, c0 = 8, 16
            s.rect(ax, ay + r0 * u, n * u, t * u, BLUE, opacity=0.85)
            s.rect(bx + c0 * u, by, t * u, n * u, BLUE, opacity=0.85)
            s.rect(cx + c0 * u, cy + r0 * u, t * u, t * u, RED)
            s.line(ax + n * u + 4, ay + (r0 + t / 2) * u, cx + c0 * u - 2, cy + (r0 + t / 2) * u,
                   stroke=BLUE, sw=2.5, arrow=True)
            s.line(bx + (c0 + t / 2) * u, by + n * u + 4, bx + (c0 + t / 2) * u, cy + r0 * u - 2,
                   stroke=BLUE, sw=2.5, arrow=True)
        for i, line in enumerate(notes):
            s.text(x0, cy + n * u + 50 + 20 * i, line, size=12)
    s.legend(60, 555, [(BLUE, "fetched from global memory"), (RED, "what it computes (C)")], size=12)
    s.save(path)


def lab04_register_blocking(path):
    bm, bk, tm = 64, 8, 8
    threads = bm // tm
    u = 5
    s = Svg(1000, 530, "Lab 04: register blocking")
    s.heading(f"a {bm} x {bm} tile of C, {threads} x {threads} = {threads * threads} threads, "
              f"each owning {tm} x {tm} outputs")
    ax, ay = 60, 150
    bx, by = ax + bk * 3 * u + 40, 80
    cx, cy = bx, ay
    ty, tx, x = 2, 5, 3  # the thread shown and the x of the phase
    # A tile (bm x bk)
    aw = 3 * u  # A's k-columns drawn wider
    for r in range(bm):
        for kk in range(bk):
            hit = kk == x and ty * tm <= r < (ty + 1) * tm
            s.rect(ax + kk * aw, ay + r * u, aw - 0.5, u - 0.5, ORANGE if hit else GREY)
    s.text(ax + bk * aw / 2, ay - 30, "A tile", anchor="middle", size=14, weight="bold")
    s.text(ax + bk * aw / 2, ay - 10, f"({bm} x {bk})", anchor="middle", size=14, weight="bold")
    # B tile (bk x bm)
    bh = 3 * u
    for kk in range(bk):
        for c in range(bm):
            hit = kk == x and tx * tm <= c < (tx + 1) * tm
            s.rect(bx + c * u, by + kk * bh, u - 0.5, bh - 0.5, GREEN if hit else GREY)
    s.text(bx + bm * u + 10, by + bk * bh / 2 + 5, f"B tile ({bk} x {bm})", size=14, weight="bold")
    # C tile
    for i in range(threads):
        for j in range(threads):
            mine = (i, j) == (ty, tx)
            s.rect(cx + j * tm * u, cy + i * tm * u, tm * u - 1, tm * u - 1,
                   BLUE if mine else LIGHT_BLUE)
    s.text(cx + bm * u / 2, cy + bm * u + 20, f"C tile ({bm} x {bm}); each square: one thread's "
           f"acc[{tm}][{tm}]", anchor="middle", size=14, weight="bold")
    s.line(ax + (x + 0.5) * aw, ay + (ty * tm + tm / 2) * u, cx + tx * tm * u,
           cy + (ty * tm + tm / 2) * u, stroke=ORANGE, sw=2, arrow=True, dash="6,3")
    s.line(bx + (tx * tm + tm / 2) * u, by + (x + 0.5) * bh, bx + (tx * tm + tm / 2) * u,
           cy + ty * tm * u, stroke=GREEN, sw=2, arrow=True, dash="6,3")
    tx0 = cx + bm * u + 30
    lines = [f"thread (ty, tx) = ({ty}, {tx}), step x = {x}:",
             f"reads {tm} values of A's column x (orange)",
             f"and {tm} values of B's row x (green)",
             "into registers a[i], b[j], then",
             "acc[i][j] += a[i] * b[j] for all i, j:",
             f"{tm * tm} FMAs for {2 * tm} shared reads",
             f"(one output per thread: 1 FMA for 2 reads)"]
    for i, line in enumerate(lines):
        s.text(tx0, cy + 30 + i * 22, line, size=14, weight="bold" if i in (0, 5) else "normal")
    s.save(path)


# ---------------------------------------------------------------- lab 05

def lab05_branch_lanes(path):
    s = Svg(1000, 330, "Lab 05: two branches on the thread index")
    s.heading("which path each lane takes: per lane vs per warp (threads 0 .. 63, two warps)")
    lw, x0 = 12, 200
    for panel, (label, fn) in enumerate([("tid % 2 == 0", lambda t: t % 2 == 0),
                                         ("(tid / 32) % 2 == 0", lambda t: (t // 32) % 2 == 0)]):
        y = 80 + panel * 110
        s.text(x0 - 10, y + 18, label, anchor="end", size=14, weight="bold")
        for t in range(64):
            a = fn(t)
            gap = 10 if t >= 32 else 0
            s.rect(x0 + t * lw + gap, y, lw - 2, 26, BLUE if a else ORANGE)
            s.text(x0 + t * lw + gap + (lw - 2) / 2, y + 18, "A" if a else "B", anchor="middle",
                   size=9, fill=WHITE)
        for w in range(2):
            lanes = [fn(t) for t in range(32 * w, 32 * w + 32)]
            paths = len(set(lanes))
            s.text(x0 + (w * 32 + 16) * lw + 10 * w, y + 48,
                   f"warp {w}: {paths} path{'s' if paths > 1 else ''}" +
                   (": A then B, 16 lanes idle in each" if paths > 1 else
                    f": {'A' if lanes[0] else 'B'} only, no lane idle"),
                   anchor="middle", size=13, fill=RED if paths > 1 else DARK)
    s.text(500, 300, "both branches send half the threads down each path; only the second keeps "
           "each warp's lanes together", anchor="middle", size=14)
    s.legend(380, 270, [(BLUE, "path A"), (ORANGE, "path B")])
    s.save(path)


def lab05_reduction_tree(path):
    n = 16
    cw, x0 = 50, 80
    s = Svg(1060, 470, "Lab 05: sequential addressing")
    s.heading(f"sequential addressing on {n} values: in round s, thread t < s adds partial[t + s]")
    rounds = []
    sv = n // 2
    while sv >= 1:
        rounds.append(sv)
        sv //= 2
    rh = 80
    y = 60
    for r, sv in enumerate([None] + rounds):
        live = n if sv is None else sv
        for i in range(n):
            fill = BLUE if i < live else "#f2f2f2"
            s.rect(x0 + i * cw, y + r * rh, cw - 4, 30, fill, stroke=None if i < live else GREY)
            if i < live:
                s.text(x0 + i * cw + (cw - 4) / 2, y + r * rh + 20, f"[{i}]", anchor="middle",
                       size=12, fill=WHITE)
        label = ("input" if sv is None else f"s = {sv}: threads 0 .. {sv - 1}" if sv > 1 else
                 "s = 1: thread 0")
        s.text(x0 + n * cw + 6, y + r * rh + 20, label, size=13)
        if sv is not None:
            for t in range(sv):
                s.line(x0 + (t + sv) * cw + (cw - 4) / 2, y + (r - 1) * rh + 30,
                       x0 + t * cw + (cw - 4) / 2 + 6, y + r * rh - 2, stroke=ORANGE, sw=1.5,
                       arrow=True)
                s.line(x0 + t * cw + (cw - 4) / 2, y + (r - 1) * rh + 30,
                       x0 + t * cw + (cw - 4) / 2, y + r * rh - 2, stroke=BLUE, sw=1.5, arrow=True)
    s.text(530, y + len(rounds) * rh + 60,
           "the active threads stay contiguous (0 .. s-1): with 256 threads a warp is either all "
           "active or all idle", anchor="middle", size=14)
    s.text(530, y + len(rounds) * rh + 82,
           "until s < 32, so only the last 5 rounds diverge (in one warp each)", anchor="middle",
           size=14)
    s.save(path)


# ---------------------------------------------------------------- lab 06

# The H100 (sm_90) as CUDA's occupancy calculator (cuda_occupancy.h) and the kit's model
# (solutions/06_occupancy/occupancy_model.cpp) describe it. Assumptions of this figure:
#   - warps: 64 warp slots (2048 threads); a block takes ceil(threads / 32) whole warps;
#   - blocks: at most 32 resident blocks;
#   - registers: a warp is charged registers_per_thread * 32 rounded up to 256; the 65536
#     registers are four partitions of 16384 and a warp lives in one, so the SM holds
#     4 * floor(16384 / per_warp) warps; a block whose warps, rounded up to a multiple of 4,
#     need more than 65536 registers cannot launch;
#   - shared memory: the largest carveout, 228 KiB per SM; a block is charged its shared memory
#     plus 1 KiB the driver reserves, rounded up to 128 bytes.
H100 = dict(warps=64, blocks=32, regs=65536, partitions=4, reg_unit=256,
            smem=228 * 1024, smem_reserved=1024, smem_unit=128)


def occupancy(block, regs, smem, dev=H100):
    """Blocks per SM and the limiting resource(s) of a kernel at one block size."""
    wpb = ceil_div(block, 32)
    limits = {"warps": dev["warps"] // wpb, "blocks": dev["blocks"]}
    per_warp = ceil_div(regs * 32, dev["reg_unit"]) * dev["reg_unit"]
    if regs == 0:
        limits["registers"] = math.inf
    elif ceil_div(wpb, dev["partitions"]) * dev["partitions"] * per_warp > dev["regs"]:
        limits["registers"] = 0
    else:
        per_part = dev["regs"] // dev["partitions"] // per_warp
        limits["registers"] = per_part * dev["partitions"] // wpb
    if smem == 0:
        limits["shared memory"] = math.inf
    else:
        per_block = ceil_div(smem + dev["smem_reserved"], dev["smem_unit"]) * dev["smem_unit"]
        limits["shared memory"] = dev["smem"] // per_block
    resident = min(limits.values())
    limiters = [k for k, v in limits.items() if v == resident]
    return resident, resident * wpb / dev["warps"], limiters


LIMITER_COLOURS = {"warps": BLUE, "registers": ORANGE, "shared memory": PURPLE, "blocks": GREEN}


def lab06_occupancy(path, regs=40, smem=20 * 1024):
    sizes = list(range(32, 1025, 32))
    s = Svg(1000, 500, "Lab 06: occupancy vs block size")
    s.heading(f"occupancy vs block size on an H100 SM: {regs} registers/thread, "
              f"{smem // 1024} KiB shared memory/block")
    x0, y0, pw, ph = 95, 60, 870, 300
    for i in range(0, 11, 2):
        v = i / 10
        y = y0 + ph - v * ph
        s.line(x0, y, x0 + pw, y, stroke="#e6e6e6")
        s.text(x0 - 8, y + 5, f"{v:.1f}", anchor="end", size=13)
    s.text(30, y0 + ph / 2, "occupancy (resident warps / 64)", anchor="middle", size=14, rotate=-90)
    slot = pw / len(sizes)
    for i, b in enumerate(sizes):
        blocks, occ, limiters = occupancy(b, regs, smem)
        bh = occ * ph
        bxx = x0 + i * slot + 2
        parts = len(limiters)
        for j, lim in enumerate(limiters):  # a tie: the bar split between the limiters
            s.rect(bxx, y0 + ph - bh + j * bh / parts, slot - 4, bh / parts, LIMITER_COLOURS[lim])
        s.text(bxx + (slot - 4) / 2, y0 + ph - bh - 5, str(blocks), anchor="middle", size=11)
        if b % 128 == 0 or b == 32:
            s.text(bxx + (slot - 4) / 2, y0 + ph + 18, str(b), anchor="middle", size=13)
    s.line(x0, y0 + ph, x0 + pw, y0 + ph, sw=1.5)
    s.line(x0, y0, x0, y0 + ph, sw=1.5)
    s.text(x0 + pw / 2, y0 + ph + 40, "threads per block (numbers above the bars: resident blocks)",
           anchor="middle", size=14)
    seen = {lim for b in sizes for lim in occupancy(b, regs, smem)[2]}
    s.legend(170, y0 + ph + 72, [(c, f"limited by {k}") for k, c in LIMITER_COLOURS.items()
                                 if k in seen], size=13)
    s.text(500, y0 + ph + 102, "model: 64 warp slots, 32 blocks, 65536 registers in 4 partitions "
           "(a warp takes a multiple of 256),", anchor="middle", size=12, fill="#555555")
    s.text(500, y0 + ph + 120, "228 KiB shared memory (each block: +1 KiB reserved, rounded up "
           "to 128 B)", anchor="middle", size=12, fill="#555555")
    s.save(path)


# ---------------------------------------------------------------- lab 07

def lab07_timeline(path, chunks=4):
    s = Svg(1000, 470, "Lab 07: serial vs pipelined")
    s.heading(f"H2D copy, kernel, D2H copy of {chunks} chunks: one stream vs one stream per chunk")
    x0, pw = 150, 800
    total_t = 3.0
    unit = pw / total_t  # pixels per T (each stage of the whole data takes T)
    d = 1.0 / chunks     # one chunk's stage
    engines = ["H2D copy", "kernel", "D2H copy"]
    colours = [BLUE, ORANGE, GREEN, PURPLE]

    def panel(top, label, start_of):
        s.text(x0, top, label, size=15, weight="bold")
        end = 0.0
        for e, name in enumerate(engines):
            y = top + 14 + e * 40
            s.rect(x0, y, pw, 32, "#f6f6f6")
            s.text(x0 - 10, y + 21, name, anchor="end", size=14)
            for c in range(chunks):
                t0 = start_of(c, e)
                end = max(end, t0 + d)
                s.rect(x0 + t0 * unit, y + 1, d * unit - 2, 30, colours[c % len(colours)])
                s.text(x0 + (t0 + d / 2) * unit, y + 21, f"{'HKD'[e]}{c}", anchor="middle",
                       size=13, fill=WHITE, weight="bold")
        yb = top + 14 + 3 * 40
        s.line(x0 + end * unit, top + 8, x0 + end * unit, yb + 4, stroke=RED, sw=2, dash="5,3")
        s.text(x0 + end * unit + (6 if end < total_t else -6), yb + 4 if end < total_t else yb + 16,
               f"done at {end:g} T", size=14, fill=RED, weight="bold",
               anchor="start" if end < total_t else "end")
        return end

    panel(60, "serial: everything in one stream, chunk after chunk",
          lambda c, e: 3 * d * c + e * d)
    panel(250, f"pipelined: chunk c in stream c, the three engines overlap",
          lambda c, e: (c + e) * d)
    ya = 440
    s.line(x0, ya, x0 + pw, ya, sw=1.5)
    for i in range(0, 13):
        tt = i * 0.25
        s.line(x0 + tt * unit, ya, x0 + tt * unit, ya + (6 if i % 4 == 0 else 3))
        if i % 2 == 0:
            s.text(x0 + tt * unit, ya + 20, f"{tt:g} T", anchor="middle", size=12)
    s.text(x0 - 10, ya + 4, "time", anchor="end", size=13)
    s.legend(x0, 225, [(colours[c], f"chunk {c}") for c in range(chunks)], size=13)
    s.save(path)


FIGURES = {
    "lab01_grid_1d.svg": lab01_grid_1d,
    "lab01_block_warps.svg": lab01_block_warps,
    "lab02_edge_guard.svg": lab02_edge_guard,
    "lab03_sectors.svg": lab03_sectors,
    "lab03_banks.svg": lab03_banks,
    "lab04_reuse.svg": lab04_reuse,
    "lab04_phases.svg": lab04_phases,
    "lab04_register_blocking.svg": lab04_register_blocking,
    "lab05_branch_lanes.svg": lab05_branch_lanes,
    "lab05_reduction_tree.svg": lab05_reduction_tree,
    "lab06_occupancy.svg": lab06_occupancy,
    "lab07_timeline.svg": lab07_timeline,
}


# ---------------------------------------------------------------- measured

# The measured figures (see the top of the file): one bar, or one block of lanes, per GPU whose
# file of the figure's data set is found (h100_stride.csv, h200_stride.csv).

GPU_COLOURS = [BLUE, ORANGE, PURPLE, GREEN]  # the first GPU, the second, ...
NOTE = "#555555"


class Measured:
    """One GPU's file of a data set: its rows, and its first comment line (when, on what GPU,
    by which command: measure.py writes it)."""

    def __init__(self, path, gpu, label=None):
        self.gpu = gpu
        self._label = label
        self.file = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            lines = [line for line in f.read().splitlines() if line.strip()]
        notes = [line.lstrip("# ").strip() for line in lines if line.lstrip().startswith("#")]
        self.note = notes[0] if notes else ""
        self.rows = list(csv.DictReader(line for line in lines
                                        if not line.lstrip().startswith("#")))

    @property
    def label(self):
        return self._label or self.gpu.upper()

    @property
    def measured_on(self):
        """The note without its command: "measured 2026-11-24 on NVIDIA H100 80GB HBM3 (...)"."""
        return self.note.split(" by:")[0]


def load_measured(data_dir, name):
    """Every GPU's file of data set `name` (<gpu>_<name>.csv in data_dir), in file-name order."""
    found = []
    if os.path.isdir(data_dir):
        for file in sorted(os.listdir(data_dir)):
            gpu, _, rest = file.partition("_")
            if gpu and rest == f"{name}.csv":
                found.append(Measured(os.path.join(data_dir, file), gpu))
    return found


def nice_step(vmax, ticks=5):
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) giving about `ticks` ticks."""
    raw = vmax / ticks
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


def tick_text(v):
    return f"{round(v, 9):g}"  # 2.5, 0.75, 4000: a tick's value without the sum's rounding


def notes_below(s, gpus, y):
    """Where each GPU's numbers come from, one line per GPU from y down."""
    for i, m in enumerate(gpus):
        s.text(s.width / 2, y + 17 * i, f"{m.label}: {m.measured_on}", anchor="middle", size=11,
               fill=NOTE)


def grouped_bars(path, title, gpus, key, xlabels, value, label, ylabel, xtitle="",
                 ceiling=None, ceiling_name=None):
    """One group of bars per category (the values of column `key`, in the first file's order),
    one bar per GPU in its colour: height value(row), text label(row) on it; xlabels(row) are
    the lines under a group. `ceiling(m)` draws a dashed line per GPU (one line when they are
    all the same), named ceiling_name(m) at the right."""
    categories = []
    for m in gpus:
        categories += [r[key] for r in m.rows if r[key] not in categories]
    row_of = [{r[key]: r for r in m.rows} for m in gpus]
    ceilings = [ceiling(m) for m in gpus] if ceiling else []
    values = [value(r) for m in gpus for r in m.rows] + ceilings
    s = Svg(1000, 490 + 17 * len(gpus), title)
    s.heading(title)
    x0, y0, pw, ph = 90, 60, 760, 300
    vmax = max(values) * 1.15
    step = nice_step(vmax)
    v = 0.0
    while v <= vmax:
        y = y0 + ph - v / vmax * ph
        s.line(x0, y, x0 + pw, y, stroke="#e6e6e6")
        s.text(x0 - 8, y + 5, tick_text(v), anchor="end", size=13)
        v += step
    s.text(30, y0 + ph / 2, ylabel, anchor="middle", size=14, rotate=-90)
    slot = pw / len(categories)
    bar = slot * 0.7 / len(gpus)
    for i, cat in enumerate(categories):
        left = x0 + i * slot + slot * 0.15
        for j, m in enumerate(gpus):
            r = row_of[j].get(cat)
            if r is None:
                continue
            h = value(r) / vmax * ph
            s.rect(left + j * bar, y0 + ph - h, bar - 2, h, GPU_COLOURS[j % len(GPU_COLOURS)])
            inside = h > 40  # in the bar (white) when it is tall enough: clear of the ceilings
            s.text(left + (j + 0.5) * bar - 1, y0 + ph - h + (22 if inside else -6), label(r),
                   anchor="middle", size=12 if len(gpus) > 1 else 14, weight="bold",
                   fill=WHITE if inside else DARK)
        first = next(rows[cat] for rows in row_of if cat in rows)
        for k, line in enumerate(xlabels(first)):
            s.text(x0 + (i + 0.5) * slot, y0 + ph + 22 + 18 * k, line, anchor="middle",
                   size=14 if k == 0 else 12, fill=DARK if k == 0 else "#666666")
    if ceilings and len(set(ceilings)) == 1:
        ceilings, colours = ceilings[:1], [DARK]
    else:
        colours = [GPU_COLOURS[j % len(GPU_COLOURS)] for j in range(len(gpus))]
    placed = []  # the names' baselines so far: close ceilings get their names 14 px apart
    for j in sorted(range(len(ceilings)), key=lambda j: -ceilings[j]):
        y = y0 + ph - ceilings[j] / vmax * ph
        s.line(x0, y, x0 + pw, y, stroke=colours[j], sw=1.5, dash="6,4")
        ty = max([y + 4] + [t + 14 for t in placed])
        placed.append(ty)
        s.text(x0 + pw + 6, ty, ceiling_name(gpus[j]), size=12, fill=colours[j])
    s.line(x0, y0, x0, y0 + ph, sw=1.5)
    s.line(x0, y0 + ph, x0 + pw, y0 + ph, sw=1.5)
    if xtitle:
        s.text(x0 + pw / 2, y0 + ph + 46, xtitle, anchor="middle", size=14)
    if len(gpus) > 1:
        s.legend(x0, y0 + ph + 75, [(GPU_COLOURS[j % len(GPU_COLOURS)], m.label)
                                    for j, m in enumerate(gpus)], size=13)
    notes_below(s, gpus, y0 + ph + 110)
    s.save(path)


def bandwidth(path, gpus):
    grouped_bars(path, "Memory-bound references: bandwidth as a fraction of cudaMemcpy", gpus,
                 "kernel", lambda r: [r["kernel"], f"lab {r['lab']}"],
                 lambda r: float(r["ratio_to_memcpy"]),
                 lambda r: f"{float(r['ratio_to_memcpy']):.2f}",
                 "ratio to cudaMemcpy bandwidth", ceiling=lambda m: 1.0,
                 ceiling_name=lambda m: "cudaMemcpy")


def lab03_stride(path, gpus):
    grouped_bars(path, "Copying floats read with a stride: bytes used per second", gpus,
                 "stride", lambda r: [r["stride"]], lambda r: float(r["gbps"]),
                 lambda r: f"{float(r['ratio_to_memcpy']):.2f}",
                 "GB/s used (labels: fraction of cudaMemcpy)",
                 xtitle="stride: floats between the reads of neighbouring threads",
                 ceiling=lambda m: statistics.median(float(r["memcpy_gbps"]) for r in m.rows),
                 ceiling_name=lambda m: f"memcpy {m.label}")


def lab04_ladder(path, gpus):
    grouped_bars(path, "Lab 04 at 4096 x 4096 x 4096: TFLOP/s of each rung", gpus,
                 "kernel", lambda r: [r["kernel"]], lambda r: float(r["tflops"]),
                 lambda r: f"{float(r['ratio_to_cublas']):.2f}",
                 "TFLOP/s (labels: fraction of cuBLAS)",
                 ceiling=lambda m: float(next(r["tflops"] for r in m.rows
                                              if r["kernel"] == "cuBLAS")),
                 ceiling_name=lambda m: f"cuBLAS {m.label}")


def lab05_reduction(path, gpus):
    grouped_bars(path, "Lab 05: reducing 2^28 floats, from interleaved to CUB", gpus,
                 "kernel", lambda r: [r["kernel"]], lambda r: float(r["gbps"]),
                 lambda r: f"{float(r['ratio_to_cub']):.2f}",
                 "GB/s read (labels: fraction of CUB)",
                 ceiling=lambda m: float(next(r["gbps"] for r in m.rows if r["kernel"] == "CUB")),
                 ceiling_name=lambda m: f"CUB {m.label}")


STAGES = ("copy-in", "kernel", "copy-out")  # the stage column of a timeline, H K D


def lab07_measured_timeline(path, gpus, whose="Lab 07's reference pipeline"):
    """Per GPU (or per build: kit.py profile 07 draws yours and the reference's): the serial
    run's lane and the pipelined run's lanes (one per stream), each bar a stage of a chunk where
    its events put it, and the ideal pipeline time (red)."""
    blocks = []
    for m in gpus:
        runs = {"serial": [], "pipelined": []}
        ideal = None
        for r in m.rows:
            if r["run"] == "ideal":
                ideal = float(r["end_ms"])
            elif r["run"] in runs:
                runs[r["run"]].append(r)
        streams = {run: sorted({int(r["stream"]) for r in rows}) for run, rows in runs.items()}
        blocks.append((m, runs, streams, ideal))
    lane, x0, pw = 34, 180, 770
    chunks = max(int(r["chunk"]) for _, runs, _, _ in blocks for rs in runs.values()
                 for r in rs) + 1
    s = Svg(1000, 0, "Lab 07: a measured timeline, serial vs pipelined")  # height: at the end
    s.heading(f"{whose} as its events recorded it: {chunks} chunks, one stream vs several")
    top = 60
    for m, runs, streams, ideal in blocks:
        end = {run: max((float(r["end_ms"]) for r in rows), default=0.0)
               for run, rows in runs.items()}
        span = max(list(end.values()) + [ideal or 0.0])
        step = nice_step(span, 8)
        unit = pw / (math.ceil(span / step) * step)
        heading = (f"{m.label}: serial {end['serial']:.2f} ms, pipelined {end['pipelined']:.2f} ms"
                   f" ({end['serial'] / end['pipelined']:.2f}x)" if end["pipelined"] else m.label)
        if ideal:
            heading += f"; ideal {ideal:.2f} ms"
        s.text(x0, top, heading, size=15, weight="bold")
        y = top + 14
        for run in ("serial", "pipelined"):
            first = y
            for stream in streams[run]:
                s.rect(x0, y, pw, lane - 4, "#f6f6f6")
                s.text(x0 - 10, y + 20, f"{run}: stream {stream}" if stream == streams[run][0]
                       else f"stream {stream}", anchor="end", size=13)
                for r in runs[run]:
                    if int(r["stream"]) != stream:
                        continue
                    a, b = float(r["start_ms"]), float(r["end_ms"])
                    c = int(r["chunk"])
                    s.rect(x0 + a * unit, y + 1, max((b - a) * unit - 1, 1), lane - 6,
                           PHASES[c % len(PHASES)])
                    if (b - a) * unit > 30:
                        s.text(x0 + (a + b) / 2 * unit, y + 20,
                               f"{'HKD'[STAGES.index(r['stage'])]}{c}", anchor="middle",
                               size=12, fill=WHITE, weight="bold")
                y += lane
            done = x0 + end[run] * unit
            s.line(done, first - 4, done, y, stroke=DARK, sw=2)
            if run == "pipelined" and ideal:
                xi = x0 + ideal * unit
                s.line(xi, first - 4, xi, y, stroke=RED, sw=2, dash="5,3")
            y += 12
        s.line(x0, y, x0 + pw, y, sw=1.5)
        t = 0.0
        while t * unit <= pw + 0.5:
            s.line(x0 + t * unit, y, x0 + t * unit, y + 5)
            s.text(x0 + t * unit, y + 20, f"{tick_text(t)} ms", anchor="middle", size=12)
            t += step
        top = y + 60
    s.legend(x0, top - 12, [(PHASES[c % len(PHASES)], f"chunk {c}") for c in range(chunks)]
             + [(RED, "ideal")], size=13)
    s.text(x0, top + 14, "H copy-in, K kernel, D copy-out; black: each run's end; "
           "ideal: max + (sum - max) / chunks of the serial stages", size=12, fill=NOTE)
    notes_below(s, gpus, top + 40)
    s.height = top + 40 + 17 * len(gpus)
    s.save(path)


def gpu_names(gpus):
    """"the H100", "the H100 and the H200"."""
    names = [f"the {m.label}" for m in gpus]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# Each measured figure: its data set and how it is drawn, and what the handout fragment of the
# same name (NAME.md) says under it. A handout shows it with `\include{doc} NAME.md`.
MEASURED = {
    "bandwidth.svg": ("bandwidth", bandwidth,
                      "The memory-bound reference kernels of labs 01 to 03 on {gpus}: each "
                      "performance step's rate as a fraction of a device-to-device cudaMemcpy "
                      "of the same bytes, measured in the same run"),
    "lab03_stride.svg": ("stride", lab03_stride,
                         "Copying 2^24 floats read with a stride, on {gpus}: the bytes used per "
                         "second, and (labels) as a fraction of cudaMemcpy's bandwidth "
                         "(bench_03_coalescing, BM_StridedCopy)"),
    "lab04_ladder.svg": ("lab04_ladder", lab04_ladder,
                         "Lab 04's reference kernels at 4096 x 4096 x 4096 on {gpus}, in "
                         "TFLOP/s, and (labels) as a fraction of cuBLAS SGEMM in FP32 without "
                         "TF32 (bench_04_tiling)"),
    "lab05_reduction.svg": ("reduction", lab05_reduction,
                            "Lab 05's reductions of 2^28 floats on {gpus}, in GB/s read, and "
                            "(labels) as a fraction of cub::DeviceReduce::Sum "
                            "(bench_05_divergence)"),
    "lab07_measured_timeline.svg": ("streams_timeline", lab07_measured_timeline,
                                    "Lab 07's reference pipeline on {gpus}, each stage of each "
                                    "chunk where its CUDA events put it: the chunks on one "
                                    "stream, then over several; red: the ideal pipeline time. "
                                    "A stage's bar starts when its stream reaches it, so a "
                                    "copy's bar includes its wait for the copy engine "
                                    "(bench_07_streams --kit_timeline_csv)"),
}


def fragment(name, gpus, caption):
    """The handout fragment of a measured figure: the figure and where its numbers come from;
    empty without measurements."""
    if not gpus:
        return ""
    files = ", ".join(f"`docs/figures/data/{m.file}`" for m in gpus)
    return (f'\\image html {name} "{caption.format(gpus=gpu_names(gpus))}"\n\n'
            f"The numbers are in {files}: the first line of a file says when, on which GPU and "
            "by which command they were measured.\n")


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: make_figures.py OUT_DIR [DATA_DIR]", file=sys.stderr)
        return 2
    out = argv[1]
    data = argv[2] if len(argv) == 3 else DATA
    os.makedirs(out, exist_ok=True)
    for name, draw in FIGURES.items():
        draw(os.path.join(out, name))
    for name, (dataset, draw, caption) in MEASURED.items():
        gpus = load_measured(data, dataset)
        svg = os.path.join(out, name)
        if gpus:
            draw(svg, gpus)
        elif os.path.exists(svg):  # drawn by an earlier build from data since removed
            os.remove(svg)
        with open(os.path.join(out, name[:-len(".svg")] + ".md"), "w", encoding="utf-8") as f:
            f.write(fragment(name, gpus, caption))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
