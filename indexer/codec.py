"""Postings compression: delta coding plus fixed-width bit-packing per block, in numpy.

A stream is a list of groups (one group per term: its doc deltas, its tf matrix, or its
positions).  Every group is cut into blocks of ``BLOCK`` values; each block gets the bit width
of its largest value, and its values are packed at that width, little-endian bit order.  Each
group starts on a byte boundary, so a reader decodes one term with: its byte range, the index of
its first block in the widths array, and its number of values.

Encoding and decoding are vectorised over all values of a chunk (no Python loop per value or per
term): this is the "byte- or bit-packed code" of the issue, in the spirit of PForDelta/SIMD-BP128
without the exceptions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from websift.core.distinct import distinct_small
from websift.indexer.settings import BLOCK, ENCODE_CHUNK_VALUES

_WEIGHTS = [np.left_shift(np.uint32(1), np.arange(w, dtype=np.uint32)) for w in range(33)]
_WEIGHTS_F = [w.astype(np.float64) for w in _WEIGHTS]


@dataclass
class Encoded:
    data: np.ndarray  # uint8: the packed bits of every group, each group byte-aligned
    widths: np.ndarray  # uint8: one bit width per block
    byte_offsets: np.ndarray  # int64, groups + 1: group g is data[byte_offsets[g]:byte_offsets[g+1]]
    block_offsets: np.ndarray  # int64, groups + 1: group g's blocks start at widths[block_offsets[g]]


def bit_length(values: np.ndarray) -> np.ndarray:
    """Bits needed for each non-negative value (0 for 0), as uint8."""
    v = values.astype(np.float64)
    _, exp = np.frexp(v)
    return np.where(v > 0, exp, 0).astype(np.uint8)


def _exclusive_cumsum(a: np.ndarray) -> np.ndarray:
    out = np.zeros(len(a), dtype=np.int64)
    if len(a) > 1:
        np.cumsum(a[:-1], out=out[1:])
    return out


def _encode_chunk(values: np.ndarray, lengths: np.ndarray) -> Encoded:
    """Bit-pack one chunk.  A full block (``BLOCK`` values of ``w`` bits) is ``BLOCK // 8 * w``
    bytes, so every block starts on a byte: blocks are packed independently, all blocks of one
    width at once (octets of 8 values as 64-bit lanes: :func:`_pack_lanes`), and copied to
    their byte offsets.  A full block's octets are read straight from its contiguous values;
    a group's last, partial block is padded to whole octets and takes the bytes its bits need.
    Scratch: a few bytes per bit."""
    n = len(values)
    lengths = lengths.astype(np.int64)
    gstart = _exclusive_cumsum(lengths)
    nblocks = (lengths + BLOCK - 1) // BLOCK
    bstart = _exclusive_cumsum(nblocks)
    n_blocks = int(nblocks.sum())
    if n == 0:
        zeros = np.zeros(len(lengths) + 1, dtype=np.int64)
        return Encoded(np.zeros(0, np.uint8), np.zeros(0, np.uint8), zeros, zeros.copy())
    # Block b of the chunk: its first value and its count.
    has = nblocks > 0
    gfirst_block = np.repeat(gstart[has], nblocks[has])
    within = np.arange(n_blocks, dtype=np.int64) - np.repeat(bstart[has], nblocks[has])
    first = gfirst_block + within * BLOCK
    g_of_block = np.repeat(np.flatnonzero(has), nblocks[has])
    cnt = np.minimum(BLOCK, gstart[g_of_block] + lengths[g_of_block] - first)
    widths = bit_length(np.maximum.reduceat(values, first))
    w64 = widths.astype(np.int64)
    bsize = (cnt * w64 + 7) // 8
    boff = _exclusive_cumsum(bsize)
    total_bytes = int(bsize.sum())
    data = np.zeros(total_bytes, dtype=np.uint8)
    v32: np.ndarray | None = None
    eight = np.arange(8, dtype=np.int64)
    full = cnt == BLOCK
    for w in distinct_small(widths).tolist():
        if w == 0:
            continue
        # Full blocks (most values): each block's values are contiguous, packed straight from
        # them as BLOCK // 8 octets of 8, and take exactly BLOCK // 8 * w bytes.
        at_w = widths == w
        sel = np.flatnonzero(at_w & full)
        if len(sel):
            starts = (first[sel][:, None]
                      + np.arange(0, BLOCK, 8, dtype=np.int64)[None, :]).ravel()
            packed = _pack_lanes([values[j:][starts] for j in range(8)], w)
            dest = boff[sel][:, None] + np.arange(BLOCK // 8 * w, dtype=np.int64)[None, :]
            data[dest.ravel()] = packed
        sel = np.flatnonzero(at_w & ~full)
        if not len(sel):
            continue
        if v32 is None:
            v32 = values.astype(np.uint32)
        # The partial blocks of width w as octets of values (8 values of w bits = w bytes, so
        # a block padded to whole octets stays byte-aligned); a block keeps the bytes its bits
        # need.
        octs = (cnt[sel] + 7) // 8
        n_oct = int(octs.sum())
        o_block = np.repeat(np.arange(len(sel), dtype=np.int64), octs)
        o_within = np.arange(n_oct, dtype=np.int64) - np.repeat(_exclusive_cumsum(octs), octs)
        lane = o_within[:, None] * 8 + eight[None, :]
        live = lane < cnt[sel][o_block][:, None]
        idx = np.where(live, first[sel][o_block][:, None] + lane, 0)
        vals = np.where(live, v32[idx], np.uint32(0))
        del idx, lane
        packed = _pack_octets(vals, w)
        # Byte k of the block's packed octets goes to boff + k when k < the block's size.
        nbytes_blk = octs * w
        k = np.arange(len(packed), dtype=np.int64) - np.repeat(
            _exclusive_cumsum(nbytes_blk), nbytes_blk)
        blk = np.repeat(np.arange(len(sel), dtype=np.int64), nbytes_blk)
        keep = k < bsize[sel][blk]
        data[boff[sel][blk[keep]] + k[keep]] = packed[keep]
    gbytes = np.zeros(len(lengths), dtype=np.int64)
    if n_blocks:
        gbytes[has] = np.add.reduceat(bsize, bstart[has])
    byte_offsets = np.append(_exclusive_cumsum(gbytes), total_bytes)
    block_offsets = np.append(bstart, n_blocks)
    return Encoded(data, widths, byte_offsets, block_offsets)


def narrow(values: np.ndarray) -> np.ndarray:
    """The same non-negative integers in the smallest unsigned type that holds them: what a
    run hands its bit-packing processes (a stream's tf matrix is mostly zeros and ones, six per
    posting; as int64 it was most of the bytes pickled through their pipes)."""
    top = int(values.max()) if values.size else 0
    for kind in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(kind).max:
            return values.astype(kind)
    return values.astype(np.uint64)


def _pack_octets(vals: np.ndarray, w: int) -> np.ndarray:
    """Rows of 8 values of at most ``w`` bits (an (n, 8) array) as ``w`` bytes each,
    concatenated: value j at bits j*w ... j*w + w - 1 of its row read as one little-endian
    integer, which is what ``packbits(bitorder="little")`` of the values' bits in order makes."""
    return _pack_lanes([vals[:, j] for j in range(8)], w)


