"""One channel's MessageIndex of the chunk being built: its (log time, offset) pairs.

Records written one by one add their pair to :attr:`MessageIndex.pairs`, a plain list
the hot path extends in place; a routed run adds its pairs as one numpy block (no Python
int is made per record). The chunk's index record is then one numpy concatenation and
conversion, and its time range one min/max, instead of Python loops over every entry.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]

_U64_LE = np.dtype("<u8")


class MessageIndex:
    """The (log time, offset) pairs of one channel's records in a chunk, in order."""

    __slots__ = ("_block_entries", "_blocks", "pairs")

    def __init__(self) -> None:
        #: Pairs of records added one by one since the last block, flat: time, offset, ...
        #: Callers extend it in place (``pairs += (t, off)``); never rebind it.
        self.pairs: list[int] = []
        self._blocks: list[I64] = []
        self._block_entries = 0

    def __len__(self) -> int:
        """Entries (records), not ints."""
        return self._block_entries + len(self.pairs) // 2

    def __bool__(self) -> bool:
        return bool(self.pairs) or bool(self._blocks)

    def add_block(self, flat: I64) -> None:
        """Append pairs already laid out flat (time, offset, time, offset, ...)."""
        if not flat.size:
            return
        if flat.size % 2:
            raise ValueError("a MessageIndex block holds (time, offset) pairs")
        self._seal()
        self._blocks.append(flat)
        self._block_entries += flat.size // 2

    def undo(self, start: int) -> None:
        """Forget the pairs added one by one whose record starts at or after ``start``
        (a call that failed half-way; blocks are added whole, after their records)."""
        pairs = self.pairs
        while pairs and pairs[-1] >= start:
            del pairs[-2:]

    def encode(self) -> tuple[bytes, int, int]:
        """The entries as the index record stores them (little-endian u64 pairs), with
        the smallest and largest log time (0, 0 when empty)."""
        self._seal()
        blocks = self._blocks
        if not blocks:
            return b"", 0, 0
        flat = blocks[0] if len(blocks) == 1 else np.concatenate(blocks)
        times = flat[0::2]
        return flat.astype(_U64_LE).tobytes(), int(times.min()), int(times.max())

    def clear(self) -> None:
        self.pairs.clear()
        self._blocks = []
        self._block_entries = 0

    def _seal(self) -> None:
        """Turn the pairs added one by one into a block (keeping the list object)."""
        pairs = self.pairs
        if pairs:
            self._blocks.append(np.array(pairs, np.int64))
            self._block_entries += len(pairs) // 2
            pairs.clear()
