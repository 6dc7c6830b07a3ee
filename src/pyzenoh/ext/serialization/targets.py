"""What :func:`~pyzenoh.ext.serialization.z_deserialize` is asked to build: a class or a
``types.GenericAlias`` (``list[int]``, ``dict[str, tuple[int, float]]``) resolved to a
:class:`~.kinds._Kind` and its type parameters, with zenoh-python's errors for anything
else (``typing.List``, ``Optional``, ``X | Y``, a missing type parameter).
"""

from __future__ import annotations

import types
import typing
from typing import Any, Final

from pyzenoh.ext.serialization.kinds import _Kind, _kind_of_type

_Args = tuple[Any, ...] | None

_UNSPECIALIZED: Final = "collection types must be specialized with their generic parameter(s)"


def _not_a_type(obj: object) -> TypeError:
    return TypeError(f"'{type(obj).__name__}' object cannot be converted to 'PyType'")


_RESOLVED: dict[object, tuple[_Kind, _Args]] = {}
_RESOLVED_MAX: Final = 1024


def _resolve(tp: object) -> tuple[_Kind, _Args]:
    """The kind of a deserialization target and its type parameters (None when it has none).

    Successful resolutions are remembered (the same types come back for every item of a
    collection); failures are not, so they are raised again where zenoh raises them.
    """
    try:
        return _RESOLVED[tp]
    except KeyError:
        hashable = True
    except TypeError:  # list[[1]]: resolved all the same, but not remembered
        hashable = False
    resolved = _resolve_uncached(tp)
    if hashable:
        if len(_RESOLVED) >= _RESOLVED_MAX:
            _RESOLVED.clear()
        _RESOLVED[tp] = resolved
    return resolved


def _resolve_uncached(tp: object) -> tuple[_Kind, _Args]:
    if isinstance(tp, types.GenericAlias):
        origin = typing.get_origin(tp)
        if not isinstance(origin, type):
            raise _not_a_type(origin)
        return _kind_of_type(origin), typing.get_args(tp)
    if not isinstance(tp, type):
        raise _not_a_type(tp)
    return _kind_of_type(tp), None


def _is_zero_size(tp: object) -> bool:
    """Whether values of ``tp`` occupy no bytes: tuples of nothing but such tuples."""
    if not isinstance(tp, types.GenericAlias) or typing.get_origin(tp) is not tuple:
        return False
    args = typing.get_args(tp)
    if len(args) > 1 and args[1] is Ellipsis:
        return False
    return all(_is_zero_size(arg) for arg in args)


def _unwrap(args: _Args) -> tuple[Any, ...]:
    if args is None:
        raise ValueError(_UNSPECIALIZED)
    return args
