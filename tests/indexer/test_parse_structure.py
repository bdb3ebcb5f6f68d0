"""Blocks and fragments from the one parse (issue 12): hand-written pages in the shapes each
documentation generator writes (Sphinx, DocBook, Texinfo, a table of settings)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from websift.indexer.fragment_extract import Fragment, generic_prefixes, id_key, id_segments
from websift.indexer.parse import ParsedPage, parse_html
from websift.indexer.settings import (
    DEFAULT_INDEX_SETTINGS,
    MAX_FRAGMENT_KEY_CHARS,
    MAX_FRAGMENT_TEXT_CHARS,
    MAX_FRAGMENTS,
    IndexSettings,
)
from websift.indexer.template_keys import block_hash

CT = "text/html; charset=utf-8"


# The fragments' defining texts are made for the defs field of defs="text" only.
TEXTS = IndexSettings(defs="text")


def parse(html: str, settings: IndexSettings = TEXTS) -> ParsedPage:
    return parse_html(html.encode(), "http://docs.example/lib/page.html", CT, structure=True,
                      settings=settings)


def by_id(page: ParsedPage) -> dict[str, Fragment]:
    return {f.id: f for f in page.fragments}


SPHINX = """<html><head><title>os.path</title></head><body>
<div class="body" role="main">
<section id="module-os.path"><h1>os.path — pathname functions<a class="headerlink"
 href="#module-os.path" title="Permalink">¶</a></h1>
<p>This module implements some useful functions on pathnames.</p>
<dl class="py function">
<dt class="sig sig-object py" id="os.path.abspath"><span class="sig-prename">os.path.</span><span
 class="sig-name">abspath</span>(<em>path</em>)<a class="headerlink" href="#os.path.abspath">¶</a></dt>
<dd><p>Return a normalized absolutized version of the pathname <em>path</em>.</p></dd>
</dl>
<dl class="py function"><dt class="sig" id="os.path.basename">os.path.basename(path)</dt>
<dd><p>Return the base name of pathname <em>path</em>.</p></dd></dl>
<dl><dt>no anchor here</dt><dd>nothing reaches this term</dd></dl>
</section></div></body></html>"""


def test_sphinx_definitions_and_sections() -> None:
    page = parse(SPHINX)
    frags = by_id(page)
    assert set(frags) == {"module-os.path", "os.path.abspath", "os.path.basename"}
    absp = frags["os.path.abspath"]
    assert "abspath" in absp.key and "normalized absolutized" not in absp.key
    assert absp.text.startswith(absp.key) and "normalized absolutized version" in absp.text
    assert "base name" not in absp.text  # the next term's definition is its own
    section = frags["module-os.path"]
    # The id's words the heading lacks come first ("module", Sphinx's module target).
    assert section.key.startswith("module os.path — pathname functions")
    assert "useful functions on pathnames" in section.text


DOCBOOK = """<html><head><title>20.4. Resource Consumption</title></head><body>
<div class="navheader"><a accesskey="p" href="prev.html">Prev</a> <a accesskey="u"
 href="up.html">Up</a> <a accesskey="h" href="index.html">Home</a> <a href="next.html">Next</a></div>
<div class="sect1" id="RUNTIME-CONFIG-RESOURCE"><div class="sect2" id="RUNTIME-CONFIG-RESOURCE-MEMORY">
<div class="titlepage"><div><div><h3 class="title">20.4.1. Memory <a
 href="#RUNTIME-CONFIG-RESOURCE-MEMORY" class="id_link">#</a></h3></div></div></div>
<div class="variablelist"><dl class="variablelist">
<dt id="GUC-SHARED-BUFFERS"><span class="term"><code class="varname">shared_buffers</code>
 (<code class="type">integer</code>) <a id="id-1.6.7.6.2.2.1.1.3" class="indexterm"></a></span>
 <a href="#GUC-SHARED-BUFFERS" class="id_link">#</a></dt>
