"""The router's admin space: ``@/<zid>/router/**``, read-only, answered by the router itself.

Shapes are those of a real eclipse-zenoh 1.10.2 router (zenohd), measured on the wire
(see ``tests/router/test_admin.py`` and zenoh-mesh.md section 4):

* ``@/<zid>/router``: ``application/json``, keys sorted, compact::

    {"locators":["tcp/127.0.0.1:7447"],"metadata":null,"plugins":null,
     "sessions":[{"links":[{"dst":"<remote>","src":"<local>"}],"peer":"<zid>",
                  "region":"south:0:client","shm":false,"weight":null,"whatami":"client"}],
     "version":"v1.10.2-...","zid":"<zid>"}

  ``region`` is ``north`` for routers (whose ``weight`` is
  ``{"actual_weight":100,"dst_weight":null,"src_weight":null}``), ``south:0:client`` and
  ``south:0:peer`` for the others. Local (in-process) faces are not sessions.
* ``@/<zid>/router/metrics``: OpenMetrics text, encoding
  ``application/openmetrics-text; version=1.0.0; charset=utf-8`` plus
  ``;content-encoding=gzip`` (gzipped) unless the selector says ``compression=false``;
  ``descriptors=false`` drops the ``#`` lines. zenohd (built without its ``stats``
  feature) sends only ``zenoh_build_info``; pyzenoh adds its own counters as
  ``pyzenoh_*`` families before the final ``# EOF``.
* ``@/<zid>/router/linkstate/north`` and ``.../linkstate/south:0:peer``: ``text/plain``
  Graphviz text (petgraph's ``Dot`` layout).
* ``@/<zid>/router/{subscriber,publisher,queryable,querier,token}/<key>``:
  ``application/json`` ``{"routers":[...],"peers":[...],"clients":[...]}``. For
  subscribers, queryables and tokens the router lists itself once per south region
  (clients, peers) holding the key, after the other routers holding it; publishers and
  queriers are the restricted S / Q interests of clients and peers, with no routers.
  Admin-space entities (this router's or another's) are never listed.
* ``@/<zid>/router/route/successor/src/<zid>/dst/<zid>``: ``application/json`` string,
  when the router network can tell.
* ``@/<zid>/router/access_control`` (pyzenoh's own; only when ``access_control`` is
  enabled): ``application/json``
  ``{"enabled":true,"default_permission":...,"denied":{rule:count},
  "denials":[{"rule","flow","message","count"}],"sessions":[{"zid","interfaces",
  "link_protocol","cert_common_name","username","subjects":[...]}]}``. zenohd counts
  these denials only in builds with its ``stats`` feature; the same totals by rule are
  the metric ``pyzenoh_router_access_control_denied_total{reason="<rule id>"}``
  (``<default_permission>`` when no rule allowed it, ``<no key expression>``).

Every admin key intersecting the query's key expression is answered, then one
RESPONSE_FINAL. Replies carry the router's zid and entity id 1 as responder, no
timestamp, and the query's QoS, as zenohd's do.

The admin space is a local face of :class:`~pyzenoh.router.daemon.RouterDaemon` (a
client, like the msgq bridge) declaring one queryable, ``@/<zid>/router/**``, exactly
the key zenohd's admin queryable declares; ``@/**`` reaches it because ``@`` is a chunk
of its own. The PUT side of zenohd's admin space (``config/**``) is not implemented.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import platform
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyzenoh.codec import (
    Declare,
    DeclareKeyExpr,
    DeclareQueryable,
    Encoding,
    EntityGlobalId,
    InterestOptions,
    Put,
    Reply,
    Request,
    Response,
    ResponseFinal,
    UndeclareKeyExpr,
    WhatAmI,
    WireExpr,
    ZenohId,
)
from pyzenoh.errors import UsageError
from pyzenoh.keyexpr.relations import intersects

if TYPE_CHECKING:
    from pyzenoh.router.daemon import RouterDaemon
    from pyzenoh.routing import Send

log = logging.getLogger(__name__)

#: The zenoh release whose router this one stands in for (the ``version`` prefix).
ZENOH_VERSION = "1.10.2"
#: Entity id of the admin queryable on the admin face.
ADMIN_QUERYABLE_ID = 1
#: Entity id in the replies' responder id: zenohd's admin space answers as entity 1.
RESPONDER_EID = 1
#: The admin face's zid is the router's, xor this ("adm"): a face of its own, never the
#: router's own zid, so the routing core cannot mistake it for the router.
ADMIN_FACE_XOR = 0x61646D
#: zenohd's default link weight, shown for router sessions.
DEFAULT_LINK_WEIGHT = 100

JSON_ENCODING = Encoding.from_str("application/json")
TEXT_ENCODING = Encoding.from_str("text/plain")
METRICS_ENCODING = "application/openmetrics-text; version=1.0.0; charset=utf-8"
GZIP_SUFFIX = ";content-encoding=gzip"

ENTITY_KINDS = ("subscriber", "publisher", "queryable", "querier", "token")
#: Kinds that routers propagate to each other (publishers and queriers are only interests).
MESH_KINDS = frozenset({"subscriber", "queryable", "token"})
NORTH = "north"
SOUTH_PEER = "south:0:peer"

AdminReply = tuple[str, Encoding, bytes]


# --- configuration -------------------------------------------------------------------------


def admin_enabled(tree: Mapping[str, Any]) -> bool:
    """``adminspace/enabled`` of a router config tree; on unless it is ``false`` (as zenohd)."""
    node = tree.get("adminspace")
    if node is None:
        return True
    if not isinstance(node, Mapping):
        raise UsageError("config adminspace must be an object")
    value = node.get("enabled")
    if value is None:
        value = True
    if not isinstance(value, bool):
        raise UsageError(f"config adminspace/enabled must be true or false, got {value!r}")
    # permissions/read: false makes zenohd answer no admin query: serve none either.
    permissions = node.get("permissions")
    if isinstance(permissions, Mapping) and permissions.get("read") is False:
        return False
    return value


# --- payload builders (plain data in, bytes out) --------------------------------------------


def admin_root(zid: str) -> str:
    return f"@/{zid}/router"


def version_string() -> str:
    """zenohd says ``v1.10.2-<commit> built with rustc ...``; keep the ``v1.10.2`` prefix."""
    from pyzenoh import __version__

    python = f"{platform.python_implementation()} {platform.python_version()}"
    return f"v{ZENOH_VERSION}-pyzenoh-{__version__} built with {python}"


def region_of(whatami: WhatAmI) -> str:
    if whatami == WhatAmI.ROUTER:
        return NORTH
    return f"south:0:{whatami}"


def locator(address: tuple[Any, ...] | None) -> str:
    """A socket address as a zenoh locator (``tcp/1.2.3.4:5``, ``tcp/[::1]:5``)."""
    if not address:
        return ""
    host, port = str(address[0]), address[1]
    return f"tcp/[{host}]:{port}" if ":" in host else f"tcp/{host}:{port}"


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One transport of the router, for ``@/<zid>/router``."""

    zid: str
    whatami: WhatAmI
    links: tuple[tuple[str, str], ...] = ()  # (src: our end, dst: the remote end)
    weight: int | None = None  # routers only

    def to_json(self) -> dict[str, Any]:
        weight = None
        if self.whatami == WhatAmI.ROUTER:
            actual = DEFAULT_LINK_WEIGHT if self.weight is None else self.weight
            weight = {"actual_weight": actual, "dst_weight": None, "src_weight": None}
        return {
            "links": [{"dst": dst, "src": src} for src, dst in self.links],
            "peer": self.zid,
            "region": region_of(self.whatami),
            "shm": False,  # pyzenoh never negotiates shared memory
            "weight": weight,
            "whatami": str(self.whatami),
        }


