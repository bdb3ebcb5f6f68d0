"""A page's field lengths (BM25F's normalisation) do not depend on the pages indexed before it.

A word is one lexicon entry whatever the language, but a stop word of one language ("se" in
French) is a plain word of another: indexed after a French page, an English page's "se" must
still count toward its lengths.  Otherwise one store and a partitioned crawl's shards (other
pages, other order) score the same page apart.
"""

from __future__ import annotations

from pathlib import Path

from testkit.corpus import build_data_dir, field_lengths
from websift.indexer.build import build_index

FRENCH = ("http://fr.example/", """<html lang="fr"><head><title>Le chat se repose</title></head>
<body><main><p>Le chat se repose sur le tapis pendant que la pluie tombe sur la ville. Il se
lave, se gratte et se rendort dans la maison avec les enfants qui jouent.</p></main></body>
</html>""")
ENGLISH = ("http://en.example/", """<html lang="en"><head><title>Se and ne</title></head>
<body><main><p>The codes se and ne name the south east and the north east corners of the
map; se is where the harbour lies.</p></main></body></html>""")


def test_an_english_page_has_the_same_lengths_after_a_french_one(tmp_path: Path) -> None:
    english_first = build_data_dir(tmp_path / "en", dict([ENGLISH, FRENCH]))
    french_first = build_data_dir(tmp_path / "fr", dict([FRENCH, ENGLISH]))
    alone = build_data_dir(tmp_path / "alone", dict([ENGLISH]))
    for d in (english_first, french_first, alone):
        build_index(d, procs=1)
    want = field_lengths(alone)[ENGLISH[0]]
    assert field_lengths(english_first)[ENGLISH[0]] == want
    assert field_lengths(french_first)[ENGLISH[0]] == want
    assert field_lengths(english_first)[FRENCH[0]] == field_lengths(french_first)[FRENCH[0]]
