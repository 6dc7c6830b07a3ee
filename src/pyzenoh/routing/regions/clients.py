"""The client region: client sessions and the router's own local sessions.

The base :class:`~pyzenoh.routing.regions.Region` is their behaviour; this module names
it and gives it the declaration rules it uses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from typing_extensions import override

from pyzenoh.codec import Declare
from pyzenoh.routing.regions import Region

if TYPE_CHECKING:
    from pyzenoh.routing.faces import Face


class Clients(Region):
    """Client faces: their declarations go to the south's rules; no LINKSTATE."""

    __slots__ = ("_declare",)

    def __init__(self, declare: Callable[[Face, Declare], None]) -> None:
        self._declare = declare

    @override
    def on_declare(self, f: Face, msg: Declare) -> None:
        self._declare(f, msg)
