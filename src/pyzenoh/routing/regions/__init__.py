"""The regions a face belongs to: what differs between clients, peers and router neighbours.

Like zenohd's "hat" split, each face holds its region (:attr:`Face.region
<pyzenoh.routing.faces.Face.region>`) and the routing rules ask it, instead of testing the
face's kind: what happens when a face of the region opens or closes, what its LINKSTATE
and DECLARE messages do, whether it sees another face's entities, whether it is told
about its own tokens, whether its interests aggregate, where its queryables stand for
BestMatching. One module per region: :mod:`.clients`, :mod:`.peers`, :mod:`.routers`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyzenoh.codec import Declare

if TYPE_CHECKING:
    from pyzenoh.routing.faces import Face

#: The groups BestMatching chooses in separately (:attr:`Region.group`).
REGION_CLIENTS, REGION_PEERS, REGION_ROUTERS = 0, 1, 2


class Region:
    """A region's behaviour; the base is what clients do (the other regions say how they
    differ). One instance per region and routing core, shared by its faces."""

    __slots__ = ()

    #: The group a face's own queryables stand in for BestMatching, and the "other
    #: region" the token and queryable rules compare: peers apart from everything else.
    #: (A router face never holds entities itself: remote routers' are the pseudo-face
    #: NORTH's, which is in the router region and groups with the clients.)
    group: int = REGION_CLIENTS

    def face_added(self, f: Face) -> None:
        """A face of this region opened (real routers send nothing to a client then)."""

    def face_removed(self, f: Face) -> None:
        """A face of this region is closing (its entities are gone already)."""

    def on_linkstate(self, f: Face, body: bytes) -> bool:
        """A LINKSTATE from ``f``; False: this region takes none (it is dropped)."""
        return False

    def on_declare(self, f: Face, msg: Declare) -> None:
        """A DECLARE from ``f``: the south's declaration rules."""
        raise NotImplementedError

    def sees(self, src: Region) -> bool:
        """Does a face of this region get to know what a face of ``src`` declares or sends
        (another face: a face never hears of itself)?"""
        return True

    def echoes_own_tokens(self) -> bool:
        """Is a face told about its own tokens? Real routers echo a client's (the API
        counts session-local tokens)."""
        return True

    def aggregates_interests(self) -> bool:
        """Are this region's aggregate interests answered with aggregated declarations?"""
        return True

    def keeps_interest_declarations(self) -> bool:
        """After INTEREST Final, does the face keep what the interest alone declared (and
        get its undeclarations later)? Clients do."""
        return True

    def wants_every_keyexpr(self) -> bool:
        """Is every declared key's prefix declared to the face with D_KEYEXPR, asked or
        not? Only router neighbours (checked on the wire)."""
        return False

    def links_routers(self) -> bool:
        """Is the face a link of the router mesh?"""
        return False

    def source_index(self, f: Face, node_id: int | None) -> int | None:
        """Index of the router where a message from ``f`` entered the mesh (0: here; None:
        an unknown NodeId)."""
        return 0

    def request_node(self, node: int | None) -> int | None:
        """The NodeId a REQUEST routed with ``node`` carries to a face of this region."""
        return None
