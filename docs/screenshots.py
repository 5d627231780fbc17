#!/usr/bin/env python3
"""Screenshots of the built documentation site, with headless Chromium.

    python3 docs/screenshots.py BUILD_DOCS_HTML_DIR OUT_DIR

writes OUT_DIR/index.png, one PNG for the top of each of three handouts and three further down
(a measured figure, formulas, the previous/next links; 1280x1600 pixels each), from
build/docs/html after `cmake --build build --target docs`. Use them to look at the theme, the
formulas, the sidebar, the folded hints and the previous/next links without a browser of your
own. Chromium is optional (`apt-get install chromium`, about 300 MB): without it the script says
so in one line, writes nothing and exits 0 ("not run"). It exits 1 when the site is not built or
a screenshot could not be taken. The selftest's documentation section runs it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "chromium-headless-shell", "google-chrome")
WIDTH, HEIGHT = 1280, 1600
PAGES = {  # the site's page -> the PNG
    "index.html": "index.png",
    "lab01_indexing.html": "lab01_indexing.png",
    "lab03_coalescing.html": "lab03_coalescing.png",
    "lab04_tiling.html": "lab04_tiling.png",
    # Further down the pages (the URL's fragment scrolls there): a measured figure, formulas,
    # a drawn figure, and the previous/next links at a handout's end.
    "lab03_coalescing.html#lab03_sectors": "lab03_measured_figure.png",
    "lab04_tiling.html#lab04_worked": "lab04_math.png",
    "lab07_streams.html#lab07_answers": "lab07_end_links.png",
}
TIMEOUT_S = 90


def browser() -> str | None:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


def screenshot(chromium: str, url: str, png: Path) -> str | None:
    """Takes one screenshot; None when it worked, else why not."""
    with tempfile.TemporaryDirectory(prefix="kit-chromium-") as profile:
        command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                   "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
                   "--allow-file-access-from-files", "--virtual-time-budget=8000",
                   f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={png}", url]
        try:
            proc = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"{Path(chromium).name} took more than {TIMEOUT_S} s"
    if proc.returncode != 0 or not png.is_file() or png.stat().st_size == 0:
        tail = proc.stdout.strip().splitlines()[-1:] or ["no output"]
        return f"{Path(chromium).name} exited {proc.returncode}: {tail[0]}"
    return None


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[2].strip() if argv else "", file=sys.stderr)
        print("usage: python3 docs/screenshots.py BUILD_DOCS_HTML_DIR OUT_DIR", file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    html, out = Path(argv[0]).resolve(), Path(argv[1])
    chromium = browser()
    if chromium is None:
        print("screenshots: not run: no Chromium (apt-get install chromium)")
        return 0
    if not (html / "index.html").is_file():
        print(f"screenshots: {html}/index.html does not exist: build the site first "
              "(cmake --build build --target docs)", file=sys.stderr)
        return 1
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name, png_name in PAGES.items():
        file, _, fragment = name.partition("#")
        page = html / file
        if not page.is_file():
            print(f"screenshots: {page} does not exist", file=sys.stderr)
            failed += 1
            continue
        why = screenshot(chromium, page.as_uri() + (f"#{fragment}" if fragment else ""),
                         out / png_name)
        if why:
            print(f"screenshots: {name}: {why}", file=sys.stderr)
            failed += 1
        else:
            print(f"screenshots: {out / png_name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
