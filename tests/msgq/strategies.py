"""Hypothesis strategies for Skan values and frames."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from pyzenoh.msgq.skan import SkanValue

text = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
# <= 40 code points of <= 4 bytes: always under the 255-byte tag limit.
keys = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
seed_keys = keys.filter(bool)

scalars: st.SearchStrategy[SkanValue] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**300), max_value=10**300),
    st.floats(allow_nan=False),
    text,
    st.binary(max_size=300),
)


def values(key_strategy: st.SearchStrategy[str] = keys) -> st.SearchStrategy[SkanValue]:
    return st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=6),
            st.dictionaries(key_strategy, children, max_size=6),
        ),
        max_leaves=20,
    )


def messages(key_strategy: st.SearchStrategy[str] = keys) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(key_strategy, values(key_strategy), max_size=8)


def seedify(value: Any) -> Any:
    """What a seed-encoded value decodes to: every scalar becomes the bytes of its text."""
    if value is None:
        return None
    if isinstance(value, dict):
        return {k: seedify(v) for k, v in value.items()}
    if isinstance(value, list):
        return [seedify(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, float):
        return repr(value).encode()
    return str(value).encode()
