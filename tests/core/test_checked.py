"""core/checked.py: one envelope, one version rule, one error mapping; arrays; the open loop."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from websift.core import checked
from websift.core.errors import (
    CheckedFileCorrupt,
    CheckedFileError,
    CheckedFileMissing,
    CheckedFileNewer,
    WebsiftError,
)

FMT = checked.Format("websift-test", 3, "test file", checked_since=2)
BODY: dict[str, Any] = {"generation": 7, "names": ["a", "b"], "nested": {"x": 1.5, "y": None}}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=4),
    max_leaves=12,
)
bodies = st.dictionaries(st.text(max_size=8).filter(lambda k: k not in checked.ENVELOPE),
                         json_values, max_size=6)


def write(tmp_path: Path, body: dict[str, Any] | None = None) -> Path:
    path = tmp_path / "f.json"
    checked.write_json(path, FMT, BODY if body is None else body)
    return path


def rewrite(path: Path, **changes: Any) -> None:
    """Change keys of a file as a person with an editor would (the checksum left as it was)."""
    doc = json.loads(path.read_text())
    doc.update(changes)
    path.write_text(json.dumps(doc))


def test_json_round_trip_carries_format_version_and_checksum(tmp_path: Path) -> None:
    path = write(tmp_path)
    doc = json.loads(path.read_text())
    assert (doc["format"], doc["version"]) == ("websift-test", 3)
    assert doc["checksum"] == checked.json_checksum(doc)
    got = checked.read_json(path, FMT)
    assert got.body == BODY and got.version == 3 and got.checksum == doc["checksum"]
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]  # atomic: no temp file left


@settings(max_examples=60, deadline=None)
@given(bodies)
def test_any_json_body_reads_back_identically(body: dict[str, Any]) -> None:
    raw, digest = checked.dump_json(FMT, body)
    got = checked.parse_json(raw, Path("mem.json"), FMT)
    assert got.body == json.loads(json.dumps(body)) and got.checksum == digest


def test_tuples_and_int_keys_are_summed_as_a_reader_sees_them(tmp_path: Path) -> None:
    path = write(tmp_path, {"pairs": (1, 2), "by_id": {10: "a", 9: "b"}})
    assert checked.read_json(path, FMT).body == {"pairs": [1, 2], "by_id": {"10": "a", "9": "b"}}


def test_envelope_keys_cannot_be_body_keys(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="envelope"):
        write(tmp_path, {"version": 5})


def test_missing(tmp_path: Path) -> None:
    with pytest.raises(CheckedFileMissing) as info:
        checked.read_json(tmp_path / "nothing.json", FMT)
    assert info.value.path == tmp_path / "nothing.json"


@pytest.mark.parametrize(("damage", "reason", "says"), [
    (lambda p: p.write_bytes(b"{not json"), "json", "not valid JSON"),
    (lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]), "truncated", "truncated"),
    (lambda p: p.write_bytes(b""), "truncated", "truncated"),
    (lambda p: p.write_bytes(b"\xff\xfe\x00garbage"), "json", "not valid JSON"),
    (lambda p: p.write_text("[1, 2]"), "format", "not a websift test file"),
    (lambda p: rewrite(p, format="somebody-else"), "format", "somebody-else"),
    (lambda p: rewrite(p, version="3"), "version", "no valid format version"),
    (lambda p: rewrite(p, version=0), "version", "no valid format version"),
    (lambda p: rewrite(p, version=True), "version", "no valid format version"),
    (lambda p: rewrite(p, generation=8), "checksum", "fails its sha256 checksum"),
    (lambda p: rewrite(p, checksum="0" * 64), "checksum", "fails its sha256 checksum"),
    (lambda p: rewrite(p, checksum=None), "checksum", "fails its sha256 checksum"),
    (lambda p: rewrite(p, extra=1), "checksum", "fails its sha256 checksum"),
])
def test_corrupt(tmp_path: Path, damage: Any, reason: str, says: str) -> None:
    path = write(tmp_path)
    damage(path)
    with pytest.raises(CheckedFileCorrupt, match=says) as info:
        checked.read_json(path, FMT)
    assert info.value.reason == reason and info.value.path == path
    assert "\n" not in str(info.value)  # one line for a person


def test_a_bit_flip_anywhere_in_a_value_is_caught(tmp_path: Path) -> None:
    path = write(tmp_path, {"weights": [0.25, 0.5], "name": "abc"})
    raw = path.read_bytes()
    for old, new in ((b"0.25", b"0.35"), (b'"abc"', b'"abd"'), (b"0.5", b"0.7")):
        path.write_bytes(raw.replace(old, new))
        with pytest.raises(CheckedFileCorrupt, match="checksum"):
            checked.read_json(path, FMT)
    path.write_bytes(raw.replace(b"\n", b"\n  "))  # layout is not content
    assert checked.read_json(path, FMT).body == {"weights": [0.25, 0.5], "name": "abc"}


def test_a_reread_parses_again_only_when_the_bytes_changed(tmp_path: Path) -> None:
    reader = checked.RereadJson()
    path = write(tmp_path)
    first = reader.read_json(path, FMT)
    assert first.body == BODY
    assert reader.read_json(path, FMT) is first  # the same bytes: the same answer, not parsed
    checked.write_json(path, FMT, {**BODY, "generation": 8})  # same length: other bytes
    assert reader.read_json(path, FMT).body["generation"] == 8
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b"8", b"9"))  # damaged after a good read: refused every time
    for _ in range(2):
        with pytest.raises(CheckedFileCorrupt, match="checksum"):
            reader.read_json(path, FMT)
    path.write_bytes(raw)  # the good bytes again: read (and checked) again
    assert reader.read_json(path, FMT).body["generation"] == 8
    path.unlink()
    with pytest.raises(CheckedFileMissing):
        reader.read_json(path, FMT)


def test_unreadable(tmp_path: Path) -> None:
    (tmp_path / "f.json").mkdir()
    with pytest.raises(CheckedFileCorrupt, match="cannot read") as info:
        checked.read_json(tmp_path / "f.json", FMT)
    assert info.value.reason == "unreadable"


def test_newer_is_refused_as_newer_before_its_checksum_is_looked_at(tmp_path: Path) -> None:
    path = write(tmp_path)
    rewrite(path, version=4, checksum=12345)  # a newer websift may sum differently
    with pytest.raises(CheckedFileNewer, match=r"newer websift .*format version 4; this one "
                       r"reads versions 1 to 3") as info:
        checked.read_json(path, FMT)
    assert (info.value.version, info.value.current) == (4, 3)


def test_every_version_up_to_current_is_read(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    for version in (2, 3):
        doc = {"format": FMT.name, "version": version, **BODY}
        path.write_text(json.dumps({**doc, "checksum": checked.json_checksum(doc)}))
        assert checked.read_json(path, FMT).version == version


def test_versions_before_the_envelope_are_read_as_they_are_or_by_their_own_check(
    tmp_path: Path,
) -> None:
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"format": FMT.name, "version": 1, **BODY}))
    got = checked.read_json(path, FMT)
    assert got.body == BODY and got.version == 1 and got.checksum is None

    def legacy(doc: dict[str, Any]) -> bool:
        return bool(doc.get("old_sum") == len(doc["names"]))

    path.write_text(json.dumps({"format": FMT.name, "version": 1, **BODY, "old_sum": 2}))
    assert checked.read_json(path, FMT, legacy=legacy).body["old_sum"] == 2
    path.write_text(json.dumps({"format": FMT.name, "version": 1, **BODY, "old_sum": 3}))
    with pytest.raises(CheckedFileCorrupt, match="fails its checksum") as info:
        checked.read_json(path, FMT, legacy=legacy)
    assert info.value.reason == "checksum"


def test_the_errors_are_websift_errors() -> None:
    for cls in (CheckedFileMissing, CheckedFileCorrupt, CheckedFileNewer):
        assert issubclass(cls, CheckedFileError) and issubclass(cls, WebsiftError)


# ---------------------------------------------------------------------------------- arrays
@pytest.mark.parametrize("array", [
    np.linspace(0, 1, 17), np.arange(-1, 40, dtype=np.int32), np.array([True, False, True]),
    np.zeros(0, dtype=np.float64),
])
def test_array_round_trip(tmp_path: Path, array: np.ndarray) -> None:
    path = tmp_path / "a.npy"
    digest = checked.write_array(path, array)
    assert digest == checked.sha256_hex(path.read_bytes())
    got = checked.read_array(path, digest, "a", dtype=array.dtype, length=len(array))
    assert got.dtype == array.dtype
    np.testing.assert_array_equal(got, array)


def test_array_errors(tmp_path: Path) -> None:
    path = tmp_path / "a.npy"
    digest = checked.write_array(path, np.arange(100, dtype=np.float64))
    with pytest.raises(CheckedFileMissing, match="is missing"):
        checked.read_array(tmp_path / "gone.npy", digest, "a")
    raw = path.read_bytes()
    path.write_bytes(raw[:-1] + bytes([raw[-1] ^ 1]))
    with pytest.raises(CheckedFileCorrupt, match="sha256") as info:
        checked.read_array(path, digest, "a")
    assert info.value.reason == "checksum"
    path.write_bytes(raw[: len(raw) // 2])  # truncated
    with pytest.raises(CheckedFileCorrupt, match="sha256"):
        checked.read_array(path, digest, "a")
    path.write_bytes(raw)
    with pytest.raises(CheckedFileCorrupt, match=r"the manifest says int32\[100\]") as info:
        checked.read_array(path, digest, "a", dtype=np.dtype("int32"), length=100)
    assert info.value.reason == "array"
    with pytest.raises(CheckedFileCorrupt, match=r"float64\[99\]"):
        checked.read_array(path, digest, "a", dtype=np.dtype("float64"), length=99)
    path.write_bytes(b"not numpy at all")
    with pytest.raises(CheckedFileCorrupt, match="not a numpy array"):
        checked.read_array(path, checked.sha256_hex(b"not numpy at all"), "a")


def test_a_pickled_array_is_refused_even_with_its_checksum(tmp_path: Path) -> None:
    buf = io.BytesIO()
    np.save(buf, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    path = tmp_path / "a.npy"
    path.write_bytes(buf.getvalue())
    with pytest.raises(CheckedFileCorrupt, match="not a numpy array") as info:
        checked.read_array(path, checked.sha256_hex(buf.getvalue()), "a")
    assert info.value.reason == "array"


# ---------------------------------------------------------------------------------- open loop
class Gone(WebsiftError):
    pass


MANIFEST_FMT = checked.Format("websift-test-manifest", 1, "test manifest")


def publish(directory: Path, generation: int) -> None:
    """A writer: the generation's file, then the manifest naming it, then the old file swept."""
    (directory / f"data-{generation}").write_text(f"payload {generation}")
    checked.write_json(directory / "manifest.json", MANIFEST_FMT,
                       {"generation": generation, "file": f"data-{generation}"})
    for old in directory.glob("data-*"):
        if old.name != f"data-{generation}":
            old.unlink()


