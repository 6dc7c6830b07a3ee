"""The link-state graph against real 1.10.2 routers (and peers) behind recording relays:
what they sent, fed to our :class:`Network`, gives what they print in their admin space,
and what we send is what they sent on the wire."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyzenoh.codec.batch import BatchReader, decode_batch
from pyzenoh.codec.network import OAM_LINKSTATE, NetworkOam
from pyzenoh.codec.primitives import WhatAmI
from pyzenoh.codec.transport import Frame
from pyzenoh.routing.network import Network
from tests.routing.network_helpers import P, R, Z, check_trees, states
from tests.waits import value_of

INTEROP_TIMEOUT = 15.0


class Relay:
    """A recording TCP relay on 127.0.0.1 to ``target_port`` (its own event-loop thread).

    ``records``: (monotonic time, "a->b" from the connecting side | "b->a", bytes).
    ``hold=True``: connections wait (unanswered) until :meth:`release`.
    """

    def __init__(self, target_port: int, hold: bool = False) -> None:
        self.target_port = target_port
        self._hold = hold
        self._released: asyncio.Event | None = None
        self.records: list[tuple[float, str, bytes]] = []
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._writers: list[asyncio.StreamWriter] = []
        self._server: asyncio.Server | None = None
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self._thread.start()
        if not ready.wait(5.0):
            raise RuntimeError("relay did not start")

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._released = asyncio.Event()
        if not self._hold:
            self._released.set()
        self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        ready.set()
        self._loop.run_forever()

    def release(self) -> None:
        assert self._released is not None
        self._loop.call_soon_threadsafe(self._released.set)

    async def _handle(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        assert self._released is not None
        await self._released.wait()
        try:
            ur, uw = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            cw.close()
            return
        self._writers += [cw, uw]

        async def pump(r: asyncio.StreamReader, w: asyncio.StreamWriter, d: str) -> None:
            try:
                while data := await r.read(65536):
                    self.records.append((time.monotonic(), d, data))
                    w.write(data)
                    await w.drain()
            except (OSError, asyncio.CancelledError):
                pass
            finally:
                w.close()

        await asyncio.gather(pump(cr, uw, "a->b"), pump(ur, cw, "b->a"))

    def oams(self, direction: str, records: list[tuple[float, str, bytes]]) -> list[tuple[float, bytes]]:
        """(time, body) of the LINKSTATE OAMs sent in ``direction`` (first connection)."""
        out, reader = [], BatchReader()
        for t, d, data in records:
            if d == direction:
                for batch in reader.feed(data):
                    for tm in decode_batch(batch):
                        if isinstance(tm, Frame):
                            out += [
                                (t, m.body)
                                for m in tm.messages
                                if isinstance(m, NetworkOam) and m.oam_id == OAM_LINKSTATE
                            ]
        return out  # type: ignore[return-value]

    def close(self) -> None:
        async def stop() -> None:
            if self._server is not None:
                self._server.close()
            for w in self._writers:
                w.close()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop(), self._loop).result(5.0)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5.0)
        self._loop.close()


@contextlib.contextmanager
def closing_all() -> Iterator[list[Any]]:
    """Close (in reverse order) everything appended to the list, whatever happens."""
    things: list[Any] = []
    try:
        yield things
    finally:
        for thing in reversed(things):
            with contextlib.suppress(Exception):
                thing.close()


def zenoh_config(zenoh: Any, zid: str, mode: str, listen: int, connect: list[int]) -> Any:
    conf = zenoh.Config()
    conf.insert_json5("id", json.dumps(zid))
    conf.insert_json5("mode", json.dumps(mode))
    conf.insert_json5("listen/endpoints", json.dumps([f"tcp/127.0.0.1:{listen}"]))
    conf.insert_json5("connect/endpoints", json.dumps([f"tcp/127.0.0.1:{p}" for p in connect]))
    conf.insert_json5("scouting/multicast/enabled", "false")
    conf.insert_json5("adminspace/enabled", "true")
    return conf


def open_listening(zenoh: Any, ports: dict[str, int], zid: str, mode: str, connect: list[int]) -> Any:
    """Open a session listening on a free port (recorded in ``ports``); a port taken
    meanwhile (e.g. as another connection's local port) is replaced, up to 3 times."""
    from pyzenoh.localnet import free_port

    for attempt in range(3):
        ports[zid] = free_port()
        try:
            return zenoh.open(zenoh_config(zenoh, zid, mode, ports[zid], connect))
        except zenoh.ZError as exc:
            if "already in use" not in str(exc) or attempt == 2:
                raise
    raise AssertionError("unreachable")


def admin(session: Any, selector: str, timeout: float = 3.0) -> dict[str, bytes]:
    """Admin-space replies to ``selector`` (at most ``timeout`` + 2 s of waiting).

    Polled from a channel: no Python callback runs on zenoh's threads, and a query that
    would not end cannot hang the test."""
    import zenoh

    out: dict[str, bytes] = {}
    replies = session.get(selector, timeout=timeout)
    deadline = time.monotonic() + timeout + 2.0
    while time.monotonic() < deadline:
        try:
            reply = replies.try_recv()
        except zenoh.ZError:  # closed: the query ended
            break
        if reply is None:
            time.sleep(0.01)
        elif reply.ok:
            out[str(reply.ok.key_expr)] = reply.ok.payload.to_bytes()
    return out


DOT_NODE = re.compile(r'^    (\d+) \[ label = "([0-9a-f]+)" \]$')
DOT_EDGE = re.compile(r'^    (\d+) -- (\d+) \[ label = "([0-9.]+)" \]$')


def parse_dot(text: str) -> tuple[dict[int, str], set[tuple[frozenset[str], str]]]:
    nodes: dict[int, str] = {}
    edges = set()
    lines = text.split("\n")
    assert lines[0] == "graph {" and lines[-2:] == ["}", ""]
    for line in lines[1:-2]:
        if mn := DOT_NODE.match(line):
            nodes[int(mn[1])] = mn[2]
        else:
            me = DOT_EDGE.match(line)
            assert me is not None, line
            edges.add((frozenset((nodes[int(me[1])], nodes[int(me[2])])), me[3]))
    return nodes, edges


def replay(
    zid: str,
    locators: list[str],
    links: dict[int, tuple[str, WhatAmI, list[tuple[float, bytes]], list[tuple[float, bytes]]]],
    **kw: Any,
) -> tuple[Network, dict[int, list[bytes]]]:
    """A Network fed, in capture order, what a real router received on each link (its own
    first sending on a link marks when it opened). Returns it and what it sent per link."""
    events: list[tuple[float, int, int, Any]] = []
    for link, (peer, whatami, received, sent) in links.items():
        opened = min(t for t, _ in received[:1] + sent[:1]) - 1e-6
        events.append((opened, 0, link, (peer, whatami)))
        events += [(t, 1, link, body) for t, body in received]
    net = Network(Z(zid), R, locators=lambda: locators, **kw)
    out: dict[int, list[bytes]] = {link: [] for link in links}
    for _, kind, link, arg in sorted(events, key=lambda e: (e[0], e[1])):
        sends = net.add_link(link, Z(arg[0]), arg[1]) if kind == 0 else net.link_states(link, arg)[1]
        for lk, body in sends:
            out[lk].append(body)
    net.compute_trees()
    return net, out


@pytest.mark.interop
@pytest.mark.timeout(60)
def test_real_triangle_weights_trees_and_messages() -> None:
    """Three real routers in a triangle (b2 -> a1, then c3 -> a1 and c3 -> b2), every link
    through a recording relay. Each router's received LINKSTATEs, fed to a Network, give
    the graph (indexes, edges, printed weights) and the trees (route successors) that
    router prints in its admin space, and while only a1 and b2 were up we sent exactly
    their bytes. (Later sends depend on which message each router handled first, which
    relay timestamps do not tell: they are not compared.)"""
    zenoh: Any = pytest.importorskip("zenoh")

    def exchanged(relay: Relay, n: int) -> bool:
        records = list(relay.records)
        return len(relay.oams("a->b", records)) >= n and len(relay.oams("b->a", records)) >= n

    ports: dict[str, int] = {}
    relays: dict[str, Relay] = {}
    with closing_all() as opened:
        opened.append(open_listening(zenoh, ports, "a1", "router", []))
        for name in ("ab", "ac"):
            relays[name] = Relay(ports["a1"])
            opened.append(relays[name])
        rab = relays["ab"]
        opened.append(open_listening(zenoh, ports, "b2", "router", [rab.port]))
        # c3 -> b2 waits until c3 -> a1 is up, so that every router numbers alike each run
        relays["bc"] = Relay(ports["b2"], hold=True)
        opened.append(relays["bc"])
        value_of(lambda: exchanged(rab, 2))
        time.sleep(0.2)  # nothing else is sent between two routers alone
        pair_phase = list(rab.records)
        opened.append(open_listening(zenoh, ports, "c3", "router", [relays["ac"].port, relays["bc"].port]))
        value_of(lambda: exchanged(relays["ac"], 2))
        time.sleep(0.2)  # an absence, as above: the pair's exchange is complete
        relays["bc"].release()
        value_of(lambda: exchanged(relays["bc"], 1))
        # one client per router, reading that router's own admin space
        clients = {}
        for z, port in ports.items():
            client_conf = zenoh.Config()
            client_conf.insert_json5("mode", '"client"')
            client_conf.insert_json5("connect/endpoints", json.dumps([f"tcp/127.0.0.1:{port}"]))
            client_conf.insert_json5("scouting/multicast/enabled", "false")
            clients[z] = zenoh.open(client_conf)
            opened.append(clients[z])

        def converged() -> dict[str, bytes] | None:
            seen: dict[str, bytes] = {}
            for z, client in clients.items():
                text = admin(client, f"@/{z}/router/linkstate/north").get(f"@/{z}/router/linkstate/north", b"")
                succ = admin(client, f"@/{z}/router/route/successor/**")
                if text.count(b" -- ") != 3 or len(succ) != 6:
                    return None
                seen[f"@/{z}/router/linkstate/north"] = text
                seen.update(succ)
            return seen

        value_of(converged)
        # zenohd recomputes its trees in a worker, 100 ms after a change: let it run
        time.sleep(0.5)
        seen = converged()
        assert seen is not None
        info = {z: json.loads(admin(clients[z], f"@/{z}/router")[f"@/{z}/router"]) for z in ports}
        records = {name: list(r.records) for name, r in relays.items()}
    # (everything is closed here; the relays recorded the shutdown too)

    def flows(name: str, received: str, recs: dict[str, list[Any]]) -> tuple[list[Any], list[Any]]:
        sent = "a->b" if received == "b->a" else "b->a"
        return relays[name].oams(received, recs[name]), relays[name].oams(sent, recs[name])

    # per router: link id -> (neighbour, relay, the direction that reaches this router)
    layout = {
        "a1": {1: ("b2", "ab", "a->b"), 2: ("c3", "ac", "a->b")},
        "b2": {1: ("a1", "ab", "b->a"), 2: ("c3", "bc", "a->b")},
        "c3": {1: ("a1", "ac", "b->a"), 2: ("b2", "bc", "b->a")},
    }
    for zid, links in layout.items():
        spec = {lk: (peer, R, *flows(rel, d, records)) for lk, (peer, rel, d) in links.items()}
        net, _ = replay(zid, info[zid]["locators"], spec)
        # same nodes at the same indexes, same edges with the same printed weights
        real_text = seen[f"@/{zid}/router/linkstate/north"].decode()
        # (the text itself matches too when we handled events in the router's order, which
        # relay timestamps only approximate: edge order and orientation may then differ)
        assert parse_dot(net.dot()) == parse_dot(real_text), zid
        # same trees: the next hop from this router for every (tree, destination)
        real_succ = {
            tuple(k.split("/")[6::2]) + (json.loads(v),)
            for k, v in seen.items()
            if k.startswith(f"@/{zid}/router/route/successor/")
        }
        assert {(str(s), str(d), str(n)) for s, d, n in net.route_successors()} == real_succ, zid
        check_trees(net)
        # the shutdown's link-state traffic is accepted too
        everything = {name: list(r.records) for name, r in relays.items()}
        replay(
            zid,
            info[zid]["locators"],
            {lk: (peer, R, *flows(rel, d, everything)) for lk, (peer, rel, d) in links.items()},
        )
    # while only a1 and b2 were up, each of our replays sent exactly what the router sent
    pair = {"ab": pair_phase}
    for zid, peer, received in (("a1", "b2", "a->b"), ("b2", "a1", "b->a")):
        got, sent = flows("ab", received, pair)
        _, ours = replay(zid, info[zid]["locators"], {1: (peer, R, got, sent)})
        assert ours[1] == [body for _, body in sent] and len(sent) == 2, zid
    # @/<zid>/router: one session per neighbour router, in the north region, whose
    # "weight" is our links_info()
    for zid, links in layout.items():
        north = [s for s in info[zid]["sessions"] if s["whatami"] == "router"]
        assert sorted(s["peer"] for s in north) == sorted(set(layout) - {zid})
        net, _ = replay(
            zid, info[zid]["locators"], {lk: (peer, R, *flows(rel, d, records)) for lk, (peer, rel, d) in links.items()}
        )
        weights: dict[str, dict[str, int | None]] = {
            str(z): {"src_weight": sw, "dst_weight": dw, "actual_weight": aw}
            for z, (sw, dw, aw) in net.links_info().items()
        }
        assert {s["peer"]: s["weight"] for s in north} == weights
        assert all(s["region"] == "north" for s in north)


@pytest.mark.interop
@pytest.mark.timeout(60)
def test_real_router_gossip_with_peers() -> None:
    zenoh: Any = pytest.importorskip("zenoh")

    ports: dict[str, int] = {}
    with closing_all() as opened:
        router = open_listening(zenoh, ports, "a1", "router", [])
        opened.append(router)
        r1, r2 = Relay(ports["a1"]), Relay(ports["a1"])
        opened += [r1, r2]
        opened.append(open_listening(zenoh, ports, "d4", "peer", [r1.port]))
        value_of(lambda: len(r1.oams("a->b", list(r1.records))) >= 1)
        opened.append(open_listening(zenoh, ports, "e5", "peer", [r2.port]))

        def settled() -> dict[str, bytes] | None:
            # both peers met each other and told the router (their states list 2 links)
            d4 = [s for _, b in r1.oams("a->b", list(r1.records)) for s in states(b) if s.psid == 0]
            e5 = [s for _, b in r2.oams("a->b", list(r2.records)) for s in states(b) if s.psid == 0]
            if not (d4 and e5 and len(d4[-1].links) == 2 and len(e5[-1].links) == 2):
                return None
            return admin(router, "@/a1/router/linkstate/**") or None

        texts = value_of(settled)
        time.sleep(0.2)  # an absence: no last gossip changes the states read below
        texts = admin(router, "@/a1/router/linkstate/**")
        info = json.loads(admin(router, "@/a1/router")["@/a1/router"])
        records = {"d4": list(r1.records), "e5": list(r2.records)}

    spec = {
        1: ("d4", P, r1.oams("a->b", records["d4"]), r1.oams("b->a", records["d4"])),
        2: ("e5", P, r2.oams("a->b", records["e5"]), r2.oams("b->a", records["e5"])),
    }
    net, ours = replay("a1", info["locators"], spec, full_linkstate=False, gateway=True)
    # byte for byte what the real router sent each peer: first the empty list, then the
    # other peer's zid, whatami and locators
    for lk in spec:
        assert ours[lk] == [body for _, body in spec[lk][3]], lk
    assert ours[1][0] == b"\x00"
    assert states(ours[2][0])[0].zid == Z("d4") and states(ours[1][1])[0].zid == Z("e5")
    assert net.dot() == texts["@/a1/router/linkstate/south:0:peer"].decode()
    assert texts["@/a1/router/linkstate/north"].decode() == 'graph {\n    0 [ label = "a1" ]\n}\n'
    assert sorted((s["peer"], s["region"]) for s in info["sessions"]) == [
        ("d4", "south:0:peer"),
        ("e5", "south:0:peer"),
    ]
