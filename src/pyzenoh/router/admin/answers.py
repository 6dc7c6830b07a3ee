"""What the admin space answers: every admin key a query's key expression intersects,
with its encoding and payload, built from the router's state through its read-only
:class:`~pyzenoh.router.view.RouterView`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from pyzenoh.codec import Encoding, InterestOptions, WhatAmI
from pyzenoh.keyexpr.relations import intersects
from pyzenoh.router.admin.dot import dot_graph
from pyzenoh.router.admin.entities import (
    ENTITY_KINDS,
    MESH_KINDS,
    Sources,
    entity_sources,
)
from pyzenoh.router.admin.metrics import (
    MetricFamily,
    gauge,
    metrics_payload,
    metrics_text,
    parse_parameters,
    stats_families,
)
from pyzenoh.router.admin.router_info import (
    NORTH,
    SOUTH_PEER,
    SessionInfo,
    admin_root,
    dump_json,
    locator,
    router_json,
)
from pyzenoh.router.admin.state import AdminStats
from pyzenoh.routing.faces import FaceView

if TYPE_CHECKING:
    from pyzenoh.router.view import RouterView

JSON_ENCODING = Encoding.from_str("application/json")
TEXT_ENCODING = Encoding.from_str("text/plain")

AdminReply = tuple[str, Encoding, bytes]


class Answers:
    """The admin keys a query reaches, and the router state they show (read from ``view``);
    ``own_face`` is the admin space's face (its entities are not shown)."""

    def __init__(self, view: RouterView, stats: AdminStats) -> None:
        self.view = view
        self.stats = stats
        self.zid = str(view.zid)
        self.root = admin_root(self.zid)
        self.own_face: int | None = None
        #: The plugin host (pyzenoh.plugins.PluginHost) when the router runs plugins.
        self.plugins: Any = None

    def replies(self, key: str, parameters: str = "") -> Iterator[AdminReply]:
        """Every admin key intersecting ``key``, with its encoding and payload."""
        root = self.root
        if intersects(key, root):
            yield root, JSON_ENCODING, self.router_payload()
        if intersects(key, f"{root}/metrics"):
            params = parse_parameters(parameters)
            text = metrics_text(self.zid, self.metric_families(), descriptors=params.get("descriptors") != "false")
            payload, encoding = metrics_payload(text, compression=params.get("compression") != "false")
            yield f"{root}/metrics", encoding, payload
        if intersects(key, f"{root}/linkstate/*"):
            for region, text in self.linkstates():
                reply_key = f"{root}/linkstate/{region}"
                if intersects(key, reply_key):
                    yield reply_key, TEXT_ENCODING, text.encode()
        for kind in ENTITY_KINDS:
            if not intersects(key, f"{root}/{kind}/**"):
                continue
            for entity_key, sources in self.entities(kind).items():
                reply_key = f"{root}/{kind}/{entity_key}"
                if intersects(key, reply_key):
                    yield reply_key, JSON_ENCODING, dump_json(sources)
        if intersects(key, f"{root}/access_control"):
            acl = self.access_control_payload()
            if acl is not None:
                yield f"{root}/access_control", JSON_ENCODING, acl
        if self.plugins is not None:
            for reply_key, value, is_text in self.plugins.admin_replies(root, key):
                if is_text:
                    yield reply_key, TEXT_ENCODING, str(value).encode()
                else:
                    yield reply_key, JSON_ENCODING, dump_json(value)
        if intersects(key, f"{root}/route/successor/**"):
            for src, dst, successor in self.route_successors():
                reply_key = f"{root}/route/successor/src/{src}/dst/{dst}"
                if intersects(key, reply_key):
                    yield reply_key, JSON_ENCODING, dump_json(successor)

    def sessions(self) -> list[SessionInfo]:
        out = []
        for _, face in sorted(self.view.faces().items()):
            links = tuple(
                (locator(link.local_address, link.protocol), locator(link.remote_address, link.protocol))
                for link in face.all_links()
            )
            if links:  # local faces (the admin space, the msgq bridge) are no transports
                out.append(SessionInfo(str(face.zid), face.whatami, links))
        for group in self.view.groups():
            for zid, member in group.members:
                out.append(SessionInfo(zid, WhatAmI.PEER, ((group.own, member),), group=group.locator))
        return out

    def locators(self) -> list[str]:
        """The router's locators, then its multicast groups' (as zenohd lists them)."""
        return self.view.locators() + [g.locator for g in self.view.groups()]

    def access_control_payload(self) -> bytes | None:
        """Deny counters, and each session's access-control subject and matched subjects
        (None: access control is off)."""
        view = self.view
        info = view.access_control()
        if info is None:
            return None
        sessions = []
        for face_id, face in sorted(view.faces().items()):
            face_acl = view.face_acl(face_id)
            if face.link is not None and face_acl is not None:
                sessions.append({**face_acl.subject.to_json(), "subjects": face_acl.subject_ids})
        info["sessions"] = sessions
        return dump_json(info)

    def router_payload(self) -> bytes:
        plugins = None if self.plugins is None else self.plugins.router_field()
        return router_json(
            self.zid, self.locators(), self.sessions(), metadata=self.view.config.metadata, plugins=plugins
        )

    def _core_faces(self) -> list[FaceView]:
        return [f for fid, f in sorted(self.view.core_faces().items()) if fid != self.own_face]

    def local_holders(self, kind: str) -> list[tuple[str, WhatAmI, str]]:
        """(key, whatami, zid) of the clients' and peers' entities of ``kind``."""
        out: list[tuple[str, WhatAmI, str]] = []
        for f in self._core_faces():
            if f.whatami not in (WhatAmI.CLIENT, WhatAmI.PEER):
                continue  # routers' entities live in the router region
            zid = str(f.zid)
            keys: Iterable[str]
            if kind == "subscriber":
                keys = f.subs.values()
            elif kind == "queryable":
                keys = (k for k, _ in f.qabls.values())
            elif kind == "token":
                keys = f.tokens.values()
            else:
                # Publishers / queriers: a restricted interest in subscribers / queryables.
                want = InterestOptions.SUBSCRIBERS if kind == "publisher" else InterestOptions.QUERYABLES
                keys = (i.key for i in f.interests.values() if i.key is not None and i.options & want)
            out.extend((k, f.whatami, zid) for k in keys)
        return out

    def entities(self, kind: str) -> dict[str, Sources]:
        remote: dict[str, list[str]] = {}
        if kind in MESH_KINDS:
            remote = {k: [str(z) for z in v] for k, v in self.view.router_entities(kind).items()}
        return entity_sources(self.zid, self.local_holders(kind), remote, north_source=kind in MESH_KINDS)

    def linkstates(self) -> list[tuple[str, str]]:
        # Without router links the router graph is the router alone, as zenohd shows it.
        north = self.view.linkstate_dot()
        peers = [
            str(f.zid) for _, f in sorted(self.view.faces().items()) if f.link is not None and f.whatami == WhatAmI.PEER
        ]
        return [(NORTH, north), (SOUTH_PEER, dot_graph([self.zid, *peers]))]

    def route_successors(self) -> list[tuple[str, str, str]]:
        return [(str(s), str(d), str(n)) for s, d, n in self.view.route_successors()]

    def metric_families(self) -> list[MetricFamily]:
        families = stats_families("pyzenoh_router", self.view.stats)
        families += stats_families("pyzenoh_routing", self.view.routing_stats)
        sessions = {"router": 0, "peer": 0, "client": 0}
        for s in self.sessions():
            sessions[str(s.whatami)] += 1
        families.append(gauge("pyzenoh_router_sessions", "Open sessions, by kind.", "whatami", sessions))
        counts = {kind: len(self.local_holders(kind)) for kind in ("subscriber", "queryable", "token")}
        families.append(gauge("pyzenoh_router_entities", "Entities declared by clients and peers.", "kind", counts))
        if self.plugins is not None:
            for name, counters in sorted(self.plugins.counters().items()):
                for counter, value in sorted(counters.items()):
                    families.append(
                        MetricFamily(
                            f"pyzenoh_plugin_{name}_{counter}",
                            "counter",
                            f"Plugin {name}: {counter.replace('_', ' ')}.",
                            (((), value),),
                        )
                    )
        families.append(
            MetricFamily(
                "pyzenoh_admin_queries", "counter", "Queries the admin space answered.", (((), self.stats.queries),)
            )
        )
        groups = self.view.groups()
        if groups:
            families.append(
                gauge(
                    "pyzenoh_multicast_members",
                    "Members known on each multicast group.",
                    "group",
                    {g.locator: len(g.members) for g in groups},
                )
            )
            for counter in sorted(groups[0].counters):
                families.append(
                    MetricFamily(
                        f"pyzenoh_multicast_{counter}",
                        "counter",
                        f"Multicast groups: {counter.replace('_', ' ')}.",
                        tuple(((("group", g.locator),), g.counters.get(counter, 0)) for g in groups),
                    )
                )
        return families