def router_info(
    zid: str,
    locators: Sequence[str],
    sessions: Iterable[SessionInfo],
    *,
    version: str | None = None,
    metadata: Any = None,
) -> dict[str, Any]:
    return {
        "locators": list(locators),
        "metadata": metadata,
        "plugins": None,
        "sessions": [s.to_json() for s in sessions],
        "version": version_string() if version is None else version,
        "zid": zid,
    }


def dump_json(value: Any, *, sort_keys: bool = False) -> bytes:
    """serde_json's compact form (zenohd's maps come out key-sorted, its structs do not)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys).encode()


def router_json(
    zid: str,
    locators: Sequence[str],
    sessions: Iterable[SessionInfo],
    *,
    version: str | None = None,
    metadata: Any = None,
) -> bytes:
    info = router_info(zid, locators, sessions, version=version, metadata=metadata)
    return dump_json(info, sort_keys=True)


Sources = dict[str, list[str]]


def _is_admin_key(key: str, router: str) -> bool:
    root = admin_root(router)
    return key in (f"{root}/**", f"{root}/config/**")


def entity_sources(
    self_zid: str,
    local: Iterable[tuple[str, WhatAmI, str]],
    remote: Mapping[str, Iterable[str]] | None = None,
    *,
    north_source: bool = True,
) -> dict[str, Sources]:
    """Key -> ``{"routers", "peers", "clients"}`` for one entity kind.

    ``local``: ``(key, whatami, zid)`` of this router's clients and peers (a face counts
    once per key however many entities it has there); ``remote``: key -> routers of the
    mesh holding it. With ``north_source`` (subscribers, queryables, tokens) the router
    adds itself to ``routers`` once per region (clients, peers) that holds the key, as
    zenohd does; the other routers come first.
    """
    out: dict[str, Sources] = {}

    def entry(key: str) -> Sources:
        return out.setdefault(key, {"routers": [], "peers": [], "clients": []})

    for key, routers in (remote or {}).items():
        others = [r for r in routers if r != self_zid and not _is_admin_key(key, r)]
        if others:
            entry(key)["routers"].extend(others)
    holders = list(local)
    for whatami, field_name in ((WhatAmI.CLIENT, "clients"), (WhatAmI.PEER, "peers")):
        per_key: dict[str, list[str]] = {}
        for key, kind, zid in holders:
            if kind == whatami:
                zids = per_key.setdefault(key, [])
                if zid not in zids:
                    zids.append(zid)
        for key, zids in per_key.items():
            e = entry(key)
            e[field_name].extend(zids)
            if north_source:
                e["routers"].append(self_zid)
    return dict(sorted(out.items()))


def _weight_label(weight: float) -> str:
    # Rust prints whole floats without a fraction ("100"), others in shortest form.
    if float(weight).is_integer():
        return str(int(weight))
    return repr(float(weight))


def dot_graph(labels: Sequence[str], edges: Iterable[tuple[int, int, float]] = ()) -> str:
    """petgraph's ``Dot`` text of an undirected graph, as zenohd's ``linkstate`` keys show."""
    lines = ["graph {\n"]
    lines += [f'    {i} [ label = "{label}" ]\n' for i, label in enumerate(labels)]
    lines += [f'    {a} -- {b} [ label = "{_weight_label(w)}" ]\n' for a, b, w in edges]
    lines.append("}\n")
    return "".join(lines)


# --- metrics -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MetricFamily:
    name: str
    kind: str  # "counter" or "gauge"
    help: str
    samples: tuple[tuple[tuple[tuple[str, str], ...], float], ...] = ()  # (labels, value)


def _label_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def metrics_text(
    zid: str,
    families: Iterable[MetricFamily] = (),
    *,
    version: str | None = None,
    descriptors: bool = True,
) -> str:
    """OpenMetrics text: zenohd's ``zenoh_build_info`` exactly, then pyzenoh's families.

    zenohd ends its text with ``"# EOF\\n "`` (a stray space included) and filters
    ``descriptors=false`` line by line, keeping that space; both are reproduced.
    """
    version = version_string() if version is None else version
    parts = [
        "# HELP zenoh_build Zenoh build version.\n",
        "# TYPE zenoh_build info\n",
        (
            f'zenoh_build_info{{local_id="{zid}",local_whatami="router",'
            f'version="{_label_value(version)}"}} 1\n'
        ),
    ]
    for fam in families:
        parts.append(f"# HELP {fam.name} {fam.help}\n")
        parts.append(f"# TYPE {fam.name} {fam.kind}\n")
        sample = f"{fam.name}_total" if fam.kind == "counter" else fam.name
        for labels, value in fam.samples:
            text = ",".join(f'{k}="{_label_value(v)}"' for k, v in labels)
            parts.append(f"{sample}{{{text}}} {_number(value)}\n" if text else f"{sample} {_number(value)}\n")
    parts.append("# EOF\n ")
    text = "".join(parts)
    if not descriptors:
        kept = [line for line in text.splitlines(keepends=True) if not line.startswith("#")]
        text = "".join(kept) + "# EOF\n"
    return text


def metrics_payload(text: str, compression: bool = True) -> tuple[bytes, Encoding]:
    data = text.encode()
    if not compression:
        return data, Encoding.from_str(METRICS_ENCODING)
    return gzip_fast(data), Encoding.from_str(METRICS_ENCODING + GZIP_SUFFIX)


#: The gzip header zenohd's flate2 ``GzEncoder(Compression::fast())`` writes: no name,
#: mtime 0, XFL 4 ("fastest"), OS 255 ("unknown"). Python's gzip module writes OS 3.
GZIP_FAST_HEADER = bytes.fromhex("1f8b08000000000004ff")


def gzip_fast(data: bytes) -> bytes:
    deflate = zlib.compressobj(1, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = deflate.compress(data) + deflate.flush()
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return GZIP_FAST_HEADER + body + trailer


#: Help texts of the daemon's and the routing core's counters (others get a generic one).
_HELP = {
    "pyzenoh_router_links_accepted": "Sessions opened on the router's links.",
    "pyzenoh_router_links_closed": "Sessions closed.",
    "pyzenoh_router_links_closed_by_reason": "Sessions closed, by close reason.",
    "pyzenoh_router_messages_in": "Network messages received from faces.",
    "pyzenoh_router_messages_out": "Network messages queued to links.",
    "pyzenoh_router_dropped": "Messages dropped because a link's queue was full.",
    "pyzenoh_router_faces_closed_slow": "Faces closed because they did not read.",
    "pyzenoh_router_faces_closed_bad_input": "Faces closed for protocol errors or limits.",
    "pyzenoh_routing_sub_index_lookups": "Subscriber index lookups to build data routes.",
    "pyzenoh_routing_qabl_index_lookups": "Queryable index lookups to build query routes.",
    "pyzenoh_routing_data_route_hits": "PUSH routes served from the route cache.",
    "pyzenoh_routing_pushes_routed": "PUSH messages routed.",
    "pyzenoh_routing_push_runs_routed": "Runs of same-shape PUSHes routed as one unit.",
    "pyzenoh_routing_pushes_in_runs": "PUSH messages routed as part of a run.",
    "pyzenoh_routing_requests_routed": "REQUEST messages routed.",
    "pyzenoh_routing_query_timeouts": "Query destinations that timed out.",
    "pyzenoh_routing_dropped": "Messages the routing core ignored, by reason.",
    "pyzenoh_router_access_control_denied": "Messages access control denied, by rule id.",
}
#: Stats fields whose metric name says more than the field's.
_RENAMED = {"pyzenoh_router_by_reason": "pyzenoh_router_links_closed_by_reason"}


def stats_families(prefix: str, stats: object) -> list[MetricFamily]:
    """Counter families from a stats dataclass: int fields, and str -> int dicts (``reason``)."""
    if dataclasses.is_dataclass(stats) and not isinstance(stats, type):
        items = [(f.name, getattr(stats, f.name)) for f in dataclasses.fields(stats)]
    else:
        items = list(vars(stats).items())
    out: list[MetricFamily] = []
    for attr, value in items:
        name = f"{prefix}_{attr}"
        name = _RENAMED.get(name, name)
        help_text = _HELP.get(name, f"pyzenoh counter {attr}.")
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            out.append(MetricFamily(name, "counter", help_text, (((), value),)))
        elif isinstance(value, Mapping):
            samples = tuple(
                ((("reason", str(k)),), v)
                for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
                if isinstance(v, int | float) and not isinstance(v, bool)
            )
            out.append(MetricFamily(name, "counter", help_text, samples))
    return out


def gauge(name: str, help_text: str, label: str, counts: Mapping[str, int]) -> MetricFamily:
    samples = tuple((((label, k),), v) for k, v in counts.items())
    return MetricFamily(name, "gauge", help_text, samples)


def parse_parameters(text: str) -> dict[str, str]:
    """A selector's parameters, ``k=v;k2=v2``; the first value of a repeated key wins."""
    out: dict[str, str] = {}
    for part in text.split(";"):
        if part:
            k, _, v = part.partition("=")
            out.setdefault(k, v)
    return out


