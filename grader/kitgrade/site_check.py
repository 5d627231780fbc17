"""Checks on the built documentation site: no page shows a missing figure.

``missing_in_html(html_dir)`` reads every ``*.html`` of the site (build/docs/html) and names each
``<img src=...>``, ``<object data=...>`` or ``<embed src=...>`` whose file is not in the site.
``missing_images(docs_dir, image_dirs)`` names each ``\\image`` (or ``@image``) command of the
Markdown pages (docs/**/*.md) whose file is in none of the folders given (the figures' output).
``broken_markup(html_dir)`` names each place where a page shows Markdown that Doxygen did not
read as such: a backtick left in the text (a code span it could not close: one over several
lines, or one holding an apostrophe-quoted word, which it takes for a LaTeX-style quote), or its
table markup shown as text (every code span after such a one turned inside out).
Addresses with a scheme (``https:``, ``data:``) are not files of the site and are not checked.
The selftest's documentation section calls all three after building the site.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Iterable
from urllib.parse import unquote, urlsplit

_REFERENCES = {"img": "src", "object": "data", "embed": "src"}
_IMAGE_COMMAND = re.compile(r"[\\@]image\s*(?:\{[^}]*\}\s*)?\s+(html|latex|docbook|rtf|xml)\s+"
                            r"(\"[^\"]+\"|\S+)")


class _References(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[int, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        wanted = _REFERENCES.get(tag)
        for name, value in attrs:
            if name == wanted and value:
                self.found.append((self.getpos()[0], value))

    handle_startendtag = handle_starttag


def _local_file(html_dir: Path, page: Path, address: str) -> Path | None:
    """The file an address names, or None where it is not a file of the site."""
    parts = urlsplit(address)
    if parts.scheme or parts.netloc or not parts.path:
        return None
    path = unquote(parts.path)
    return (html_dir / path.lstrip("/")) if path.startswith("/") else (page.parent / path)


def missing_in_html(html_dir: Path) -> list[str]:
    """'page.html:line: <img src=x> (x is not in the site)' for every missing figure."""
    problems = []
    for page in sorted(Path(html_dir).rglob("*.html")):
        parser = _References()
        parser.feed(page.read_text(encoding="utf-8", errors="replace"))
        for line, address in parser.found:
            target = _local_file(Path(html_dir), page, address)
            if target is not None and not target.is_file():
                shown = page.relative_to(html_dir)
                problems.append(f"{shown}:{line}: {address} is not in the site ({html_dir})")
    return problems


def image_commands(text: str) -> list[tuple[int, str]]:
    """(line, file) of every \\image html command in a page's text."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in _IMAGE_COMMAND.finditer(line):
            if match.group(1) == "html":
                found.append((number, match.group(2).strip('"')))
    return found


def missing_images(docs_dir: Path, image_dirs: Iterable[Path]) -> list[str]:
    """'page.md:line: \\image html x is in none of ...' for every figure a page names that no
    folder of `image_dirs` holds."""
    dirs = [Path(d) for d in image_dirs]
    problems = []
    for page in sorted(Path(docs_dir).rglob("*.md")):
        for line, name in image_commands(page.read_text(encoding="utf-8", errors="replace")):
            if not any((d / name).is_file() for d in dirs):
                where = ", ".join(str(d) for d in dirs) or "(no figure folder)"
                problems.append(f"{page}:{line}: \\image html {name} is in none of {where}")
    return problems


def doxyfile_list(doxyfile: Path, key: str) -> list[str]:
    """The values of a list setting (IMAGE_PATH) of a Doxyfile, continuation lines included."""
    values: list[str] = []
    lines = Path(doxyfile).read_text(encoding="utf-8", errors="replace").splitlines()
    i = 0
    while i < len(lines):
        match = re.match(rf"\s*{re.escape(key)}\s*\+?=(.*)$", lines[i])
        i += 1
        if not match:
            continue
        text = match.group(1)
        while text.rstrip().endswith("\\") and i < len(lines):
            text = text.rstrip()[:-1] + " " + lines[i]
            i += 1
        values += [v.strip('"') for v in re.findall(r'"[^"]*"|\S+', text)]
    return values


_CODE_BLOCKS = re.compile(r'<div class="fragment">.*?</div><!-- fragment -->|<pre\b.*?</pre>',
                          re.S)
_TAGS = re.compile(r"<[^>]+>")
_SHOWN_MARKUP = ("`", "\\ilinebr", "&lt;td class=", "&lt;tr class=")


def broken_markup(html_dir: Path) -> list[str]:
    """'page.html:line: ...text...' for each backtick or piece of Doxygen's table markup that a
    page shows as text, outside its code blocks (program listings and examples may hold
    backticks)."""
    problems = []
    for page in sorted(Path(html_dir).rglob("*.html")):
        text = page.read_text(encoding="utf-8", errors="replace")
        # Blanked, not removed, so that line numbers stay those of the file.
        kept = _CODE_BLOCKS.sub(lambda m: "\n" * m.group(0).count("\n"), text)
        for number, line in enumerate(kept.splitlines(), 1):
            shown = _TAGS.sub("", line)
            for markup in _SHOWN_MARKUP:
                at = shown.find(markup)
                if at >= 0:
                    context = shown[max(0, at - 40):at + 40].strip()
                    problems.append(f"{page.relative_to(html_dir)}:{number}: {markup!r} shown "
                                    f"as text: ...{context}...")
                    break
    return problems
