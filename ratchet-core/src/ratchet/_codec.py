"""JSON encoding of job arguments, params and results. Never pickle."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ratchet._limits import clip, echo
from ratchet._logs import get_logger
from ratchet._redact import redact
from ratchet.encryption import ENVELOPE_KEY
from ratchet.errors import ArgumentsNotSerializableError, PayloadTooLargeError

__all__ = ["encode_arguments", "encode_json", "encode_result", "type_name"]

log = get_logger("ratchet.codec")


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
    except (TypeError, ValueError, RecursionError) as exc:
        # echo(): the value may be huge, or an integer too long for repr() itself.
        raise ArgumentsNotSerializableError(
            f"{where} of job {job_name!r} is {echo(value)} of type {type_name(value)!r}, which "
            f"cannot be stored as JSON ({clip(str(exc))}). Pass JSON-compatible values (str, "
            "int, float, bool, None, lists, dicts with str keys), for example an id instead "
            "of an object."
        ) from None


def _explain(
    job_name: str, args: Sequence[Any], kwargs: Mapping[str, Any], params: Mapping[str, Any]
) -> None:
    """Raise ArgumentsNotSerializableError naming the first value that cannot be encoded."""
    for index, value in enumerate(args):
        _check(value, f"Positional argument {index}", job_name)
    for key, value in kwargs.items():
        _check(value, f"Keyword argument {echo(key)}", job_name)
    for key, value in params.items():
        _check(value, f"Param {echo(key)}", job_name)


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
    if _looks_sealed(args, kwargs, params):
        raise ArgumentsNotSerializableError(
            f"The arguments or params of job {job_name!r} use the key {ENVELOPE_KEY!r}, which "
            "Ratchet reserves for encrypted values; rename that key."
        )
    for key in params:
        if not isinstance(key, str):
            raise ArgumentsNotSerializableError(
                f"Param key {echo(key)} of job {job_name!r} is not a string; use str keys."
            )
    try:
        args_json = _ENCODER.encode(list(args))
        kwargs_json = _ENCODER.encode(dict(kwargs)) if kwargs else "{}"
        params_json = _ENCODER.encode(dict(params)) if params else "{}"
    except (TypeError, ValueError, RecursionError) as exc:
        _explain(job_name, args, kwargs, params)
        raise ArgumentsNotSerializableError(
            f"The arguments of job {job_name!r} cannot be stored as JSON ({clip(str(exc))}). Pass "
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


def _looks_sealed(
    args: Sequence[Any], kwargs: Mapping[str, Any], params: Mapping[str, Any]
) -> bool:
    """Whether a value would read back as a sealed one (:mod:`ratchet.encryption`)."""
    if ENVELOPE_KEY in kwargs or ENVELOPE_KEY in params:
        return True
    return len(args) == 1 and isinstance(args[0], Mapping) and ENVELOPE_KEY in args[0]


def encode_result(job_name: str, value: Any, *, max_bytes: int) -> tuple[str | None, str | None]:
    """``(json, type name)`` of a job's return value; ``(None, None)`` for ``None``.

    Must not raise. A result that cannot be encoded (any failure: TypeError for an
    object or a set, ValueError for NaN or a huge integer, RecursionError for deep
    nesting, UnicodeEncodeError for a lone surrogate, or whatever a custom container
    raises), or whose JSON exceeds ``max_bytes`` (``RATCHET_MAX_RESULT_KB``), is logged
    and dropped as ``(None, type name)``: the job still succeeds, ``job.result`` is
    ``None`` and ``job.result_type`` names the returned type.
    """
    if value is None:
        return None, None
    kind = _safe_type_name(value)
    try:
        text = encode_json(value)
        # Also refuses lone surrogates ("\ud800"), which no store can save as UTF-8.
        size = len(text.encode())
    except Exception as exc:  # a job's result must never keep its job from finishing
        log.warning(
            "Job %r returned a %s that cannot be stored as JSON (%s); the job succeeded but "
            "its result is not recorded. Return JSON-compatible values (str, int, float, "
            "bool, None, lists, dicts with str keys).",
            job_name,
            kind,
            _describe(exc),
        )
        return None, kind
    if size > max_bytes:
        log.warning(
            "Job %r returned a %s whose JSON is %d bytes, over the limit of %d bytes "
            "(RATCHET_MAX_RESULT_KB=%g); the job succeeded but its result is not recorded. "
            "Store large results elsewhere (a file, an object store) and return a "
            "reference, or raise the limit.",
            job_name,
            kind,
            size,
            max_bytes,
            max_bytes / 1024,
        )
        return None, kind
    return text, kind


def _safe_type_name(value: Any) -> str:
    try:
        return type_name(value)
    except Exception:  # a class with a broken __module__ or __qualname__
        return "<unknown type>"


def _describe(exc: BaseException, limit: int = 300) -> str:
    """``Type: message``, bounded and redacted; never raises (``__str__`` may)."""
    try:
        text = f"{type(exc).__name__}: {exc}"
    except Exception:
        text = f"{type(exc).__name__}: <unprintable {type(exc).__name__}>"
    return redact(text if len(text) <= limit else text[: limit - 1] + "…")
