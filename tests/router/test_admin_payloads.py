"""The admin space's payloads from plain data, in the shapes of a real 1.10.2 router:
``adminspace`` configuration, ``@/<zid>/router``, entity sources, linkstate graphs,
metrics (``pyzenoh.router.admin``'s config, router_info, entities, dot, metrics).
"""

from __future__ import annotations

import gzip
import json

import pytest

from pyzenoh.codec import WhatAmI
from pyzenoh.errors import UsageError
from pyzenoh.router.admin import (
    METRICS_ENCODING,
    SessionInfo,
    admin_enabled,
    dot_graph,
    entity_sources,
    metrics_payload,
    metrics_text,
    parse_parameters,
    router_json,
    stats_families,
)
from pyzenoh.router.daemon import RouterStats
from pyzenoh.routing import RoutingStats
from tests.router.admin_measured import (
    C1,
    C2,
    MEASURED_DOT_ALONE,
    MEASURED_DOT_PAIR,
    MEASURED_GZIP_HEADER,
    MEASURED_METRICS,
    MEASURED_METRICS_NO_DESCRIPTORS,
    B,
    P,
    R,
)


def test_admin_enabled_by_default_like_zenohd() -> None:
    assert admin_enabled({}) is True
    assert admin_enabled({"adminspace": {}}) is True
    assert admin_enabled({"adminspace": {"enabled": None}}) is True
    assert admin_enabled({"adminspace": {"enabled": True}}) is True
    assert admin_enabled({"adminspace": {"enabled": False, "permissions": {"read": True}}}) is False
    with pytest.raises(UsageError):
        admin_enabled({"adminspace": {"enabled": "no"}})
    with pytest.raises(UsageError):
        admin_enabled({"adminspace": []})


def test_router_json_has_zenohd_layout() -> None:
    sessions = [
        SessionInfo(P, WhatAmI.PEER, (("tcp/127.0.0.1:45083", "tcp/127.0.0.1:58608"),)),
        SessionInfo(C2, WhatAmI.CLIENT, (("tcp/127.0.0.1:45083", "tcp/127.0.0.1:58596"),)),
        SessionInfo(B, WhatAmI.ROUTER, (("tcp/127.0.0.1:36106", "tcp/127.0.0.1:33515"),)),
    ]
    got = router_json(R, ["tcp/127.0.0.1:45083"], sessions, version="v1.10.2-x")
    # The real router's bytes for the same sessions (shm true there: pyzenoh has no shm).
    expected = (
        '{"locators":["tcp/127.0.0.1:45083"],"metadata":null,"plugins":null,"sessions":['
        '{"links":[{"dst":"tcp/127.0.0.1:58608","src":"tcp/127.0.0.1:45083"}],'
        f'"peer":"{P}","region":"south:0:peer","shm":false,"weight":null,"whatami":"peer"}},'
        '{"links":[{"dst":"tcp/127.0.0.1:58596","src":"tcp/127.0.0.1:45083"}],'
        f'"peer":"{C2}","region":"south:0:client","shm":false,"weight":null,"whatami":"client"}},'
        '{"links":[{"dst":"tcp/127.0.0.1:33515","src":"tcp/127.0.0.1:36106"}],'
        f'"peer":"{B}","region":"north","shm":false,'
        '"weight":{"actual_weight":100,"dst_weight":null,"src_weight":null},"whatami":"router"}],'
        f'"version":"v1.10.2-x","zid":"{R}"}}'
    )
    assert got.decode() == expected
    meta = json.loads(router_json(R, [], [], metadata={"name": "edge"}))
    assert meta["metadata"] == {"name": "edge"} and meta["sessions"] == []
    assert meta["version"].startswith("v1.10.2-pyzenoh-")