<dd><p>Sets the amount of memory the database server uses for shared memory buffers.</p></dd>
<dt><span class="term"><a name="GUC-WORK-MEM"></a><code class="varname">work_mem</code></span></dt>
<dd><p>Sets the base maximum amount of memory to be used by a query operation.</p></dd>
</dl></div></div></div>
<h2 class="title"><a name="SQL-SYNTAX-LEXICAL"></a>4.1. Lexical Structure</h2><p>SQL input.</p>
</body></html>"""


def test_docbook_varlistentries_and_sect_anchors() -> None:
    frags = by_id(parse(DOCBOOK))
    shared = frags["GUC-SHARED-BUFFERS"]
    assert shared.key.startswith("shared_buffers ( integer )")
    assert "shared memory buffers" in shared.text and "query operation" not in shared.text
    assert "query operation" in frags["GUC-WORK-MEM"].text  # an <a name> inside the term
    memory = frags["RUNTIME-CONFIG-RESOURCE-MEMORY"]  # the heading's permalink
    # "RUNTIME" leads the page's ids (generic); the rest of the id's words the title lacks.
    assert memory.key.startswith("CONFIG RESOURCE 20.4.1. Memory")
    assert "shared_buffers" in memory.text  # the section's start, past the title wrappers
    assert frags["SQL-SYNTAX-LEXICAL"].text == "SQL SYNTAX 4.1. Lexical Structure SQL input."
    assert "id-1.6.7.6.2.2.1.1.3" not in frags  # an empty index anchor defines nothing


TEXINFO = """<html><head><title>Basic Vectorization</title></head><body>
<span id="Basic-Vectorization"></span><h3 class="section">19.1 Basic Vectorization</h3>
<p>To a very good first approximation, the goal in vectorization is to write code.</p>
<dl><dt id="index-zeros"><strong class="def-name">zeros</strong> <code>(n)</code><a
 class="copiable-link" href="#index-zeros"> ¶</a></dt><dd><p>Return a matrix whose elements
 are all 0.</p></dd>
