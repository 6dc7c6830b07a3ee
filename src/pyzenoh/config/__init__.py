"""Configuration as strict as zenohd 1.10.2's: its schema, and what pyzenoh does with it.

zenohd refuses to start on any key or value outside its schema, at any depth. pyzenoh
does the same, for routers (``pyzenoh router -c FILE``) and sessions (``Config``):

* :mod:`pyzenoh.config.nodes`: the validator's building blocks (schema nodes, problems);
* :mod:`pyzenoh.config.syntax`: the string syntaxes (endpoints, socket addresses, ids,
  key expressions, ranges) as zenoh parses them;
* :mod:`pyzenoh.config.schema`: zenohd's tree as data (:data:`ZENOH_SCHEMA`, measured
  against eclipse-zenoh 1.10.2's ``zenoh.Config.from_json5``), pyzenoh's own section
  under ``pyzenoh/`` (:data:`OWN_SCHEMA`), :func:`validate` (every problem, each naming
  its key path: ``unknown config key 'acces_control' (did you mean 'access_control'?)``,
  ``transport/unicast/max_sessions: expected an unsigned integer, got "x"``) and
  :func:`loads` (JSON5, duplicate keys refused);
* :mod:`pyzenoh.config.policy`: :func:`check_config`, the start-up gate of a router or a
  session: refuses security settings pyzenoh does not implement and unservable endpoints
  (never start with security half applied), and logs ONE warning naming every harmless
  zenohd setting pyzenoh ignores although it is set. Security files are read, and
  refused when unreadable, by their own modules before anything listens or connects.

Where pyzenoh is deliberately stricter than zenoh 1.10.2 (each a tag of
:data:`~pyzenoh.config.nodes.STRICTER`, each tested in tests/config/):

* ``number``: zenoh's JSON5 reader casts any number into an integer field, truncating and
  saturating (``lease: -1`` is 0, ``batch_size: 70000`` is 65535, ``1.5`` is 1), and takes
  NaN and Infinity; pyzenoh wants a JSON integer within the field's range, and finite
  numbers everywhere;
* ``list``: serde takes a struct from a list of its fields in order (``transport/link/rx:
  [1]``); pyzenoh wants an object;
* ``lax``: a few zenoh structs lack ``deny_unknown_fields`` and drop misspelt keys
  silently (``connect/retry``, ``listen/retry``, ``{strategy, locators}`` endpoint groups,
  ``autoconnect_strategy`` maps, ``qos/publication`` and ``qos/network`` items,
  ``transport_weights`` and ``stats/filters`` items, ``plugins_loading/search_dirs``
  items); pyzenoh refuses them;
* duplicate keys in one object: zenoh refuses them in its own structs but keeps the last
  inside ``metadata`` and ``plugins``; pyzenoh refuses them everywhere (:func:`loads`).
"""

from __future__ import annotations

from pyzenoh.config.nodes import STRICTER, Problem
from pyzenoh.config.policy import (
    AS_IF,
    IMPLEMENTED,
    LINK_PROTOCOLS,
    REFUSED,
    Role,
    check_config,
    classify,
    endpoints_for,
)
from pyzenoh.config.schema import (
    OWN_SCHEMA,
    SCHEMA,
    ZENOH_SCHEMA,
    check_tree,
    insert_problems,
    loads,
    node_at,
    problems,
    raise_problems,
    split_key,
    validate,
)

__all__ = [
    "AS_IF",
    "IMPLEMENTED",
    "LINK_PROTOCOLS",
    "OWN_SCHEMA",
    "REFUSED",
    "SCHEMA",
    "STRICTER",
    "ZENOH_SCHEMA",
    "Problem",
    "Role",
    "check_config",
    "check_tree",
    "classify",
    "endpoints_for",
    "insert_problems",
    "loads",
    "node_at",
    "problems",
    "raise_problems",
    "split_key",
    "validate",
]
