"""The mesh audit's rule for where a sample stopped (no Spark)."""

from __future__ import annotations

from collections.abc import Iterable

from pyzenoh.pipeline.mesh_loss import (
    ACCESS_CONTROL,
    INTERCEPTOR,
    LINK_DOWN,
    LOST_ON_LINK,
    NO_ROUTE,
    NOT_RECORDED,
    QUEUE_FULL,
    Hop,
    Loss,
    RouterLink,
    Topology,
    where_lost,
)

SETTLE = 1_000
T = 10_000


def _line(close_bc: int | None = None) -> Topology:
    """A - B - C: A's face 1 to B, B's faces 1 to A and 2 to C, C's face 1 to B."""
    return Topology(
        [
            RouterLink("A", 0, 1, "B", 0, None),
            RouterLink("B", 0, 1, "A", 0, None),
            RouterLink("B", 0, 2, "C", 0, close_bc),
            RouterLink("C", 0, 1, "B", 0, close_bc),
        ],
        ["A", "B", "C"],
    )


def _hop(
    router: str,
    sent: Iterable[int] = (),
    denied: Iterable[int] = (),
    dropped: Iterable[int] = (),
    ingress: bool = False,
    intercepted: Iterable[int] = (),
    ingress_intercepted: bool = False,
) -> Hop:
    return Hop(
        router,
        0,
        frozenset(sent),
        frozenset(denied),
        frozenset(dropped),
        ingress,
        frozenset(intercepted),
        ingress_intercepted,
    )


def test_stopped_on_the_subscribers_router() -> None:
    hops = [_hop("A", {1}), _hop("B", {2}), _hop("C")]
    assert where_lost(hops, "C", 5, T, _line(), SETTLE) == Loss("C", "C#5", NO_ROUTE)
    hops[2] = _hop("C", dropped={5})
    assert where_lost(hops, "C", 5, T, _line(), SETTLE) == Loss("C", "C#5", QUEUE_FULL)
    hops[2] = _hop("C", denied={5})
    assert where_lost(hops, "C", 5, T, _line(), SETTLE) == Loss("C", "C#5", ACCESS_CONTROL)
    hops[2] = _hop("C", intercepted={5})
    assert where_lost(hops, "C", 5, T, _line(), SETTLE) == Loss("C", "C#5", INTERCEPTOR)


def test_sent_on_a_router_link_and_never_received() -> None:
    hops = [_hop("A", {1}), _hop("B", {2})]
    assert where_lost(hops, "C", 5, T, _line(), SETTLE) == Loss("B", "B->C", LOST_ON_LINK)
    # The link closed right after: it took the sample down with it.
    assert where_lost(hops, "C", 5, T, _line(close_bc=T + 10), SETTLE) == Loss("B", "B->C", LINK_DOWN)


def test_not_sent_on_a_link_that_closed_right_after() -> None:
    # the link went down as the sample went by: the route went with it
    hops = [_hop("A", {1}), _hop("B")]
    assert where_lost(hops, "C", 5, T, _line(close_bc=T + 1), SETTLE) == Loss("B", "B->C", LINK_DOWN)


def test_not_sent_toward_the_next_router() -> None:
    assert where_lost([_hop("A", {1}), _hop("B")], "C", 5, T, _line(), SETTLE) == Loss("B", "B->C", NO_ROUTE)
    hops = [_hop("A", {1}), _hop("B", dropped={2})]
    assert where_lost(hops, "C", 5, T, _line(), SETTLE) == Loss("B", "B->C", QUEUE_FULL)
    hops = [_hop("A", ingress=True)]
    assert where_lost(hops, "C", 5, T, _line(), SETTLE) == Loss("A", "A->B", ACCESS_CONTROL)
    hops = [_hop("A", ingress_intercepted=True)]
    assert where_lost(hops, "C", 5, T, _line(), SETTLE) == Loss("A", "A->B", INTERCEPTOR)
    hops = [_hop("A", {1}), _hop("B", intercepted={2})]
    assert where_lost(hops, "C", 5, T, _line(), SETTLE) == Loss("B", "B->C", INTERCEPTOR)


def test_no_open_link_toward_the_subscribers_router() -> None:
    # B - C was closed before the sample: from A and B nothing led to C.
    hops = [_hop("A", {1}), _hop("B")]
    assert where_lost(hops, "C", 5, T, _line(close_bc=T - 1), SETTLE) == Loss("A", None, LINK_DOWN)


def test_next_router_not_recorded() -> None:
    topo = Topology(
        [RouterLink("A", 0, 1, "B", 0, None), RouterLink("B", 0, 2, "C", 0, None), RouterLink("C", 0, 1, "B", 0, None)],
        ["A", "C"],  # B's recording is missing
    )
    assert where_lost([_hop("A", {1})], "C", 5, T, topo, SETTLE) == Loss("A", "A->B", NOT_RECORDED)


def test_no_hop_at_all() -> None:
    assert where_lost([], "C", 5, T, _line(), SETTLE) == Loss(None, None, NOT_RECORDED)