<dt><a name="index-ones"></a><u>Function File:</u> <b>ones</b> <i>(n)</i></dt>
<dd><p>Return a matrix whose elements are all 1.</p></dd></dl>
<a name="Broadcasting"></a><h4>19.2 Broadcasting</h4><p>Broadcasting refers to how.</p>
</body></html>"""


def test_texinfo_anchors_before_headings_and_dt_ids() -> None:
    frags = by_id(parse(TEXINFO))
    assert frags["Basic-Vectorization"].key == "19.1 Basic Vectorization"
    assert "first approximation" in frags["Basic-Vectorization"].text
    assert frags["index-zeros"].key.startswith("zeros (n)")
    assert "all 0" in frags["index-zeros"].text
    assert "all 1" in frags["index-ones"].text and "ones" in frags["index-ones"].key
    assert frags["Broadcasting"].text == "19.2 Broadcasting Broadcasting refers to how."


SETTINGS = """<html><body><h1>Settings</h1><table>
<tr><th>Setting</th><th>Default</th><th>Meaning</th></tr>
<tr><td id="opt-timeout"><code>timeout</code></td><td>30</td><td>Seconds before giving up.</td></tr>
<tr id="opt-retries"><td><code>retries</code></td><td>3</td><td>How many times to retry.</td></tr>
<tr><td>verbose</td><td>no</td><td>no id: not reachable</td></tr>
</table><p id="note">Settings are read at start.</p></body></html>"""


def test_a_table_of_settings_keyed_by_first_cells() -> None:
    frags = by_id(parse(SETTINGS))
    assert frags["opt-timeout"] == Fragment("opt-timeout", "timeout",
                                            "timeout 30 Seconds before giving up.")
    assert frags["opt-retries"] == Fragment("opt-retries", "retries",
                                            "retries 3 How many times to retry.")
    assert frags["note"].text == "Settings are read at start."  # an element with an id
    assert len(frags) == 3


def test_fragments_are_bounded_in_size_and_number() -> None:
    long_dd = "word " * 300
    terms = "".join(f'<dt id="t{i}">term {i} {"x" * 500}</dt><dd>{long_dd}</dd>'
                    for i in range(MAX_FRAGMENTS + 50))
    page = parse(f"<html><body><dl>{terms}</dl></body></html>")
    assert len(page.fragments) == MAX_FRAGMENTS
    assert all(len(f.key) <= MAX_FRAGMENT_KEY_CHARS and len(f.text) <= MAX_FRAGMENT_TEXT_CHARS
               for f in page.fragments)
    assert [f.id for f in page.fragments[:3]] == ["t0", "t1", "t2"]


def test_blocks_join_to_the_body_and_hash_alike_across_pages() -> None:
    nav = ('<div class="nav"><a href="p.html">Prev</a> <a href="u.html">Up</a> '
           '<a href="/">Home</a></div>')
    one = parse(f"<html><body>{nav}<p>First <b>page</b> text.</p><ul><li>a</li><li>b "
                f"<em>c</em></li></ul>tail<table><tr><td>x</td><td>y</td></tr></table>"
                f"{nav}</body></html>")
    two = parse(f"<html><body>{nav}<h2>Other</h2><p>Second page.</p></body></html>")
    # A block of links is split into its items (navigation-shaped: indexer/parse.py).
    assert [b.text for b in one.blocks] == [
        "Prev", "Up", "Home", "First page text.", "a", "b c", "tail", "x", "y", "Prev", "Up",
        "Home"]
    for page in (one, two):
        assert " ".join(b.text for b in page.blocks) == page.body
        assert all(b.hash == block_hash(b.text) for b in page.blocks)
    assert one.blocks[0].hash == two.blocks[0].hash  # the template repeats
    assert block_hash("Next") == block_hash("  next ") != block_hash("Prev")
    assert 0 <= block_hash("Next") < 2**64


def test_structure_is_off_by_default_and_changes_no_field() -> None:
    on = parse(DOCBOOK)
    off = parse_html(DOCBOOK.encode(), "http://docs.example/lib/page.html", CT)
    assert (off.title, off.headings, off.body) == (on.title, on.headings, on.body)
    assert off.blocks == [] and off.fragments == [] and off.marked == ""
    # The snippet text is the body's words as shown (inline text nodes joined, "#" permalinks
    # left out): structure knows where blocks end, so only it can join them.
    assert off.text == off.body and " # " not in on.text
    assert "".join(off.text.replace(" # ", " ").split()) == "".join(on.text.split())


TEXINFO_INDEX = """<html><head><title>Assignment Ops (GNU Octave)</title></head><body>
<div class="header"><p>Next: <a href="Increment-Ops.html">Increment Operators</a></p></div>
<span id="Assignment-Expressions"></span><h3 class="section">8.6 Assignment Expressions</h3>
<span id="index-assignment-operators"></span>
<span id="index-operators_002c-assignment"></span>
<span id="index-_002b_003d"></span>
<p>An assignment stores a new value into a variable.</p>
<span id="index-lvalue"></span><p>The left-hand operand need not be a variable.</p>
<hr><div class="header"><p>Next: <a href="Increment-Ops.html">Increment Operators</a></p></div>
</body></html>"""


def test_empty_texinfo_index_anchors_are_fragments_keyed_by_their_ids_words() -> None:
    frags = by_id(parse(TEXINFO_INDEX))
    assert frags["Assignment-Expressions"].key == "8.6 Assignment Expressions"  # the heading's
    # "index-" leads several ids of the page: a generic prefix, not a word of the place.
    assert frags["index-assignment-operators"].key == "assignment operators"
    assert frags["index-operators_002c-assignment"].key == "operators, assignment"
    assert frags["index-_002b_003d"].key == "+="  # Texinfo's escapes decoded
    lvalue = frags["index-lvalue"]
    assert lvalue.key == "lvalue"
    # The text is what follows the anchor, up to the thematic break (not the footer's links).
    assert lvalue.text == "lvalue The left-hand operand need not be a variable."
    assert "new value" in frags["index-assignment-operators"].text


NAMED = """<html><head><title>Index anchors</title></head><body>
<p>Intro.<span id="index-0"></span><span id="index-1"></span><span id="id5"></span>
<span id="id-1.5.3.7"></span><a id="GUC-WORK-MEM"></a><span id="x7"></span><span id="x8"></span>
<span id="term-getElementById"></span><span id="3f9a0c2e1b"></span><a name="pep-8"></a>
<span id="module-os.path"></span></p><p>Sets the memory of a query operation.</p>
</body></html>"""


def test_anchor_ids_without_words_are_no_fragments() -> None:
    frags = by_id(parse(NAMED))
    # Numbers, generated serials (id5; x7 and x8, a stem the page numbers), hashes, and a
    # prefix with a counter (index-0, pep-8) carry no words.
    assert set(frags) == {"GUC-WORK-MEM", "term-getElementById", "module-os.path"}
    assert frags["GUC-WORK-MEM"].key == "GUC WORK MEM"
    assert frags["GUC-WORK-MEM"].text == "GUC WORK MEM Sets the memory of a query operation."
    assert frags["term-getElementById"].key == "term getElementById get Element By Id"
    assert frags["module-os.path"].key == "module os.path"


def test_a_prefix_that_is_a_word_of_the_page_is_kept() -> None:
    page = ('<html><head><title>Index expressions</title></head><body><p>x</p>'
            '<span id="index-ranges"></span><span id="index-masks"></span><p>Ranges.</p>'
            '</body></html>')
    assert by_id(parse(page))["index-ranges"].key == "index ranges"


def test_anchor_fragments_switch_off() -> None:
    frags = by_id(parse(TEXINFO_INDEX, IndexSettings(anchor_defs=False)))
    assert set(frags) == {"Assignment-Expressions"}


@given(st.lists(st.one_of(st.from_regex(r"[A-Za-z][A-Za-z0-9._]{0,8}", fullmatch=True),
                          st.sampled_from(["_002c", "_003d", "_002d", "3", "1.2", "_0041"])),
                min_size=1, max_size=5),
       st.sampled_from(["-", ":", " "]))
def test_id_key_words_come_from_the_id(segments: list[str], sep: str) -> None:
    fid = sep.join(segments)
    key = id_key(fid, generic_prefixes([fid, fid + "-x"], ""))
    decoded = " ".join(id_segments(fid))
    for word in key.split():
        assert word in decoded  # no word that the id does not spell
    assert not any(w.isdigit() for w in key.split())  # numbers are no words
    if len(segments) == 2 and segments[1].isdigit():
        assert key == ""  # a prefix and a counter


PROPERTIES = """<html><head><title>Axes Properties</title></head><body><h3>Axes Properties</h3>
<dl><dt id="index-axes-box"><code>box</code>: { "off" } | "on"</dt><dd>Draw a box.</dd>
<dt id="index-axes-contextmenu"><code>contextmenu</code>: graphics handle</dt>
<dd>The menu of the axes.</dd><dt id="index-axes-box-1">box</dt><dd>Again.</dd></dl></body></html>"""


def test_a_terms_key_gains_the_words_of_its_id_that_it_lacks() -> None:
    frags = by_id(parse(PROPERTIES))
    # "index" leads the page's ids (generic); "axes" names the object the property is of.
    assert frags["index-axes-contextmenu"].key == "axes contextmenu : graphics handle"
    assert frags["index-axes-contextmenu"].text.startswith("axes contextmenu : graphics")
    assert frags["index-axes-box-1"].key == "axes box"  # the counter is no word
    off = IndexSettings(id_words=False)
    assert by_id(parse(PROPERTIES, off))["index-axes-contextmenu"].key == "contextmenu : graphics handle"


@pytest.mark.parametrize("html", [SPHINX, DOCBOOK, TEXINFO, SETTINGS, TEXINFO_INDEX, NAMED,
                                  PROPERTIES])
def test_fragments_without_texts_have_the_same_ids_and_keys(html: str) -> None:
    # The default defs field ("key") reads no defining text: none is made, the rest is the same.
    with_texts = parse(html).fragments
    keys_only = parse(html, DEFAULT_INDEX_SETTINGS).fragments
    assert DEFAULT_INDEX_SETTINGS.defs == "key" and with_texts
    assert [(f.id, f.key) for f in keys_only] == [(f.id, f.key) for f in with_texts]
    assert all(f.text for f in with_texts) and not any(f.text for f in keys_only)
    other = [parse(html, IndexSettings(**{k: False})).fragments for k in ("anchor_defs", "id_words")]
    texts = [parse(html, IndexSettings(defs="text", **{k: False})).fragments
             for k in ("anchor_defs", "id_words")]
    assert [[(f.id, f.key) for f in fs] for fs in other] == \
        [[(f.id, f.key) for f in fs] for fs in texts]


def _texinfo_nav(*links: tuple[str, str]) -> str:
    items = ", ".join(f'{label}: <a href="{t.replace(" ", "-")}.html">{t}</a>'
                      for label, t in links)
    return (f'<div class="header"><p>{items} &nbsp; [<a href="index.html#SEC_Contents">Contents'
            '</a>][<a href="Concept-Index.html">Index</a>]</p></div>')


def test_navigation_variants_share_their_items_template_keys() -> None:
    full = parse(f"<html><body>{_texinfo_nav(('Next', 'Loops'), ('Previous', 'Ifs'), ('Up', 'Statements'))}"
                 "<p>The while statement.</p></body></html>")
    first = parse(f"<html><body>{_texinfo_nav(('Next', 'Strings'), ('Up', 'Data Types'))}"
                  "<p>Numbers.</p></body></html>")
    top = parse(f"<html><body>{_texinfo_nav(('Up', 'Top'))}<p>Preface.</p></body></html>")
    assert [b.text for b in first.blocks] == ["Next: Strings", ", Up: Data Types",
                                              "[ Contents", "][ Index ]", "Numbers."]
    keys = {b.key for b in full.blocks}
    # Every navigation item of the variants has a key the full navigation has too.
    for page in (first, top):
        assert {b.key for b in page.blocks[:-1]} <= keys
        assert page.blocks[-1].key not in keys  # the content is its own
        assert " ".join(b.text for b in page.blocks) == page.body
    # A sentence with links is no navigation: one block, keyed by its words outside links.
    prose = parse('<html><body><p>The <a href="a.html">while</a> statement repeats a body '
                  'of <a href="b.html">commands</a> as long as a condition holds.</p>'
                  "</body></html>")
    assert len(prose.blocks) == 1


nav_word = st.from_regex(r"[A-Za-z][a-z]{0,7}", fullmatch=True)


@pytest.mark.slow
@given(st.lists(st.tuples(nav_word, st.lists(nav_word, min_size=1, max_size=3)),
                min_size=2, max_size=5, unique_by=lambda t: t[0]),
       st.data())
def test_a_navigation_variant_shares_its_items_keys(
        items: list[tuple[str, list[str]]], data: st.DataObject) -> None:
    def page(chosen: list[tuple[str, list[str]]], body: str) -> ParsedPage:
        links = ", ".join(f'{label}: <a href="{i}.html">{" ".join(t)}</a>'
                          for i, (label, t) in enumerate(chosen))
        return parse(f"<html><body><div><p>{links}</p></div><p>{body}</p></body></html>")

    full = page(items, "one page")
    keep = data.draw(st.lists(st.sampled_from(items), min_size=2, max_size=len(items),
                              unique_by=lambda t: t[0]))
    # The same labels on another page, other link texts, some items left out.
    other = page([(label, [w + "x" for w in t]) for label, t in keep], "another page")
    assert " ".join(b.text for b in other.blocks) == other.body
    assert {b.key for b in other.blocks[:-1]} <= {b.key for b in full.blocks}


_TAGS = ("div", "p", "a", "span", "br", "table", "tr", "td", "th", "thead", "tbody", "caption",
         "ul", "li", "dl", "dt", "dd", "h2", "main", "section", "pre", "svg", "math", "b",
         "form", "custom-el", "hr", "A")


@given(st.lists(st.tuples(st.sampled_from(_TAGS), st.sampled_from(("", " href=x", " HREF",
                                                                    " name=y", " role=main")),
                          st.booleans()), max_size=40))
def test_blocks_and_links_walk_finds_what_the_selector_finds(parts: list[tuple[str, str, bool]]
                                                             ) -> None:
    """The tag-ID walk gives the selector query's nodes, in its order, from any scope (the
    scope itself included), whatever the nesting the HTML parser repairs."""
    from selectolax.lexbor import LexborHTMLParser

    from websift.indexer.html_nodes import css
    from websift.indexer.parse import _BLOCKS_AND_LINKS, _blocks_and_links

    html = "".join(f"<{t}{attr}>w" + (f"</{t}>" if close else "") for t, attr, close in parts)
    tree = LexborHTMLParser(f"<html><body>{html}</body></html>")
    assert tree.root is not None
    for scope in tree.root.traverse():
        want = [el.mem_id for el in css(scope, _BLOCKS_AND_LINKS)]
        assert [el.mem_id for el in _blocks_and_links(scope)] == want


@given(st.lists(st.tuples(st.sampled_from(("div", "p", "b", "dd", "pre", "span")),
                          st.sampled_from(("", " ", "\n  ", "word", "two words ", "\u00a0", "é" * 7)),
                          st.booleans()), max_size=60),
       st.integers(min_value=1, max_value=60))
def test_text_upto_is_the_text_node_walk(parts: list[tuple[str, str, bool]], limit: int) -> None:
    """The bounded text after an anchor: with the whole text taken in one call when it is
    shorter than ``limit``, the same as taking its text nodes one by one up to ``limit``."""
    from selectolax.lexbor import LexborHTMLParser

    from websift.core.html import squash
    from websift.indexer.fragment_extract import _text_upto

    html = "".join(f"<{t}>{text}" + (f"</{t}>" if close else "") for t, text, close in parts)
    tree = LexborHTMLParser(f"<html><body>{html}</body></html>")
    assert tree.root is not None
    for node in tree.root.traverse():
        out: list[str] = []
        size = 0
        for n in node.traverse(include_text=True, skip_empty=True):
            t = n.text_content if n.is_text_node else None
            if t and not t.isspace():
                out.append(t)
                size += len(t)
                if size >= limit:
                    break
        assert _text_upto(node, limit) == squash(" ".join(out))
