"""with_request_id: a forwarded reply's bytes with the querier's request id are the bytes
of the same message encoded with that id."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec import Request, Response, ResponseFinal, encode_network_message
from pyzenoh.codec.network import with_request_id
from pyzenoh.errors import UsageError
from tests.codec.strategies import requests, response_finals, responses
from tests.hyp import ROUNDTRIP

U32 = st.integers(0, 2**32 - 1)


@ROUNDTRIP
@given(st.one_of(requests, responses, response_finals), U32)
def test_rewritten_bytes_are_the_encoding_with_the_new_id(msg: Request | Response | ResponseFinal, rid: int) -> None:
    raw = encode_network_message(msg)
    assert with_request_id(raw, rid) == encode_network_message(dataclasses.replace(msg, request_id=rid))


def test_refuses_what_is_not_a_message_with_a_request_id() -> None:
    with pytest.raises(UsageError):
        with_request_id(b"\x0b", 1)  # the header alone
    with pytest.raises(UsageError):
        with_request_id(b"\x0b\x80\x80\x80\x80\x80\x80", 1)  # a VLE longer than a u32's
    with pytest.raises(UsageError):
        with_request_id(encode_network_message(ResponseFinal(7)), 2**32)
