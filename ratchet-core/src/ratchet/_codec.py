"""JSON encoding of job arguments, params and results. Never pickle."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ratchet.errors import ArgumentsNotSerializableError, PayloadTooLargeError

__all__ = ["encode_arguments", "encode_json", "encode_result", "type_name"]

log = logging.getLogger("ratchet.codec")


# One encoder for every call: json.dumps with options builds a new encoder each time.
_ENCODER = json.JSONEncoder(allow_nan=False, ensure_ascii=False, separators=(",", ":"))


def encode_json(value: Any) -> str:
    """Strict JSON: no NaN or infinities, non-ASCII kept as is."""
    return _ENCODER.encode(value)


def type_name(value: Any) -> str:
    kind = type(value)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def _check(value: Any, where: str, job_name: str) -> None:
    try:
        encode_json(value)
    except (TypeError, ValueError) as exc:
        raise ArgumentsNotSerializableError(
            f"{where} of job {job_name!r} is {value!r} of type {type_name(value)!r}, which "
            f"cannot be stored as JSON ({exc}). Pass JSON-compatible values (str, int, float, "
            "bool, None, lists, dicts with str keys), for example an id instead of an object."
        ) from None


def _explain(
    job_name: str, args: Sequence[Any], kwargs: Mapping[str, Any], params: Mapping[str, Any]
) -> None:
    """Raise ArgumentsNotSerializableError naming the first value that cannot be encoded."""
    for index, value in enumerate(args):
        _check(value, f"Positional argument {index}", job_name)
    for key, value in kwargs.items():
        _check(value, f"Keyword argument {key!r}", job_name)
    for key, value in params.items():
        _check(value, f"Param {key!r}", job_name)


def encode_arguments(
    job_name: str,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    max_bytes: int,
) -> tuple[str, str]:
    """Encode positional and keyword arguments; check params and the payload size.

    Raises ArgumentsNotSerializableError naming the first offending argument, and
    PayloadTooLargeError when arguments and params together exceed ``max_bytes``.
    """
    for key in params:
        if not isinstance(key, str):
            raise ArgumentsNotSerializableError(
                f"Param key {key!r} of job {job_name!r} is not a string; use str keys."
            )
    try:
        args_json = _ENCODER.encode(list(args))
        kwargs_json = _ENCODER.encode(dict(kwargs)) if kwargs else "{}"
        params_json = _ENCODER.encode(dict(params)) if params else "{}"
    except (TypeError, ValueError) as exc:
        _explain(job_name, args, kwargs, params)
        raise ArgumentsNotSerializableError(
            f"The arguments of job {job_name!r} cannot be stored as JSON ({exc}). Pass "
            "JSON-compatible values (str, int, float, bool, None, lists, dicts with str keys)."
        ) from None
    # UTF-8 needs at most 4 bytes per character: count bytes only when it could matter.
    size = len(args_json) + len(kwargs_json) + len(params_json)
    if size * 4 > max_bytes:
        size = len(args_json.encode()) + len(kwargs_json.encode()) + len(params_json.encode())
    if size > max_bytes:
        raise PayloadTooLargeError(
            f"The arguments of job {job_name!r} encode to {size} bytes, over the limit of "
            f"{max_bytes} bytes (RATCHET_MAX_PAYLOAD_KB={max_bytes / 1024:g}). Pass a "
            "reference (a database id, a file path, an object-store key) instead of the data, "
            "or raise the limit."
        )
    return args_json, kwargs_json


def encode_result(job_name: str, value: Any) -> tuple[str | None, str | None]:
    """``(json, type name)`` of a job's return value; ``(None, None)`` for ``None``.

    A result that cannot be encoded is logged and dropped: the job still succeeds.
    """
    if value is None:
        return None, None
    try:
        return encode_json(value), type_name(value)
    except (TypeError, ValueError) as exc:
        log.warning(
            "Job %r returned a %s that cannot be stored as JSON (%s); the job succeeded but "
            "its result is not recorded.",
            job_name,
            type_name(value),
            exc,
        )
        return None, type_name(value)
