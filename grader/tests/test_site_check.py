"""kitgrade.site_check on a tiny fake site: a figure a page shows must be in the site, and no page
shows Markdown that Doxygen did not read."""

from __future__ import annotations

import tempfile
import unittest
from pathlib import Path

from kitgrade import site_check


class MissingInHtmlTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.html = Path(self.tmp.name) / "html"
        self.html.mkdir()
        (self.html / "present.svg").write_text("<svg/>")
        (self.html / "sub").mkdir()
        (self.html / "sub" / "inner.png").write_bytes(b"png")

    def tearDown(self) -> None:
        self.tmp.cleanup()

    def page(self, name: str, body: str) -> None:
        (self.html / name).write_text(f"<html><body>\n{body}\n</body></html>\n")

    def test_a_site_whose_figures_are_all_there_is_fine(self) -> None:
        self.page("a.html", '<img src="present.svg" alt="x"/>\n<object data="sub/inner.png"></object>')
        self.page("b.html", '<img src="https://example.org/x.png">\n<img src="data:image/png;base64,AA">')
        self.assertEqual(site_check.missing_in_html(self.html), [])

    def test_a_missing_img_and_object_are_named_with_page_and_line(self) -> None:
        self.page("lab.html", '<p>text</p>\n<img src="gone.svg">\n<object data="also_gone.svg" '
                              'type="image/svg+xml"></object>\n<embed src="present.svg">')
        found = site_check.missing_in_html(self.html)
        self.assertEqual(len(found), 2, found)
        self.assertTrue(found[0].startswith("lab.html:3: gone.svg"), found)
        self.assertTrue(found[1].startswith("lab.html:4: also_gone.svg"), found)

    def test_a_query_or_fragment_does_not_hide_the_file(self) -> None:
        self.page("q.html", '<img src="present.svg?v=2#top"><img src="missing%20one.png">')
        found = site_check.missing_in_html(self.html)
        self.assertEqual(len(found), 1, found)
        self.assertIn("missing%20one.png", found[0])


class MissingImagesTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        root = Path(self.tmp.name)
        self.docs = root / "docs"
        (self.docs / "labs").mkdir(parents=True)
        self.figures = root / "figures"
        self.figures.mkdir()
        (self.figures / "warps.svg").write_text("<svg/>")

    def tearDown(self) -> None:
        self.tmp.cleanup()

    def test_image_commands_read_html_ones_only(self) -> None:
        text = ('Intro\n\\image html warps.svg "Warps of a block" width=80%\n'
                '@image latex warps.pdf\n\\image{inline} html "two words.svg"\n')
        self.assertEqual(site_check.image_commands(text), [(2, "warps.svg"), (4, "two words.svg")])

    def test_a_figure_in_the_output_is_fine_and_a_missing_one_is_named(self) -> None:
        (self.docs / "labs" / "01_x.md").write_text("# Lab\n\n\\image html warps.svg \"ok\"\n"
                                                     "\\image html nowhere.svg\n")
        found = site_check.missing_images(self.docs, [self.figures])
        self.assertEqual(len(found), 1, found)
        self.assertIn("01_x.md:4: \\image html nowhere.svg is in none of", found[0])

    def test_no_folder_means_every_figure_is_missing(self) -> None:
        (self.docs / "main.md").write_text("\\image html warps.svg\n")
        self.assertEqual(len(site_check.missing_images(self.docs, [])), 1)


class DoxyfileListTest(unittest.TestCase):
    def test_a_list_over_continuation_lines(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            doxyfile = Path(tmp) / "Doxyfile"
            doxyfile.write_text('EXAMPLE_PATH = /x\nIMAGE_PATH             = /a/figures \\\n'
                                '                         "/b c/more"\nIMAGE_PATH_X = no\n')
            self.assertEqual(site_check.doxyfile_list(doxyfile, "IMAGE_PATH"),
                             ["/a/figures", "/b c/more"])
            self.assertEqual(site_check.doxyfile_list(doxyfile, "HTML_HEADER"), [])



class BrokenMarkupTest(unittest.TestCase):
    """Pages as Doxygen 1.9 wrote them (the kit's students' page and lab 05's handout, session
    34), and as they read once mended."""

    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.html = Path(self.tmp.name)

    def tearDown(self) -> None:
        self.tmp.cleanup()

    def test_a_code_span_doxygen_could_not_close_is_named_with_page_and_line(self) -> None:
        (self.html / "lab05.html").write_text(
            "<p>text</p>\n<p>run <code>sanitize 05 --filter &lsquo;ReduceMemcheck.*&rsquo;`.</p>\n")
        (found,) = site_check.broken_markup(self.html)
        self.assertTrue(found.startswith("lab05.html:2: '`' shown as text"), found)

    def test_table_markup_shown_inside_an_inverted_code_span(self) -> None:
        (self.html / "students.html").write_text(
            '<table><tr><td><code>x \\ilinebr &lt;/td&gt; &lt;td class="markdownTableBodyNone"'
            '&gt; y</code></td></tr></table>\n')
        (found,) = site_check.broken_markup(self.html)
        self.assertIn("students.html:1: '\\\\ilinebr' shown as text", found)

    def test_backticks_in_code_blocks_and_a_clean_page_are_fine(self) -> None:
        (self.html / "ok.html").write_text(
            '<p>run <code>sanitize 05 --filter "ReduceMemcheck.*"</code>.</p>\n'
            '<div class="fragment"><div class="line">uses CUB (`cub::DeviceReduce::Sum`)</div>\n'
            '</div><!-- fragment -->\n<pre>a `quoted` word</pre>\n<p>after</p>\n')
        self.assertEqual(site_check.broken_markup(self.html), [])


if __name__ == "__main__":
    unittest.main()