# --- the local face ------------------------------------------------------------------------


@dataclass(slots=True)
class AdminStats:
    queries: int = 0
    replies: int = 0
    errors: int = 0
    unresolved: int = 0


class AdminSpace:
    """The admin space of a :class:`RouterDaemon`: a local face answering ``@/<zid>/router/**``."""

    def __init__(self, daemon: RouterDaemon) -> None:
        self.daemon = daemon
        self.face_id: int | None = None
        self.stats = AdminStats()
        self._scopes: dict[int, str] = {}  # key ids the router declared to our face

    @property
    def zid(self) -> str:
        return str(self.daemon.zid)

    @property
    def root(self) -> str:
        return admin_root(self.zid)

    # -- lifecycle --

    def attach(self) -> None:
        """Add the admin face to the daemon and declare ``@/<zid>/router/**`` on it."""
        if self.face_id is not None:
            return
        daemon = self.daemon
        face_zid = ZenohId((daemon.zid.value ^ ADMIN_FACE_XOR) or 1)
        self.face_id = daemon.add_local_face(face_zid, self._on_send, WhatAmI.CLIENT, name="adminspace")
        # zenohd's admin queryable: not complete, distance 0 (QueryableInfoType::DEFAULT).
        decl = DeclareQueryable(ADMIN_QUERYABLE_ID, WireExpr(0, f"{self.root}/**", True))
        daemon.local_input(self.face_id, Declare(decl))
        log.info("admin space on %s/** (face %d)", self.root, self.face_id)

    def detach(self) -> None:
        """Withdraw the admin face, and its queryable with it."""
        face = self.face_id
        if face is None:
            return
        self.face_id = None
        self.daemon.remove_local_face(face)
        self._scopes.clear()

    # -- messages routed to the admin face --

    def _on_send(self, send: Send) -> None:
        msg = send.message
        if isinstance(msg, Request):
            face = self.face_id
            if face is None:
                return
            key = self._resolve(msg.wire_expr)
            if key is None:
                self.stats.unresolved += 1
                key = self.daemon.core.key_of(face, msg, incoming=False)
            params = msg.body.parameters
            # Answer on the next loop turn: the daemon is still delivering the request
            # (its other destinations may not have it yet) when it calls this sink.
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self._answer(face, msg.request_id, msg.qos, key, params)
            else:
                loop.call_soon(self._answer, face, msg.request_id, msg.qos, key, params)
        elif isinstance(msg, Declare):
            body = msg.body
            if isinstance(body, DeclareKeyExpr):
                prefix = self._resolve(body.wire_expr)
                if prefix is not None:
                    self._scopes[body.expr_id] = prefix
            elif isinstance(body, UndeclareKeyExpr):
                self._scopes.pop(body.expr_id, None)
        # Nothing else is expected: the face declares no subscriber and no interest.

    def _resolve(self, wire_expr: WireExpr) -> str | None:
        if wire_expr.scope == 0:
            return wire_expr.suffix
        prefix = self._scopes.get(wire_expr.scope)
        return None if prefix is None else prefix + wire_expr.suffix

    def _answer(self, face: int, rid: int, qos: int, key: str | None, params: str) -> None:
        daemon = self.daemon
        if face not in daemon._faces:
            return  # the face went away; the core finished the query
        replies: list[AdminReply] = []
        if key is not None and face == self.face_id:
            self.stats.queries += 1
            try:
                replies = list(self.replies(key, params))
            except Exception:  # a broken payload must not leave the querier waiting
                self.stats.errors += 1
                log.exception("admin space: cannot answer %s", key)
                replies = []
        responder = EntityGlobalId(daemon.zid, RESPONDER_EID)
        for reply_key, encoding, payload in replies:
            body = Reply(Put(payload=payload, encoding=encoding))
            daemon.local_input(face, Response(rid, WireExpr(0, reply_key, True), body, qos=qos, responder=responder))
            self.stats.replies += 1
        daemon.local_input(face, ResponseFinal(rid, qos))

    # -- answers --

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
        acl = getattr(self.daemon, "access_control", None)
        if acl is not None and intersects(key, f"{root}/access_control"):
            yield f"{root}/access_control", JSON_ENCODING, self.access_control_payload()
        if intersects(key, f"{root}/route/successor/**"):
            for src, dst, successor in self.route_successors():
                reply_key = f"{root}/route/successor/src/{src}/dst/{dst}"
                if intersects(key, reply_key):
                    yield reply_key, JSON_ENCODING, dump_json(successor)

    # -- daemon state, read only --

    def sessions(self) -> list[SessionInfo]:
        out = []
        for _, face in sorted(self.daemon._faces.items()):
            link = face.link
            if link is None:
                continue  # local faces (the admin space, the msgq bridge) are no transports
            src = locator(link.local_address)
            dst = locator(link.remote_address)
            out.append(SessionInfo(str(face.zid), face.whatami, ((src, dst),)))
        return out

    def locators(self) -> list[str]:
        return self.daemon.locators()

    def access_control_payload(self) -> bytes:
        """Deny counters, and each session's access-control subject and matched subjects."""
        daemon = self.daemon
        assert daemon.access_control is not None
        info = daemon.access_control.snapshot()
        sessions = []
        for face_id, face in sorted(daemon._faces.items()):
            face_acl = daemon.core.face_acl(face_id)
            if face.link is not None and face_acl is not None:
                sessions.append({**face_acl.subject.to_json(), "subjects": face_acl.subject_ids})
        info["sessions"] = sessions
        return dump_json(info)

    def router_payload(self) -> bytes:
        return router_json(self.zid, self.locators(), self.sessions(), metadata=self.daemon.config.metadata)

    def _core_faces(self) -> list[Any]:
        return [f for fid, f in sorted(self.daemon.core._faces.items()) if fid != self.face_id]

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
            remote = {k: [str(z) for z in v] for k, v in self.daemon.core.router_entities(kind).items()}
        return entity_sources(self.zid, self.local_holders(kind), remote, north_source=kind in MESH_KINDS)

    def linkstates(self) -> list[tuple[str, str]]:
        # Without router links the router graph is the router alone, as zenohd shows it.
        north = self.daemon.core.network.dot()
        peers = [str(f.zid) for _, f in sorted(self.daemon._faces.items())
                 if f.link is not None and f.whatami == WhatAmI.PEER]  # fmt: skip
        return [(NORTH, north), (SOUTH_PEER, dot_graph([self.zid, *peers]))]

    def route_successors(self) -> list[tuple[str, str, str]]:
        return [(str(s), str(d), str(n)) for s, d, n in self.daemon.core.network.route_successors()]

    def metric_families(self) -> list[MetricFamily]:
        daemon = self.daemon
        families = stats_families("pyzenoh_router", daemon.stats)
        families += stats_families("pyzenoh_routing", daemon.core.stats)
        sessions = {"router": 0, "peer": 0, "client": 0}
        for s in self.sessions():
            sessions[str(s.whatami)] += 1
        families.append(gauge("pyzenoh_router_sessions", "Open sessions, by kind.", "whatami", sessions))
        counts = {kind: len(self.local_holders(kind)) for kind in ("subscriber", "queryable", "token")}
        families.append(gauge("pyzenoh_router_entities", "Entities declared by clients and peers.", "kind", counts))
        families.append(MetricFamily("pyzenoh_admin_queries", "counter", "Queries the admin space answered.",
                                     (((), self.stats.queries),)))  # fmt: skip
        return families
