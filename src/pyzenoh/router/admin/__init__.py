"""The router's admin space: ``@/<zid>/router/**``, answered by the router itself, and its
config writes.

Shapes are those of a real eclipse-zenoh 1.10.2 router (zenohd), measured on the wire
(see ``tests/router/test_admin_*.py`` and zenoh-mesh.md section 4):

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
of its own. It also subscribes to ``@/<zid>/router/config/**``, as zenohd's does: a PUT
or DELETE there edits the router's config when ``adminspace/permissions/write`` allows it
(:mod:`.writes`; the router app applies the change, plugins follow it); without
``permissions/read`` every query gets RESPONSE_FINAL alone. With plugins
(:mod:`pyzenoh.plugins`), ``plugins/**``, ``status/plugins/**`` and the ``plugins``
field of ``@/<zid>/router`` come from the plugin host.

One module per part, each named for it; this package re-exports every name:

* :mod:`.config` -- ``adminspace/enabled`` and its read permission;
* :mod:`.router_info` -- ``@/<zid>/router`` (sessions, regions, version) and compact JSON;
* :mod:`.entities` -- who holds a subscriber, publisher, queryable, querier or token key;
* :mod:`.dot` -- the ``linkstate`` graphs as petgraph's ``Dot`` text;
* :mod:`.metrics` -- OpenMetrics text, its gzip, counters from stats dataclasses;
* :mod:`.state` -- the admin space's fields and counters;
* :mod:`.answers` -- every admin key a query reaches, from the daemon's state;
* :mod:`.writes` -- admin-space writes on ``config/**`` as config tree edits;
* :mod:`.face` -- :class:`AdminSpace`, the local face: its queryable, queries in, replies
  out, and its subscriber on ``config/**``.
"""

from __future__ import annotations

from pyzenoh.router.admin.answers import JSON_ENCODING, TEXT_ENCODING, AdminReply
from pyzenoh.router.admin.config import admin_enabled
from pyzenoh.router.admin.dot import dot_graph
from pyzenoh.router.admin.entities import (
    ENTITY_KINDS,
    MESH_KINDS,
    Sources,
    entity_sources,
)
from pyzenoh.router.admin.face import (
    ADMIN_FACE_XOR,
    ADMIN_QUERYABLE_ID,
    RESPONDER_EID,
    AdminSpace,
)
from pyzenoh.router.admin.metrics import (
    GZIP_FAST_HEADER,
    GZIP_SUFFIX,
    METRICS_ENCODING,
    MetricFamily,
    gauge,
    gzip_fast,
    metrics_payload,
    metrics_text,
    parse_parameters,
    stats_families,
)
from pyzenoh.router.admin.router_info import (
    DEFAULT_LINK_WEIGHT,
    NORTH,
    SOUTH_PEER,
    ZENOH_VERSION,
    SessionInfo,
    admin_root,
    dump_json,
    locator,
    region_of,
    router_info,
    router_json,
    version_string,
)
from pyzenoh.router.admin.state import AdminStats

__all__ = [
    "ADMIN_FACE_XOR",
    "ADMIN_QUERYABLE_ID",
    "DEFAULT_LINK_WEIGHT",
    "ENTITY_KINDS",
    "GZIP_FAST_HEADER",
    "GZIP_SUFFIX",
    "JSON_ENCODING",
    "MESH_KINDS",
    "METRICS_ENCODING",
    "NORTH",
    "RESPONDER_EID",
    "SOUTH_PEER",
    "TEXT_ENCODING",
    "ZENOH_VERSION",
    "AdminReply",
    "AdminSpace",
    "AdminStats",
    "MetricFamily",
    "SessionInfo",
    "Sources",
    "admin_enabled",
    "admin_root",
    "dot_graph",
    "dump_json",
    "entity_sources",
    "gauge",
    "gzip_fast",
    "locator",
    "metrics_payload",
    "metrics_text",
    "parse_parameters",
    "region_of",
    "router_info",
    "router_json",
    "stats_families",
    "version_string",
]
