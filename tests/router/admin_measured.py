"""What a real eclipse-zenoh 1.10.2 router's admin space answered, for the admin space
tests (``test_admin_*``): the MEASURED_* constants were read off a real router (the
Python wheel, ``adminspace/enabled: true``) with client and peer sessions, and off a
pair of such routers; R, B, C1, C2, P are the zids those answers name.
"""

from __future__ import annotations

#: ``@/<zid>/router``: JSON object keys (sorted: serde_json maps) and a session's keys.
MEASURED_ROUTER_KEYS = ["locators", "metadata", "plugins", "sessions", "version", "zid"]
MEASURED_SESSION_KEYS = ["links", "peer", "region", "shm", "weight", "whatami"]
MEASURED_ROUTER_WEIGHT = {"actual_weight": 100, "dst_weight": None, "src_weight": None}
#: ``@/<zid>/router/metrics`` of zenohd (no ``stats`` feature), before gzip; {Z} {V} filled in.
MEASURED_METRICS = (
    "# HELP zenoh_build Zenoh build version.\n"
    "# TYPE zenoh_build info\n"
    'zenoh_build_info{{local_id="{Z}",local_whatami="router",version="{V}"}} 1\n'
    "# EOF\n "
)
MEASURED_METRICS_NO_DESCRIPTORS = 'zenoh_build_info{{local_id="{Z}",local_whatami="router",version="{V}"}} 1\n # EOF\n'
#: gzip header of the metrics reply: no name, mtime 0, "fastest" flag, OS 255.
MEASURED_GZIP_HEADER = bytes.fromhex("1f8b08000000000004ff")
#: ``linkstate/north`` of router 8c52... linked to 4ac5...
MEASURED_DOT_PAIR = (
    "graph {\n"
    '    0 [ label = "8c52eb840dd3ee4909309fafad39395c" ]\n'
    '    1 [ label = "4ac5dab1d534e84b0f52ba8bebc83554" ]\n'
    '    1 -- 0 [ label = "100.56779317314918" ]\n'
    "}\n"
)
MEASURED_DOT_ALONE = 'graph {\n    0 [ label = "ebe98461f5ab66778c8c6c47bff401e5" ]\n}\n'

R = "ebe98461f5ab66778c8c6c47bff401e5"  # router
B = "8c52eb840dd3ee4909309fafad39395c"  # another router
C1, C2 = "cde4fbad4085c15a435d66b4e1ce3b10", "884059f541d0a2797347c85b4e354609"  # clients
P = "20c404ecdbee965359ddb5467bfd7c2c"  # peer
