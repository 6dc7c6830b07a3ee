"""The cost of policies on an allowed PUSH (access control, and zenohd's interceptors):
eclipse-zenoh publisher -> ROUTER -> subscriber, side by side on the real eclipse-zenoh
1.10.2 router and on ``pyzenoh router``.

Access control: an ACL (default deny) of 100 rules in one policy for the subject
``interfaces: [lo]`` (both clients are on 127.0.0.1): 99 on other keys (allow and deny,
every message kind, both flows) and one allowing the benchmark's traffic on ``bench/**``.

* ``acl-100``: the allowing rule covers put, delete and declare_subscriber: every
  decision on the route is "allow" (pyzenoh keeps no access-control state on the route);
* ``acl-100-put-only`` (pyzenoh): the allowing rule covers put and declare_subscriber but
  not delete, so the cached route carries the decisions and each PUT takes that path.

Interceptors, both flows:

* ``icpt-unmatched``: a downsampling rule, a low-pass filter and a QoS overwrite, all on
  other keys: a route they cannot touch must cost nothing;
* ``icpt-matched``: the same three on ``bench/**``, none of which drops or rewrites
  anything (downsampling of DELETEs, a 1 MB limit, an overwrite to the QoS the PUTs
  already have): the price of asking them for every message.

The publisher sends 8-byte PUTs with congestion control Block for a bounded count and
time; the subscriber counts what arrives. Each case runs ``--repeat`` times, alternating,
and the best run counts. Prints msg/s and ratios (policy on / off, pyzenoh / zenoh).

Then the routing core alone, in this process (no I/O, so the cost is not hidden behind
the sockets): ``RoutingCore.handle`` of the same PUSH from one client face to another,
``--core-messages`` times, with each variant; best of ``--repeat``.

Usage: python bench/bench_policies.py [--seconds 4] [--max-messages 300000] [--repeat 2]
                                      [--core-messages 200000]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import (
    cpu_model,
    run_throughput,
    start_pyzenoh_router,
    start_real_router,
    stop,
)

from pyzenoh.localnet import free_port

#: Rules in the benchmark's ACL (one of them allows the traffic).
RULES = 100
MESSAGES = [
    "put",
    "delete",
    "declare_subscriber",
    "query",
    "declare_queryable",
    "reply",
    "liveliness_token",
    "declare_liveliness_subscriber",
    "liveliness_query",
]


def acl_tree(variant: str) -> dict[str, Any] | None:
    """The ``access_control`` of a variant (None: off)."""
    if variant == "off" or variant.startswith("icpt-"):
        return None
    rules: list[dict[str, Any]] = []
    for i in range(RULES - 1):
        rules.append(
            {
                "id": f"other-{i}",
                "messages": [MESSAGES[i % len(MESSAGES)], MESSAGES[(i + 4) % len(MESSAGES)]],
                "key_exprs": [f"app/{i}/**", f"svc/*/{i}"],
                "permission": "deny" if i % 3 == 0 else "allow",
                "flows": ["ingress" if i % 2 else "egress"] if i % 4 else ["ingress", "egress"],
            }
        )
    allowed = ["put", "declare_subscriber"] + (["delete"] if variant == "acl-100" else [])
    rules.append(
        {
            "id": "bench",
            "messages": allowed,
            "key_exprs": ["bench/**"],
            "permission": "allow",
            "flows": ["ingress", "egress"],
        }
    )  # (zenohd warns about every rule without flows)
    assert len(rules) == RULES
    return {
        "enabled": True,
        "default_permission": "deny",
        "rules": rules,
        "subjects": [{"id": "local", "interfaces": ["lo"]}],
        "policies": [{"id": "all", "rules": [r["id"] for r in rules], "subjects": ["local"]}],
    }


def interceptors_tree(variant: str) -> dict[str, Any]:
    """The downsampling, low_pass_filter and qos/network items of a variant ({}: none)."""
    if not variant.startswith("icpt-"):
        return {}
    key = "bench/**" if variant == "icpt-matched" else "other/**"
    return {
        # on DELETEs: a rule on PUTs drops part of any burst (and pyzenoh's clock is per batch)
        "downsampling": [{"id": "ds", "messages": ["delete"], "rules": [{"key_expr": key, "freq": 10}]}],
        "low_pass_filter": [{"id": "lp", "messages": ["put"], "key_exprs": [key], "size_limit": 1 << 20}],
        "qos": {
            "network": [
                {"id": "q", "messages": ["put"], "key_exprs": [key], "overwrite": {"congestion_control": "block"}}
            ]
        },
    }


def policy_tree(variant: str) -> dict[str, Any]:
    """The configuration a variant adds to the router's."""
    acl = acl_tree(variant)
    return {"access_control": acl} if acl else interceptors_tree(variant)


