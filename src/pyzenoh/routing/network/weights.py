"""Edge weights as zenohd computes them: the announced weight scaled by a SipHash-1-3
(Rust's ``DefaultHasher``) of the two zids, so that every router picks the same
shortest paths."""

from __future__ import annotations

from pyzenoh.codec.primitives import ZenohId

#: zenohd's default link weight (``LinkEdgeWeight::DEFAULT_LINK_WEIGHT``).
DEFAULT_LINK_WEIGHT = 100
_U32_MAX = 0xFFFF_FFFF
_U64_MASK = 0xFFFF_FFFF_FFFF_FFFF


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _U64_MASK


def _sipround(v0: int, v1: int, v2: int, v3: int) -> tuple[int, int, int, int]:
    v0 = (v0 + v1) & _U64_MASK
    v1 = _rotl(v1, 13) ^ v0
    v0 = _rotl(v0, 32)
    v2 = (v2 + v3) & _U64_MASK
    v3 = _rotl(v3, 16) ^ v2
    v0 = (v0 + v3) & _U64_MASK
    v3 = _rotl(v3, 21) ^ v0
    v2 = (v2 + v1) & _U64_MASK
    v1 = _rotl(v1, 17) ^ v2
    v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def siphash(data: bytes, key: bytes = bytes(16), c_rounds: int = 1, d_rounds: int = 3) -> int:
    """SipHash-c-d of ``data`` as a u64; the defaults are Rust's ``DefaultHasher::default()``
    (SipHash-1-3, key 0). ``Hasher::write`` calls just concatenate their bytes."""
    k0 = int.from_bytes(key[:8], "little")
    k1 = int.from_bytes(key[8:16], "little")
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573
    n = len(data)
    end = n - n % 8
    for i in range(0, end, 8):
        m = int.from_bytes(data[i : i + 8], "little")
        v3 ^= m
        for _ in range(c_rounds):
            v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
        v0 ^= m
    m = ((n & 0xFF) << 56) | int.from_bytes(data[end:], "little")
    v3 ^= m
    for _ in range(c_rounds):
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    v0 ^= m
    v2 ^= 0xFF
    for _ in range(d_rounds):
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


def edge_weight_of(zid1: ZenohId, zid2: ZenohId, w1: int = 0, w2: int = 0) -> float:
    """zenohd's weight of the edge between two nodes (``Network::update_edge``).

    ``w1``/``w2`` are the weights each end announces for the link (0: not set). The
    nominal weight (max of the set ones, else 100) is scaled by up to 1 % with a hash of
    the two zids so that equal-cost paths practically never tie: every router then picks
    the same shortest path whatever algorithm it runs.
    """
    lo, hi = sorted((zid1.value, zid2.value))
    h = siphash(lo.to_bytes(16, "little") + hi.to_bytes(16, "little"))
    set_weights = [w for w in (w1, w2) if w]
    w = max(set_weights) if set_weights else DEFAULT_LINK_WEIGHT
    return float(w) * (1.0 + 0.01 * (float(h & _U32_MAX) / float(_U32_MAX)))
