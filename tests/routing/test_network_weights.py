"""Edge weights (:mod:`pyzenoh.routing.network.weights`): SipHash-1-3 against reference
vectors, the weights real 1.10.2 routers printed, and configured link weights."""

from __future__ import annotations

import pytest

from pyzenoh.routing.network import edge_weight_of, siphash
from tests.routing.network_helpers import (
    MEASURED_WEIGHTS,
    Mesh,
    Z,
    check_trees,
    states,
    weights_by_pair,
)

#: SipHash-2-4 reference vectors (key 00..0f, message 00..len-1), from the SipHash paper.
SIPHASH24 = [
    0x726FDB47DD0E0E31,
    0x74F839C593DC67FD,
    0x0D6C8009D9A94F5A,
    0x85676696D7FB7E2D,
    0xCF2794E0277187B7,
    0x18765564CD99A68D,
    0xCBC9466E58FEE3CE,
    0xAB0200F58B01D137,
    0x93F5F5799A932462,
    0x9E0082DF0BA9E4B0,
    0x7A5DBBC594DDB9F3,
    0xF4B32F46226BADA7,
    0x751E8FBC860EE5FB,
    0x14EA5627C0843D90,
    0xF723CA908E7AF2EE,
    0xA129CA6149BE45E5,
    0x3F2ACC7F57C29BDB,
    0x699AE9F52CBE4794,
    0x4BC1B3F0968DD39C,
    0xBB6DC91DA77961BD,
    0xBED65CF21AA2EE98,
    0xD0F2CBB02E3B67C7,
    0x93536795E3A33E88,
    0xA80C038CCD5CCEC8,
    0xB8AD50C6F649AF94,
    0xBCE192DE8A85B8EA,
    0x17D835B85BBB15F3,
    0x2F2E6163076BCFAD,
    0xDE4DAAACA71DC9A5,
    0xA6A2506687956571,
    0xAD87A3535C49EF28,
    0x32D892FAD841C342,
    0x7127512F72F27CCE,
    0xA7F32346F95978E3,
    0x12E0B01ABB051238,
    0x15E034D40FA197AE,
    0x314DFFBE0815A3B4,
    0x027990F029623981,
    0xCADCD4E59EF40C4D,
    0x9ABFD8766A33735C,
    0x0E3EA96B5304A7D0,
    0xAD0C42D6FC585992,
    0x187306C89BC215A9,
    0xD4A60ABCF3792B95,
    0xF935451DE4F21DF2,
    0xA9538F0419755787,
    0xDB9ACDDFF56CA510,
    0xD06C98CD5C0975EB,
    0xE612A3CB9ECBA951,
    0xC766E62CFCADAF96,
    0xEE64435A9752FE72,
    0xA192D576B245165A,
    0x0A8787BF8ECB74B2,
    0x81B3E73D20B49B6F,
    0x7FA8220BA3B2ECEA,
    0x245731C13CA42499,
    0xB78DBFAF3A8D83BD,
    0xEA1AD565322A1A0B,
    0x60E61C23A3795013,
    0x6606D7E446282B93,
    0x6CA4ECB15C5F91E1,
    0x9F626DA15C9625F3,
    0xE51B38608EF25F57,
    0x958A324CEB064572,
]


def test_siphash_24_reference_vectors() -> None:
    key = bytes(range(16))
    for n, expected in enumerate(SIPHASH24):
        assert siphash(bytes(range(n)), key, 2, 4) == expected, n


@pytest.mark.parametrize(
    ("data", "key", "expected"),
    [
        # Rust's DefaultHasher::default() with nothing written; the same values are published
        # by the digest-sip_hash (Ruby) and starlark test suites
        (b"", bytes(16), 0xD1FBA762150C532C),
        (b"", bytes(range(16)), 0xABAC0158050FC4DC),
        (b"test", bytes(16), 0xE0969DA9B8FB378D),
        (b"siphash", bytes(16), 0x8264CEECCB16BCBE),
        (b"digest-sip_hash", bytes(16), 0xCE31007E34130C0A),
        (b"x" * 1000, bytes(16), 0x1B47C0CC4DD21F05),
    ],
)
def test_siphash_13_vectors(data: bytes, key: bytes, expected: int) -> None:
    assert siphash(data, key) == expected


@pytest.mark.parametrize(("pair", "printed"), list(MEASURED_WEIGHTS.items()))
def test_edge_weight_matches_real_routers(pair: tuple[str, str], printed: str) -> None:
    a, b = pair
    assert repr(edge_weight_of(Z(a), Z(b))) == printed
    assert edge_weight_of(Z(b), Z(a)) == edge_weight_of(Z(a), Z(b))


def test_edge_weight_uses_the_larger_announced_weight() -> None:
    base = edge_weight_of(Z("a1"), Z("b2")) / 100
    assert edge_weight_of(Z("a1"), Z("b2"), 200, 0) == 200 * base
    assert edge_weight_of(Z("a1"), Z("b2"), 0, 7) == 7 * base
    assert edge_weight_of(Z("a1"), Z("b2"), 50, 300) == 300 * base


def test_configured_weights_are_announced_and_used() -> None:
    m = Mesh()
    a = m.add("a1", link_weights={Z("b2"): 500})
    b = m.add("b2")
    m.add("c3")
    m.connect("b2", "a1")
    m.connect("c3", "a1")
    m.connect("c3", "b2")
    first = states(m.sent("a1", "b2")[0])
    assert first[0].weights == (500,)
    w = edge_weight_of(Z("a1"), Z("b2"), 500, 0)
    for net in m.nets.values():
        assert weights_by_pair(net)[frozenset((Z("a1"), Z("b2")))] == w
        check_trees(net)
    assert a.links_info()[Z("b2")] == (500, None, int(w))
    assert b.links_info()[Z("a1")] == (None, 500, int(w))
    assert b.links_info()[Z("c3")] == (None, None, 100)
    # a1 - b2 now costs 5x: traffic between them goes through c3
    assert a.direction(0, a.index_of(Z("b2"))) == a.index_of(Z("c3"))  # type: ignore[arg-type]
    assert b.direction(0, b.index_of(Z("a1"))) == b.index_of(Z("c3"))  # type: ignore[arg-type]