def run_case(kind: str, variant: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    port = free_port()
    endpoint = f"tcp/127.0.0.1:{port}"
    if kind == "zenoh":
        router = start_real_router(port, policy_tree(variant))
    else:
        router = start_pyzenoh_router(port, tmp / f"router-{port}.json5", policy_tree(variant))
    try:
        return run_throughput(endpoint, args.seconds, args.max_messages, args.payload)
    finally:
        stop(router)


def core_rate(variant: str, messages: int) -> float:
    """PUSHes per second through ``RoutingCore.handle`` on a warm route (one subscriber)."""
    from pyzenoh.codec import (
        Declare,
        DeclareSubscriber,
        Push,
        Put,
        WhatAmI,
        WireExpr,
        ZenohId,
    )
    from pyzenoh.codec import encode_network_message as encode
    from pyzenoh.codec.network import QOS_BLOCK, QOS_DEFAULT
    from pyzenoh.interceptors import FaceAttrs, Interceptors
    from pyzenoh.routing import RoutingCore
    from pyzenoh.routing.access_control import (
        AccessControl,
        FaceSubject,
        parse_access_control,
    )

    tree = acl_tree(variant)
    acl = None if tree is None else AccessControl(parse_access_control(tree))
    interceptors = Interceptors.from_config(interceptors_tree(variant))
    core = RoutingCore(ZenohId(0xA1), access_control=acl, interceptors=interceptors)
    for face in (1, 2):
        zid = ZenohId(0xC0 + face)
        subject = FaceSubject(zid, ("lo",), "tcp")
        core.add_face(face, zid, WhatAmI.CLIENT, 0.0, subject=subject, link=FaceAttrs(face, "tcp", ("lo",)))
    core.handle(2, Declare(DeclareSubscriber(1, WireExpr(0, "bench/x", True))), 0.0)
    msg = Push(WireExpr(0, "bench/x", True), Put(b"x" * 8), qos=QOS_DEFAULT | QOS_BLOCK)
    raw = encode(msg)
    handle = core.handle
    assert handle(1, msg, 0.0, raw), "a policy drops the benchmark's PUSH"
    t0 = time.perf_counter()
    for _ in range(messages):
        handle(1, msg, 1.0, raw)
    return messages / (time.perf_counter() - t0)


CASES = [
    ("zenoh", "off"),
    ("zenoh", "acl-100"),
    ("zenoh", "icpt-unmatched"),
    ("zenoh", "icpt-matched"),
    ("pyzenoh", "off"),
    ("pyzenoh", "acl-100"),
    ("pyzenoh", "acl-100-put-only"),
    ("pyzenoh", "icpt-unmatched"),
    ("pyzenoh", "icpt-matched"),
]
VARIANTS = ("off", "acl-100", "acl-100-put-only", "icpt-unmatched", "icpt-matched")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--max-messages", type=int, default=300_000)
    p.add_argument("--payload", type=int, default=8)
    p.add_argument("--repeat", type=int, default=2, help="runs per case (alternating); the best counts")
    p.add_argument("--core-messages", type=int, default=200_000, help="PUSHes through the routing core alone")
    args = p.parse_args()
    print(
        f"machine: {os.cpu_count()} cores, {cpu_model()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}; {args.payload} B PUTs, 1 publisher -> 1 subscriber, "
        f"ACL of {RULES} rules, or three interceptors"
    )
    best: dict[tuple[str, str], dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="benchpolicies") as tmp:
        for _ in range(args.repeat):
            for case in CASES:
                r = run_case(*case, args, Path(tmp))
                if case not in best or r["msg_per_s"] > best[case]["msg_per_s"]:
                    best[case] = r
    print(f"{'router':10s} {'policy':18s} {'sent':>9s} {'received':>9s} {'msg/s':>10s} {'vs off':>7s}")
    for kind, variant in CASES:
        r = best[(kind, variant)]
        ratio = r["msg_per_s"] / best[(kind, "off")]["msg_per_s"]
        print(f"{kind:10s} {variant:18s} {r['sent']:9d} {r['received']:9d} {r['msg_per_s']:10.0f} {ratio:7.3f}")
    for variant in ("off", "acl-100", "icpt-unmatched", "icpt-matched"):
        ratio = best[("pyzenoh", variant)]["msg_per_s"] / best[("zenoh", variant)]["msg_per_s"]
        print(f"pyzenoh / zenoh with {variant}: {ratio:.3f}")
    variants = VARIANTS
    rates = {v: 0.0 for v in variants}
    for _ in range(args.repeat):
        for v in variants:
            rates[v] = max(rates[v], core_rate(v, args.core_messages))
    print(f"routing core alone ({args.core_messages} PUSHes, warm route, one subscriber):")
    for v in variants:
        print(f"  {v:18s} {rates[v]:10.0f} msg/s {rates[v] / rates['off']:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