def read(directory: Path) -> dict[str, Any]:
    return checked.read_json(directory / "manifest.json", MANIFEST_FMT).body


def opener(directory: Path, writes_meanwhile: list[int], opened: list[int]) -> Any:
    """Open what a manifest names; before the first ``len(writes_meanwhile)`` opens a writer
    publishes the next generation (sweeping the file the reader is about to read)."""

    def open_named(manifest: dict[str, Any]) -> str:
        opened.append(int(manifest["generation"]))
        if writes_meanwhile:
            publish(directory, writes_meanwhile.pop(0))
        try:
            return (directory / str(manifest["file"])).read_text()
        except FileNotFoundError:
            raise Gone(f"{manifest['file']} is gone") from None

    return open_named


def test_open_consistent_follows_a_manifest_that_moved(tmp_path: Path) -> None:
    publish(tmp_path, 1)
    opened: list[int] = []
    got = checked.open_consistent(lambda: read(tmp_path), opener(tmp_path, [2, 3], opened),
                                  generation=lambda m: m["generation"], retry_on=Gone)
    assert got == "payload 3" and opened == [1, 2, 3]


def test_open_consistent_gives_up_after_its_attempts(tmp_path: Path) -> None:
    publish(tmp_path, 1)
    opened: list[int] = []
    with pytest.raises(Gone, match="data-2 is gone"):
        checked.open_consistent(lambda: read(tmp_path), opener(tmp_path, [2, 3], opened),
                                generation=lambda m: m["generation"], retry_on=Gone,
                                attempts=2)
    assert opened == [1, 2]


def test_open_consistent_raises_a_real_failure_at_once(tmp_path: Path) -> None:
    publish(tmp_path, 1)
    (tmp_path / "data-1").unlink()  # damaged, and nobody is writing
    opened: list[int] = []
    with pytest.raises(Gone, match="data-1 is gone"):
        checked.open_consistent(lambda: read(tmp_path), opener(tmp_path, [], opened),
                                generation=lambda m: m["generation"], retry_on=Gone)
    assert opened == [1]
    # the manifest itself damaged meanwhile: the failure found is the one reported
    publish(tmp_path, 1)
    (tmp_path / "data-1").unlink()

    def open_and_damage(manifest: dict[str, Any]) -> str:
        (tmp_path / "manifest.json").write_text("{")
        return opener(tmp_path, [], opened)(manifest)  # type: ignore[no-any-return]

    with pytest.raises(Gone, match="data-1 is gone"):
        checked.open_consistent(lambda: read(tmp_path), open_and_damage,
                                generation=lambda m: m["generation"], retry_on=Gone)
    # other errors are not retried
    with pytest.raises(CheckedFileCorrupt):
        checked.open_consistent(lambda: read(tmp_path), opener(tmp_path, [], opened),
                                generation=lambda m: m["generation"], retry_on=Gone)