def test_entity_sources_single_router() -> None:
    local = [
        ("dup/k", WhatAmI.CLIENT, C1),
        ("dup/k", WhatAmI.CLIENT, C1),  # two subscribers of one client: listed once
        ("dup/k", WhatAmI.PEER, P),
        ("dup/k", WhatAmI.CLIENT, C2),
        ("demo/q", WhatAmI.CLIENT, C2),
    ]
    got = entity_sources(R, local)
    # Measured: the router lists itself once per region (clients, peers) holding the key.
    assert got == {
        "demo/q": {"routers": [R], "peers": [], "clients": [C2]},
        "dup/k": {"routers": [R, R], "peers": [P], "clients": [C1, C2]},
    }
    assert list(got["dup/k"]) == ["routers", "peers", "clients"]  # struct order, not sorted
    assert entity_sources(R, [("demo/pub", WhatAmI.PEER, P)], north_source=False) == {
        "demo/pub": {"routers": [], "peers": [P], "clients": []}
    }


def test_entity_sources_mesh() -> None:
    remote = {
        "demo/s": [B, R],  # held by the other router and by us: we come after it
        "demo/onlyb": [B],
        f"@/{B}/router/**": [B],  # admin spaces are never listed
        f"@/{B}/router/config/**": [B],
        "demo/ours": [R],  # only our own: nothing from the mesh
    }
    got = entity_sources(R, [("demo/s", WhatAmI.CLIENT, C1)], remote)
    assert got == {
        "demo/onlyb": {"routers": [B], "peers": [], "clients": []},
        "demo/s": {"routers": [B, R], "peers": [], "clients": [C1]},
    }


def test_dot_graph_is_petgraph_text() -> None:
    assert dot_graph([R]) == MEASURED_DOT_ALONE
    assert dot_graph([B, "4ac5dab1d534e84b0f52ba8bebc83554"], [(1, 0, 100.56779317314918)]) == MEASURED_DOT_PAIR
    assert '1 -- 0 [ label = "100" ]' in dot_graph(["a", "b"], [(1, 0, 100.0)])


def test_metrics_text_is_zenohd_text_then_pyzenoh_families() -> None:
    z, v = R, "v1.10.2-x"
    assert metrics_text(z, version=v) == MEASURED_METRICS.format(Z=z, V=v)
    assert metrics_text(z, version=v, descriptors=False) == MEASURED_METRICS_NO_DESCRIPTORS.format(Z=z, V=v)
    stats = RouterStats(links_accepted=3, by_reason={"GENERIC": 2})
    text = metrics_text(z, stats_families("pyzenoh_router", stats), version=v)
    assert text.startswith(MEASURED_METRICS.format(Z=z, V=v).removesuffix("# EOF\n "))
    assert text.endswith("\n# EOF\n ")
    assert "# TYPE pyzenoh_router_links_accepted counter\npyzenoh_router_links_accepted_total 3\n" in text
    assert 'pyzenoh_router_links_closed_by_reason_total{reason="GENERIC"} 2\n' in text
    bare = metrics_text(z, stats_families("pyzenoh_router", stats), version=v, descriptors=False)
    assert not any(line.startswith("# ") for line in bare.splitlines()[:-1]) and bare.endswith("# EOF\n")


def test_metrics_payload_gzip_and_encoding() -> None:
    data, enc = metrics_payload("x\n")
    assert data[:10] == MEASURED_GZIP_HEADER and gzip.decompress(data) == b"x\n"
    assert str(enc) == METRICS_ENCODING + ";content-encoding=gzip"
    assert (enc.id, enc.schema) == (15, b" version=1.0.0; charset=utf-8;content-encoding=gzip")  # as on the wire
    data, enc = metrics_payload("x\n", compression=False)
    assert data == b"x\n" and str(enc) == METRICS_ENCODING


def test_stats_families_cover_every_counter() -> None:
    names = {f.name for f in stats_families("pyzenoh_routing", RoutingStats(dropped={"unknown key id": 4}))}
    assert {"pyzenoh_routing_pushes_routed", "pyzenoh_routing_dropped", "pyzenoh_routing_query_timeouts"} <= names
    assert parse_parameters("compression=false;descriptors=false;compression=true") == {
        "compression": "false",
        "descriptors": "false",
    }
    assert parse_parameters("") == {}
