"""QoS: the priority, congestion-control and express bits of a network message's QoS
extension, and the values real nodes put there.
"""

from __future__ import annotations

from enum import IntEnum

from pyzenoh.codec.primitives import check_bound


class Priority(IntEnum):
    CONTROL = 0
    REAL_TIME = 1
    INTERACTIVE_HIGH = 2
    INTERACTIVE_LOW = 3
    DATA_HIGH = 4
    DATA = 5
    DATA_LOW = 6
    BACKGROUND = 7


QOS_PRIORITY_MASK = 0x07
QOS_BLOCK = 0x08  # congestion control: block (else drop)
QOS_EXPRESS = 0x10
QOS_BLOCK_FIRST = 0x20
#: Data priority, drop, not express: the value every message omits.
QOS_DEFAULT = 0x05
#: What real nodes put on DECLARE and INTEREST: Control | Block.
QOS_DECLARE = 0x08
#: What real nodes put on REQUEST / RESPONSE / RESPONSE_FINAL: Data | Block.
QOS_REQUEST = 0x0D


def qos_value(priority: int = Priority.DATA, block: bool = False, express: bool = False) -> int:
    check_bound(priority, 7, "priority")
    return priority | (QOS_BLOCK if block else 0) | (QOS_EXPRESS if express else 0)
