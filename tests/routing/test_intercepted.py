"""The interceptors in the routing core (:mod:`pyzenoh.routing.intercepted`): a route no
policy restricts costs nothing and stays on the fast lanes; a restricted one drops,
rewrites QoS per destination and reports every drop; unsupported items are refused."""

from __future__ import annotations

from typing import Any

import pytest

from pyzenoh.codec import Push, WhatAmI, ZenohId
from pyzenoh.codec.network import QOS_BLOCK, QOS_BLOCK_FIRST, QOS_DEFAULT, QOS_EXPRESS, Priority, qos_value
from pyzenoh.errors import UsageError
from pyzenoh.interceptors import FaceAttrs, Interceptors, Rewrite
from pyzenoh.router.config import config_from_dict
from pyzenoh.routing import RoutingCore
from pyzenoh.routing.intercepted import rewritten_qos
from tests.routing.support import ROUTER_ZID, d_qabl, d_sub, put, request

NOW = 1000.0
TREE: dict[str, Any] = {
    "downsampling": [{"id": "ds", "messages": ["put"], "rules": [{"key_expr": "ds/**", "freq": 1}]}],
    "low_pass_filter": [
        {"id": "lp", "flows": ["egress"], "messages": ["put"], "key_exprs": ["lp/**"], "size_limit": 3}
    ],
    "qos": {
        "network": [
            {"id": "q", "flows": ["egress"], "messages": ["put"], "key_exprs": ["q/**"], "overwrite": {"express": True}}
        ]
    },
}


def _core(tree: dict[str, Any] = TREE) -> RoutingCore:
    core = RoutingCore(ROUTER_ZID, interceptors=Interceptors.from_config(tree))
    for face in (1, 2):
        core.add_face(face, ZenohId(0xC0 + face), WhatAmI.CLIENT, NOW, link=FaceAttrs(face, "tcp", ("lo",)))
    core.handle(2, d_sub(1, "**"), NOW)
    return core


def _pushes(sends: list[Any]) -> list[Push]:
    return [s.message for s in sends if isinstance(s.message, Push)]


def test_a_key_no_item_touches_stays_on_the_fast_lanes() -> None:
    core = _core()
    core.handle(1, put("other/k"), NOW)
    route = core._pubsub.data_route(core._tables.faces[1], put("other/k").wire_expr, None)
    assert route.intercept is None and route.lanes
    touched = core._pubsub.data_route(core._tables.faces[1], put("ds/k").wire_expr, None)
    assert touched.intercept is not None and not touched.lanes


def test_downsampling_drops_and_reports() -> None:
    core = _core()
    out = [_pushes(core.handle(1, put("ds/a", b"x"), NOW + i * 0.1)) for i in range(12)]
    assert [len(o) for o in out] == [1] + [0] * 9 + [1, 0]
    dropped = core._tables.stats.dropped
    # one item with both flows: the source's ingress policy drops them first
    assert dropped == {"downsampling ds (ingress)": 10}


def test_low_pass_on_egress_and_qos_rewrite_per_destination() -> None:
    core = _core()
    assert _pushes(core.handle(1, put("lp/a", b"abcd"), NOW)) == []
    assert core._tables.stats.dropped == {"low_pass_filter lp (egress)": 1}
    assert len(_pushes(core.handle(1, put("lp/a", b"abc"), NOW))) == 1
    (p,) = _pushes(core.handle(1, put("q/a", b"abc"), NOW))
    assert p.qos == QOS_DEFAULT | QOS_EXPRESS


def test_rewritten_qos_bits() -> None:
    low = qos_value(Priority.DATA_LOW, block=False, express=True)
    assert rewritten_qos(low, Rewrite("r", priority=1)) == qos_value(1, False, True)
    assert rewritten_qos(low, Rewrite("r", congestion_control=1)) == low | QOS_BLOCK
    assert rewritten_qos(low | QOS_BLOCK, Rewrite("r", congestion_control=2)) == low | QOS_BLOCK_FIRST
    assert rewritten_qos(low | QOS_BLOCK, Rewrite("r", congestion_control=0)) == low
    assert rewritten_qos(low, Rewrite("r", express=False)) == low & ~QOS_EXPRESS


@pytest.mark.parametrize(
    "item",
    [
        {"qos": {"network": [{"messages": ["put"], "zids": ["a1"], "overwrite": {"express": True}}]}},
        {"qos": {"network": [{"messages": ["put"], "qos": {"priority": "data"}, "overwrite": {"express": True}}]}},
    ],
)
def test_what_pyzenoh_would_not_apply_is_refused(item: dict[str, Any]) -> None:
    with pytest.raises(UsageError, match="pyzenoh"):
        config_from_dict({"mode": "router", **item})


def test_an_intercepted_query_ends_at_once_and_a_rewritten_one_goes_with_its_qos() -> None:
    tree = {
        "downsampling": [{"id": "dq", "messages": ["query"], "rules": [{"key_expr": "q/**", "freq": 1}]}],
        "qos": {
            "network": [
                {"id": "w", "messages": ["query"], "key_exprs": ["w/**"], "overwrite": {"priority": "real_time"}}
            ]
        },
    }
    core = _core(tree)
    core.handle(2, d_qabl(1, "**"), NOW)
    first = core.handle(1, request(7, "q/a"), NOW)
    assert [type(s.message).__name__ for s in first] == ["Request"]
    second = core.handle(1, request(8, "q/a"), NOW + 0.1)
    assert [(s.face, type(s.message).__name__) for s in second] == [(1, "ResponseFinal")]
    assert core._tables.stats.dropped == {"downsampling dq (ingress)": 1}
    (fwd,) = core.handle(1, request(9, "w/a"), NOW)
    assert fwd.message.qos & 0x07 == 1 and fwd.priority == 1


def test_no_interceptors_no_policy_on_faces() -> None:
    core = RoutingCore(ROUTER_ZID, interceptors=Interceptors.from_config({}))
    core.add_face(1, ZenohId(0xC1), WhatAmI.CLIENT, NOW, link=FaceAttrs(1))
    f = core._tables.faces[1]
    assert f.intercept_in is None and f.intercept_out is None
