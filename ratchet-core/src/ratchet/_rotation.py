"""``ratchet keys rotate``: re-seal every stored payload with the current write key.

After a new key is put first in ``RATCHET_ENCRYPTION_KEYS`` (the old ones kept after it),
new values are sealed with it at once, but stored rows keep the key they were sealed with.
A rotation walks the live jobs, the archive and the recurring templates in id order, in
batches, and re-seals every value whose key is not the write key (arguments, params,
results and delivered signal payloads). A row is rewritten
only while its status and claim sequence are the ones it was read with
(:meth:`ratchet.spi.SupportsPayloadRewrite.rewrite_payload`), so a rotation never
overwrites a worker's outcome; such a row is counted as moved on and the next run takes
it again.

Resumable by design: a row already sealed with the write key is left alone, so a run that
stopped half-way (``after_id`` starts it past what was done) or a second run only does
what is left. The old keys can be dropped once a run reports nothing left under them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ratchet._codec import encode_json
from ratchet._logs import get_logger
from ratchet._types import StoredPayload
from ratchet.encryption import ENVELOPE_KEY, Encryption, sealed_token, token_key_id
from ratchet.errors import RatchetError
from ratchet.spi import JobStore, SupportsPayloadRewrite

__all__ = ["KeyRotation", "rotate_keys"]

log = get_logger("ratchet.rotation")


@dataclass(slots=True)
class KeyRotation:
    """What a rotation did. ``moved_on`` rows changed while they were being re-sealed
    (claimed, completed, archived): run again to take them. ``unreadable`` values could
    not be opened with any configured key (their job ids in ``unreadable_ids``, at most
    100): they keep their old seal."""

    write_key_id: str
    resealed: int = 0
    current: int = 0
    moved_on: int = 0
    unreadable: int = 0
    schedules_resealed: int = 0
    last_id: str | None = None
    unreadable_ids: list[str] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        """True when nothing is left under an old key (the old keys may go)."""
        return self.moved_on == 0 and self.unreadable == 0


def rotate_keys(
    store: JobStore,
    encryption: Encryption,
    *,
    batch_size: int = 500,
    after_id: str | None = None,
    on_batch: Callable[[KeyRotation], None] | None = None,
) -> KeyRotation:
    """Re-seal what ``store`` holds under an old key with ``encryption``'s write key.

    Live jobs first (from ``after_id`` on, when given), then the archive, then the
    recurring templates. ``on_batch`` is told the running totals after every batch
    (``last_id`` is where a stopped run can resume). RatchetError when the store cannot
    rewrite payloads (it lacks :class:`~ratchet.spi.SupportsPayloadRewrite`).
    """
    if not isinstance(store, SupportsPayloadRewrite):
        raise RatchetError(
            f"The store {store.describe()} cannot rewrite stored payloads "
            "(it lacks SupportsPayloadRewrite), so its keys cannot be rotated in place. "
            "Use a first-party store, or keep the old keys configured."
        )
    report = KeyRotation(write_key_id=encryption.write_key_id)
    resealer = _Resealer(encryption)
    for archived in (False, True):
        after = None if archived else after_id
        while True:
            batch = store.scan_payloads(archived=archived, after_id=after, limit=batch_size)
            for stored in batch:
                _reseal_row(store, resealer, report, stored)
            if batch:
                after = report.last_id = batch[-1].job_id
                if on_batch is not None:
                    on_batch(report)
            if len(batch) < batch_size:
                break
    report.schedules_resealed = _reseal_schedules(store, resealer)
    return report


def _reseal_row(
    store: SupportsPayloadRewrite, resealer: _Resealer, report: KeyRotation, stored: StoredPayload
) -> None:
    job_id = stored.job_id
    try:
        args_json = resealer.text(stored.args_json, job_id, "args", in_list=True)
        kwargs_json = resealer.text(stored.kwargs_json, job_id, "kwargs")
        params = resealer.params(stored.params, job_id)
        result_json = (
            None
            if stored.result_json is None
            else resealer.text(stored.result_json, job_id, "result")
        )
        signal_json = (
            None
            if stored.signal_json is None
            else resealer.text(stored.signal_json, job_id, "signal")
        )
    except RatchetError as exc:  # no configured key opens it, or it was changed
        report.unreadable += 1
        if len(report.unreadable_ids) < 100:
            report.unreadable_ids.append(job_id)
        log.warning("Job %s keeps its old seal: %s", job_id, exc)
        return
    unchanged = (
        args_json is stored.args_json
        and kwargs_json is stored.kwargs_json
        and params is stored.params
        and result_json is stored.result_json
        and signal_json is stored.signal_json
    )
    if unchanged:
        report.current += 1
        return
    # A signal payload is passed only when there is one: a store without signals has no
    # such parameter.
    extra = {} if signal_json is None else {"signal_json": signal_json}
    if store.rewrite_payload(
        stored,
        args_json=args_json,
        kwargs_json=kwargs_json,
        params=params,
        result_json=result_json,
        **extra,
    ):
        report.resealed += 1
    else:
        report.moved_on += 1


def _reseal_schedules(store: JobStore, resealer: _Resealer) -> int:
    """Recurring templates under an old key, saved again re-sealed."""
    count = 0
    for definition in store.list_recurring():
        owner = definition.id
        args_json = resealer.text(
            definition.args_json, owner, "args", in_list=True, kind="recurring"
        )
        kwargs_json = resealer.text(definition.kwargs_json, owner, "kwargs", kind="recurring")
        if args_json is definition.args_json and kwargs_json is definition.kwargs_json:
            continue
        store.save_recurring(
            dataclasses.replace(definition, args_json=args_json, kwargs_json=kwargs_json)
        )
        count += 1
    return count


class _Resealer:
    """Opens a value sealed under an old key and seals it with the write key; returns
    the very object it was given when there is nothing to do (callers test ``is``)."""

    def __init__(self, encryption: Encryption) -> None:
        self.encryption = encryption
        self.write_key_id = encryption.write_key_id

    def _token(self, value: Any, in_list: bool) -> str | None:
        if in_list:
            return sealed_token(value[0]) if isinstance(value, list) and len(value) == 1 else None
        return sealed_token(value)

    def _reseal(self, token: str, binding: str) -> str | None:
        if token_key_id(token) == self.write_key_id:
            return None
        plain = self.encryption.open(token, binding=binding)
        return self.encryption.seal(plain, binding=binding)

    def text(
        self, stored: str, owner: str, column: str, in_list: bool = False, kind: str = "job"
    ) -> str:
        if ENVELOPE_KEY not in stored:  # clear text: never parsed
            return stored
        try:
            token = self._token(json.loads(stored), in_list)
        except ValueError:
            return stored
        if token is None:
            return stored
        resealed = self._reseal(token, f"{kind}/{owner}/{column}")
        if resealed is None:
            return stored
        envelope = {ENVELOPE_KEY: resealed}
        return encode_json([envelope] if in_list else envelope)

    def params(self, params: dict[str, Any], job_id: str) -> dict[str, Any]:
        token = sealed_token(params)
        if token is None:
            return params
        resealed = self._reseal(token, f"job/{job_id}/params")
        return params if resealed is None else {ENVELOPE_KEY: resealed}
