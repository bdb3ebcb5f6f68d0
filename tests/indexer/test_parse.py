"""Parsing a stored page into fields: never raises, keeps words apart, finds the main text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from websift.indexer.parse import parse_html, url_words

HTML = b"""<html lang="en"><head><title>The  Title</title><style>p{}</style></head>
<body><nav>menu words</nav><div role="main"><h1>Big</h1><p>first</p><p>second<script>x=1</script>
</p><h2>Small</h2></div></body></html>"""


def test_fields_of_a_page() -> None:
    p = parse_html(HTML, "http://h.example/library/os.path.html", "text/html; charset=utf-8")
    assert p.title == "The Title"
    assert p.headings == "Big Small"
    assert p.body == "Big first second Small"  # main content only; blocks keep words apart
    assert p.url_words == "library os.path"
    assert p.text == p.body and p.lang == "en"


def test_title_falls_back_to_the_first_heading_and_charset_is_honoured() -> None:
    body = "<html><body><h1>Café crème</h1></body></html>".encode("latin-1")
    p = parse_html(body, "http://h.example/", "text/html; charset=iso-8859-1")
    assert p.title == "Café crème"
    assert url_words("http://h.example/a-b/index.html?q=1") == "a b q 1"


@given(body=st.binary(max_size=300) | st.text(max_size=300).map(str.encode),
       ctype=st.sampled_from([None, "text/html", "text/html; charset=nope", "text/html; charset=utf-16"]))
@settings(max_examples=150, deadline=None)
def test_bad_html_never_raises(body: bytes, ctype: str | None) -> None:
    p = parse_html(body, "http://h.example/x", ctype)
    assert isinstance(p.body, str) and isinstance(p.title, str)


def test_main_content_inside_an_invisible_element_is_not_the_main() -> None:
    """The main-content candidates come from the same selector walk as the invisible elements:
    one that an invisible element holds is destroyed with it and never taken."""
    for structure in (False, True):
        p = parse_html(b"<body><svg><article>drawn</article></svg><main><p>shown</p></main>"
                       b"<p>after</p></body>", "http://h.example/", None, structure=structure)
        assert p.body == "shown"
        p = parse_html(b"<body><template><main>kept out</main></template><article>piece"
                       b"</article><p>rest</p></body>", "http://h.example/", None,
                       structure=structure)
        assert p.body == "piece"
        p = parse_html(b"<body><p>x</p><noscript><main>ns</main></noscript><p>y</p></body>",
                       "http://h.example/", None, structure=structure)
        assert p.body == "x y"
        p = parse_html(b"<body><svg><foreignObject><main>fo</main></foreignObject></svg>"
                       b"<p>y</p></body>", "http://h.example/", None, structure=structure)
        assert p.body == "y"
        p = parse_html(b"<body><svg role=main>x</svg><p>all of it</p></body>",
                       "http://h.example/", None, structure=structure)
        assert p.body == "all of it"
