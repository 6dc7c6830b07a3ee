"""The PUSH data plane: PUSH and FRAME bytes read and written without codec objects.

Every module here imports only the codec, which owns the wire format and its constants;
nothing here decides where a message goes (that is :mod:`pyzenoh.routing.pubsub`).

- :mod:`.scan`: a common-shape PUSH's fields (:class:`PushFields`), a FRAME's head, a
  batch that is one FRAME of one PUSH (the lone lane's input).
- :mod:`.runs`: runs of same-shape PUSHes (:class:`PushRun`), found column by column.
- :mod:`.batch`: a batch decoded as the codec would, faster on publication traffic.
- :mod:`.joining`: a read's small one-FRAME batches joined back into one FRAME.
- :mod:`.columns`: many common-shape PUSHes read at once, field by field, as numpy
  columns (the pipeline's decoder of recordings).
- :mod:`.splice`: routed bytes written from received ones: heads swapped, timestamps
  (and columns of them, with numpy) spliced in.
"""

from pyzenoh.dataplane.batch import decode_batch
from pyzenoh.dataplane.runs import MIN_RUN, PushRun, scan_run, split_pushes
from pyzenoh.dataplane.scan import (
    ID_DEL,
    ID_FRAME,
    ID_PUSH,
    ID_PUT,
    PushFields,
    decode_push,
    frame_head,
    push_of,
    scan_lone,
    scan_push,
)

__all__ = [
    "ID_DEL",
    "ID_FRAME",
    "ID_PUSH",
    "ID_PUT",
    "MIN_RUN",
    "PushFields",
    "PushRun",
    "decode_batch",
    "decode_push",
    "frame_head",
    "push_of",
    "scan_lone",
    "scan_push",
    "scan_run",
    "split_pushes",
]