def _pack_lanes(cols: list[np.ndarray], w: int) -> np.ndarray:
    """:func:`_pack_octets` of the rows whose value j is ``cols[j][row]``.  Built as 64-bit
    lanes by 8 shifts and ors, a value crossing a lane split in two, instead of w passes
    cutting out one bit plane each (the inverse of the decoder's word reads)."""
    n = len(cols[0])
    lanes = [np.zeros(n, dtype=np.uint64) for _ in range((8 * w + 63) // 64)]
    for j in range(8):
        v = cols[j].astype(np.uint64)
        lane, shift = divmod(j * w, 64)
        lanes[lane] |= v << np.uint64(shift)
        if shift + w > 64:
            lanes[lane + 1] |= v >> np.uint64(64 - shift)
    rows = np.stack(lanes, axis=1).astype("<u8", copy=False).view(np.uint8)
    return rows[:, :w].ravel()


def encode(values: np.ndarray, lengths: np.ndarray) -> Encoded:
    """Bit-pack ``values`` (non-negative, < 2**32) cut into groups of ``lengths``.  Unsigned
    values are packed in their own type (:func:`narrow`), others as uint64."""
    values = np.ascontiguousarray(values)
    if values.dtype.kind != "u":
        values = values.astype(np.uint64)
    lengths = np.asarray(lengths, dtype=np.int64)
    if len(lengths) == 0:
        z = np.zeros(1, dtype=np.int64)
        return Encoded(np.zeros(0, np.uint8), np.zeros(0, np.uint8), z, z.copy())
    ends = np.cumsum(lengths)
    parts: list[Encoded] = []
    g = 0
    while g < len(lengths):
        start = int(ends[g - 1]) if g else 0
        # As many groups as fit in one chunk (at least one, however large).
        g_end = max(g + 1, int(np.searchsorted(ends, start + ENCODE_CHUNK_VALUES, side="right")))
        stop = int(ends[g_end - 1])
        parts.append(_encode_chunk(values[start:stop], lengths[g:g_end]))
        g = g_end
    if len(parts) == 1:
        return parts[0]
    byte_offsets = [parts[0].byte_offsets[:-1]]
    block_offsets = [parts[0].block_offsets[:-1]]
    nbytes, nblocks = int(parts[0].byte_offsets[-1]), int(parts[0].block_offsets[-1])
    for p in parts[1:]:
        byte_offsets.append(p.byte_offsets[:-1] + nbytes)
        block_offsets.append(p.block_offsets[:-1] + nblocks)
        nbytes += int(p.byte_offsets[-1])
        nblocks += int(p.block_offsets[-1])
    return Encoded(
        np.concatenate([p.data for p in parts]),
        np.concatenate([p.widths for p in parts]),
        np.append(np.concatenate(byte_offsets), nbytes),
        np.append(np.concatenate(block_offsets), nblocks),
    )


def _words_at(buf: np.ndarray, offs: np.ndarray) -> np.ndarray:
    """The little-endian uint64 starting at each byte offset ``offs`` of ``buf`` (bytes past
    its end read as 0): one gather through an unaligned, overlapping view of ``buf`` (stride 1
    byte), not eight gathers per value."""
    buf = np.ascontiguousarray(buf, dtype=np.uint8)
    size = len(buf)
    inside = size - 8  # the last offset whose 8 bytes are all in buf
    if len(offs) and inside >= 0 and int(offs.max()) <= inside:
        view = np.ndarray((inside + 1,), dtype="<u8", buffer=buf, strides=(1,))
        return view[offs]
    out = np.zeros(len(offs), dtype=np.uint64)
    ok = offs <= inside
    if ok.any():
        view = np.ndarray((inside + 1,), dtype="<u8", buffer=buf, strides=(1,))
        out[ok] = view[offs[ok]]
    tail = ~ok & (offs < size)
    if tail.any():  # the last few values: from a zero-padded copy of the last bytes
        start = max(inside + 1, 0)
        pad = np.zeros(16, dtype=np.uint8)
        pad[: size - start] = buf[start:]
        out[tail] = np.ndarray((9,), dtype="<u8", buffer=pad, strides=(1,))[offs[tail] - start]
    return out


def _unpack(buf: np.ndarray, n: int, width: int) -> np.ndarray:
    """``n`` values of ``width`` bits packed little-endian at the start of ``buf``."""
    if width == 0:
        return np.zeros(n, dtype=np.uint32)
    bits = np.unpackbits(buf[: (n * width + 7) // 8], bitorder="little")[: n * width]
    # A float64 product runs in BLAS and is exact here (values < 2**32).
    return (bits.reshape(n, width) @ _WEIGHTS_F[width]).astype(np.uint32)


def decode(data: np.ndarray, widths: np.ndarray, byte0: int, byte1: int, *, block0: int,
           n: int) -> np.ndarray:
    """The ``n`` values of one group (uint32).

    One block, or one width for the whole group: a reshape and a product; otherwise the blocks
    of each width are unpacked together (:func:`_unpack_blocks`).
    """
    if n == 0:
        return np.zeros(0, dtype=np.uint32)
    nblocks = (n + BLOCK - 1) // BLOCK
    buf = np.asarray(data[byte0:byte1])
    wb = np.asarray(widths[block0 : block0 + nblocks])
    if nblocks == 1:
        return _unpack(buf, n, int(wb[0]))
    return _unpack_blocks(buf, wb, n)


# The shifts of the eight values of ``w`` bits in an octet group (``w`` bytes) read as one word.
_OCTET_SHIFTS = {w: np.arange(8, dtype=np.uint64 if w > 4 else np.uint32) * w
                 for w in range(1, 9)}
_OCTET_OFFSETS = {w: np.arange(BLOCK // 8, dtype=np.int64) * w for w in range(1, 9)}


def _unpack_blocks(buf: np.ndarray, wb: np.ndarray, n: int) -> np.ndarray:
    """The ``n`` values of consecutive blocks of widths ``wb`` packed in ``buf``.  A full block
    is ``BLOCK // 8 * w`` bytes: eight values of ``w`` bits are exactly ``w`` bytes (an octet
    group), so for ``w <= 8`` each octet group is read as one little-endian word (uint32 up to
    four bytes, else uint64, through an overlapping view of the bytes) and cut by eight
    shifts, all blocks of one width at once; wider blocks read each value from the 64-bit word
    at its bit offset.  The last, partial block has only the bytes its values need: bytes read
    past them land in values past ``n``, which are dropped."""
    w64 = wb.astype(np.int64)
    size = (BLOCK // 8) * w64
    start = np.cumsum(size) - size
    # Zeros after the bytes, as many as the last block could read past them (a full block).
    pad = (BLOCK // 8) * int(wb[-1]) + 8
    padded = np.zeros(len(buf) + pad, dtype=np.uint8)
    padded[: len(buf)] = buf
    u32 = np.ndarray((len(padded) - 3,), dtype="<u4", buffer=padded, strides=(1,))
    u64 = np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))
    out = np.empty((len(wb), BLOCK), dtype=np.uint32)
    uniq = distinct_small(wb).tolist()
    for width in uniq:
        rows = np.flatnonzero(wb == width) if len(uniq) > 1 else slice(None)
        first = start[rows]
        if width == 0:
            out[rows] = 0
        elif width <= 8:
            at = (first[:, None] + _OCTET_OFFSETS[width]).ravel()
            shifts = _OCTET_SHIFTS[width]
            words = (u32 if width <= 4 else u64)[at][:, None]
            vals = (words >> shifts) & shifts.dtype.type((1 << width) - 1)
            out[rows] = vals.reshape(-1, BLOCK)
        else:
            off = (first[:, None] * 8 + np.arange(BLOCK, dtype=np.int64) * width).ravel()
            words = u64[off >> 3]
            words >>= (off & 7).astype(np.uint64)
            words &= np.uint64((1 << width) - 1)
            out[rows] = words.reshape(-1, BLOCK)
    return out.reshape(-1)[:n]


def block_bits(widths: np.ndarray, byte0: int, *, block0: int, n: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """(width, bit offset of the first value from the group's first byte ``byte0``) of each
    block of one group of ``n`` values: a full block is ``BLOCK // 8 * w`` bytes, so the
    offsets are a cumulative sum over the group's widths (what :func:`decode_at` needs; a
    caller reading one group many times keeps it: five bytes a block, the widths uint8 and
    the offsets uint32 for a group of fewer than 2**27 values, under 2**32 bits)."""
    nblocks = (n + BLOCK - 1) // BLOCK
    wb = np.array(widths[block0 : block0 + nblocks], dtype=np.uint8)  # a copy, not a view
    size = (BLOCK // 8 * 8) * wb.astype(np.int64)
    bits = np.cumsum(size) - size
    return wb, bits.astype(block_bits_type(n), copy=False)


def block_bits_type(n: int) -> type[np.integer]:
    """The type of :func:`block_bits`' offsets for a group of ``n`` values: uint32 while its
    bits (at most 32 a value) stay under 2**32, else int64."""
    return np.uint32 if n * 32 < 2**32 else np.int64


def decode_at(data: np.ndarray, widths: np.ndarray, byte0: int, *, block0: int, n: int,
              idx: np.ndarray, blocks: tuple[np.ndarray, np.ndarray] | None = None
              ) -> np.ndarray:
    """Values ``idx`` (indices into the group) of one group of ``n`` values (uint64), without
    decoding the others: a value's bit offset is its block's (:func:`block_bits`, or
    ``blocks`` if the caller kept them) plus its index in the block times the block's
    width."""
    idx = np.asarray(idx, dtype=np.int64)
    if len(idx) == 0 or len(data) == 0:
        return np.zeros(len(idx), dtype=np.uint64)
    wb, block_bit = blocks if blocks is not None else block_bits(widths, byte0, block0=block0,
                                                                 n=n)
    bi = idx // BLOCK
    w = wb[bi].astype(np.int64)
    off = block_bit[bi].astype(np.int64) + (byte0 * 8 + (idx % BLOCK) * w)
    words = _words_at(np.asarray(data), off >> 3)
    mask = (np.uint64(1) << w.astype(np.uint64)) - np.uint64(1)
    return (words >> (off & 7).astype(np.uint64)) & mask


def delta_encode_groups(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Differences inside each group; a group's first value is kept as is."""
    values = values.astype(np.int64)
    out = np.diff(values, prepend=0)
    starts = _exclusive_cumsum(lengths)[np.asarray(lengths) > 0]
    out[starts] = values[starts]
    return out


def delta_decode_groups(deltas: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Inverse of :func:`delta_encode_groups`."""
    cs = np.cumsum(deltas.astype(np.int64))
    lengths = np.asarray(lengths, dtype=np.int64)
    # The groups that hold values only (a word's (document, field) groups are mostly empty):
    # each one's values less the running sum before it.
    held = lengths[lengths > 0]
    starts = _exclusive_cumsum(held)
    before = np.zeros(len(held), dtype=np.int64)
    before[1:] = cs[starts[1:] - 1]
    return cs - np.repeat(before, held)


def decode_groups(data: np.ndarray, widths: np.ndarray, byte0: np.ndarray, block0: np.ndarray,
                  ns: np.ndarray) -> np.ndarray:
    """The values of many groups at once, concatenated (uint64): a segment merge reads whole
    streams this way, with no Python loop per term."""
    ns = np.asarray(ns, dtype=np.int64)
    nb = (ns + BLOCK - 1) // BLOCK
    n_blocks = int(nb.sum())
    if n_blocks == 0:
        return np.zeros(0, dtype=np.uint64)
    gfirst = _exclusive_cumsum(nb)
    blk = np.repeat(np.asarray(block0, dtype=np.int64), nb) + (
        np.arange(n_blocks, dtype=np.int64) - np.repeat(gfirst, nb))
    w = np.asarray(widths)[blk].astype(np.int64)
    cnt = np.full(n_blocks, BLOCK, dtype=np.int64)
    has = nb > 0
    cnt[(gfirst + nb - 1)[has]] = ns[has] - BLOCK * (nb[has] - 1)
    size = (BLOCK // 8) * w  # bytes of a full block: every block starts on a byte
    cs = np.append(_exclusive_cumsum(size), int(size.sum()))
    blk_byte = np.repeat(np.asarray(byte0, dtype=np.int64) - cs[gfirst], nb) + cs[:-1]
    vb = np.repeat(np.arange(n_blocks, dtype=np.int64), cnt)
    j = np.arange(len(vb), dtype=np.int64) - np.repeat(_exclusive_cumsum(cnt), cnt)
    wv = w[vb]
    if len(data) == 0:  # every width is 0
        return np.zeros(len(vb), dtype=np.uint64)
    off = blk_byte[vb] * 8 + j * wv
    words = _words_at(np.asarray(data), off >> 3)
    mask = (np.uint64(1) << wv.astype(np.uint64)) - np.uint64(1)
    return (words >> (off & 7).astype(np.uint64)) & mask
