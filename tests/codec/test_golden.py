"""Every batch of every captured real 1.10.2 session decodes and re-encodes identically."""

from __future__ import annotations

import pytest

from pyzenoh.codec import BatchReader, Fragment, Frame, decode_batch, encode_batch
from pyzenoh.codec.network import decode_network_message, encode_network_message
from tests.codec.sessions import split_batches, streams

STREAMS = streams()


@pytest.mark.parametrize("stream", STREAMS, ids=[s.label for s in STREAMS])
def test_every_batch_roundtrips(stream) -> None:  # type: ignore[no-untyped-def]
    batches = list(split_batches(stream.data))
    assert batches
    fragments = bytearray()
    for payload in batches:
        messages = decode_batch(payload)
        assert encode_batch(messages) == payload
        for msg in messages:
            if isinstance(msg, Fragment):
                if msg.first:
                    fragments.clear()
                fragments += msg.payload
                if not msg.more:
                    big = decode_network_message(bytes(fragments))
                    assert encode_network_message(big) == bytes(fragments)
                    fragments.clear()


@pytest.mark.parametrize("stream", STREAMS, ids=[s.label for s in STREAMS])
def test_stream_reader_matches_tcp_reads_and_single_bytes(stream) -> None:  # type: ignore[no-untyped-def]
    expected = list(split_batches(stream.data))
    by_reads = BatchReader()
    got = [b for chunk in stream.chunks for b in by_reads.feed(chunk)]
    assert got == expected
    by_byte = BatchReader()
    data = stream.data
    got = [b for i in range(len(data)) for b in by_byte.feed(data[i : i + 1])]
    assert got == expected
    assert by_byte.buffered == 0


def test_raw_slices_are_the_encoded_messages() -> None:
    seen = 0
    for stream in STREAMS:
        for payload in split_batches(stream.data):
            for msg in decode_batch(payload, keep_raw=True):
                if isinstance(msg, Frame):
                    assert len(msg.raw) == len(msg.messages)
                    for raw, net in zip(msg.raw, msg.messages, strict=True):
                        assert encode_network_message(net) == raw
                        seen += 1
    assert seen > 100
