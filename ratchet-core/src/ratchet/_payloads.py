"""Where sealed payloads are made and opened (see :mod:`ratchet.encryption`).

The application seals a job's arguments and params after enqueue middleware ran, just
before the store write (:meth:`Payloads.seal_jobs`), and opens what it reads back; the
engine opens a claimed job before anything of it runs (:meth:`Payloads.open_claimed`),
seals its result (:meth:`Payloads.seal_result`) and re-seals a recurring template for
each job it fires (:meth:`Payloads.fire`). Whether a job is sealed is decided once, at
enqueue; afterwards what is stored says it: a job whose arguments are sealed gets a
sealed result.

Bindings (the associated data of each value) name the row and the column:
``job/<id>/args``, ``job/<id>/kwargs``, ``job/<id>/params``, ``job/<id>/result``,
``job/<id>/signal`` (a delivered signal's payload: sealed when the job's arguments are),
``recurring/<id>/args``, ``recurring/<id>/kwargs``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ratchet._codec import encode_json
from ratchet._types import ClaimedJob, Job, NewJob, RecurringDefinition
from ratchet.encryption import ENVELOPE_KEY, Encryption, sealed_token
from ratchet.errors import ConfigurationError, PayloadDecryptionError

__all__ = ["Payloads", "is_sealed_job", "sealed_args_token"]


def sealed_args_token(args_json: str) -> str | None:
    """The token of sealed positional arguments (``[{"ratchet:encrypted": T}]``)."""
    if not args_json.startswith('[{"' + ENVELOPE_KEY):  # the common case, without parsing
        return None
    try:
        args = json.loads(args_json)
    except ValueError:
        return None
    return sealed_token(args[0]) if isinstance(args, list) and len(args) == 1 else None


def is_sealed_job(job: Job) -> bool:
    """Whether the arguments of ``job`` (as read from the store) are sealed."""
    return len(job.args) == 1 and sealed_token(job.args[0]) is not None


def _envelope(token: str) -> dict[str, str]:
    return {ENVELOPE_KEY: token}


def _binding(kind: str, owner: str, column: str) -> str:
    return f"{kind}/{owner}/{column}"


class Payloads:
    """Seals and opens job payloads with ``encryption``; with ``None`` nothing is sealed
    and a sealed value read back is refused (engine) or left sealed (reads)."""

    def __init__(self, encryption: Encryption | None = None) -> None:
        self.encryption = encryption

    @property
    def seals_every_job(self) -> bool:
        return self.encryption is not None and self.encryption.encrypt_all

    def require(self, what: str) -> Encryption:
        """The encryption, or ConfigurationError naming ``what`` asked for it."""
        if self.encryption is None:
            raise ConfigurationError(
                f"{what} asks for encryption, but this application has no encryption key. "
                "Set RATCHET_ENCRYPTION_KEYS=key_id:base64key (make a key with `ratchet keys "
                "generate`) or pass Ratchet(..., encryption=...)."
            )
        return self.encryption

    # -- writing -------------------------------------------------------------------------

    def seal_jobs(self, jobs: list[NewJob]) -> list[NewJob]:
        """The jobs as the store must receive them: those marked ``encrypted`` (every
        job with ``encrypt_all``) with arguments and params sealed."""
        if self.encryption is None:
            for job in jobs:
                if job.encrypted:
                    self.require(f"Job {job.name!r}")
            return jobs
        if not self.encryption.encrypt_all and not any(job.encrypted for job in jobs):
            return jobs
        return [self._seal_job(job) for job in jobs]

    def _seal_job(self, job: NewJob) -> NewJob:
        if not (job.encrypted or self.seals_every_job) or sealed_args_token(job.args_json):
            return job
        encryption = self.require(f"Job {job.name!r}")

        def seal(column: str, text: str) -> dict[str, str]:
            return _envelope(encryption.seal(text, binding=_binding("job", job.id, column)))

        # Empty keyword arguments and params hold nothing to hide: they stay "{}" (which
        # saves two seals and two opens per job in the common case).
        return dataclasses.replace(
            job,
            args_json=encode_json([seal("args", job.args_json)]),
            kwargs_json=(
                job.kwargs_json
                if job.kwargs_json == "{}"
                else encode_json(seal("kwargs", job.kwargs_json))
            ),
            params=seal("params", encode_json(job.params)) if job.params else {},
            encrypted=True,
        )

    def seal_result(self, job: ClaimedJob, result_json: str | None) -> str | None:
        """The result as stored: sealed when the job's payload was."""
        if result_json is None or not job.encrypted:
            return result_json
        encryption = self.require(f"Job {job.name!r}")
        token = encryption.seal(result_json, binding=_binding("job", job.id, "result"))
        return encode_json(_envelope(token))

    def seal_signal(self, job_id: str, payload_json: str) -> str:
        """A signal payload as stored for a job whose arguments are sealed."""
        encryption = self.require(f"The signal for job {job_id!r}")
        token = encryption.seal(payload_json, binding=_binding("job", job_id, "signal"))
        return encode_json(_envelope(token))

    def open_signal(self, job: Job) -> Any:
        """The signal payload delivered to ``job``, opened when sealed
        (PayloadDecryptionError when it cannot be opened here)."""
        token = sealed_token(job.signal)
        if token is None:
            return job.signal
        return json.loads(self._open(token, "job", job.id, "signal"))

    def seal_template(
        self, definition: RecurringDefinition, *, encrypted: bool
    ) -> RecurringDefinition:
        """A recurring definition with its argument template sealed (when ``encrypted``
        or every job is), bound to the schedule id."""
        if not (encrypted or self.seals_every_job):
            return definition
        encryption = self.require(f"Recurring schedule {definition.id!r}")

        def seal(column: str, text: str) -> str:
            token = encryption.seal(text, binding=_binding("recurring", definition.id, column))
            return encode_json([_envelope(token)] if column == "args" else _envelope(token))

        kwargs_json = definition.kwargs_json
        return dataclasses.replace(
            definition,
            args_json=seal("args", definition.args_json),
            kwargs_json=kwargs_json if kwargs_json == "{}" else seal("kwargs", kwargs_json),
        )

    def fire(self, definition: RecurringDefinition, job: NewJob) -> NewJob:
        """The job a fire of ``definition`` enqueues: a sealed template is opened and its
        values sealed again for the new job (whose params are sealed with them); a clear
        template's job is sealed when every job is. PayloadDecryptionError when this
        process cannot open the template."""
        if sealed_args_token(definition.args_json) is None:
            return self._seal_job(job) if self.seals_every_job else job
        args_json, kwargs_json = self.open_template(definition)
        opened = dataclasses.replace(job, args_json=args_json, kwargs_json=kwargs_json)
        return self._seal_job(dataclasses.replace(opened, encrypted=True))

    # -- reading -------------------------------------------------------------------------

    def _open(self, token: str, kind: str, owner: str, column: str) -> str:
        if self.encryption is None:
            raise PayloadDecryptionError(
                f"The value of {_binding(kind, owner, column)} is sealed, and this process has "
                "no encryption key. Set RATCHET_ENCRYPTION_KEYS to the keys the cluster uses, "
                "then retry the job."
            )
        return self.encryption.open(token, binding=_binding(kind, owner, column))

    def open_claimed(self, job: ClaimedJob) -> ClaimedJob:
        """A claimed job with its arguments and params opened (``encrypted`` set), or the
        job itself when nothing is sealed. PayloadDecryptionError when a sealed value
        cannot be opened here."""
        token = sealed_args_token(job.args_json)
        if token is None:
            return job
        return dataclasses.replace(
            job,
            args_json=self._open(token, "job", job.id, "args"),
            kwargs_json=self._open_json_text(job.kwargs_json, job.id, "kwargs"),
            params=self._open_params(job.params, job.id),
            encrypted=True,
        )

    def _open_json_text(self, stored: str, job_id: str, column: str) -> str:
        try:
            token = sealed_token(json.loads(stored))
        except ValueError:
            token = None
        return stored if token is None else self._open(token, "job", job_id, column)

    def _open_params(self, params: dict[str, Any], job_id: str) -> dict[str, Any]:
        token = sealed_token(params)
        if token is None:
            return params
        opened = json.loads(self._open(token, "job", job_id, "params"))
        if not isinstance(opened, dict):
            raise PayloadDecryptionError(f"The params of job {job_id!r} open to a non-object.")
        return opened

    def open_job(self, job: Job) -> Job:
        """A job read from the store with its sealed values opened; a value this process
        cannot open stays as stored (``{"ratchet:encrypted": ...}``), so listings still
        work without the key."""
        if not is_sealed_job(job):
            return job
        try:
            return self.open_job_strictly(job)
        except PayloadDecryptionError:
            return job

    def open_job_strictly(self, job: Job) -> Job:
        """:meth:`open_job`, raising PayloadDecryptionError for what cannot be opened."""
        if not is_sealed_job(job):
            return job
        args = json.loads(self._open(sealed_token(job.args[0]) or "", "job", job.id, "args"))
        kwargs_token = sealed_token(job.kwargs)
        kwargs = (
            job.kwargs
            if kwargs_token is None
            else json.loads(self._open(kwargs_token, "job", job.id, "kwargs"))
        )
        result_token = sealed_token(job.result)
        result = (
            job.result
            if result_token is None
            else json.loads(self._open(result_token, "job", job.id, "result"))
        )
        return dataclasses.replace(
            job,
            args=tuple(args),
            kwargs=dict(kwargs),
            params=self._open_params(job.params, job.id),
            result=result,
            signal=self.open_signal(job),
        )

    def open_template(self, definition: RecurringDefinition) -> tuple[str, str]:
        """``(args_json, kwargs_json)`` of a recurring template, opened when sealed."""
        token = sealed_args_token(definition.args_json)
        if token is None:
            return definition.args_json, definition.kwargs_json
        args_json = self._open(token, "recurring", definition.id, "args")
        kwargs_token = sealed_token(json.loads(definition.kwargs_json))
        kwargs_json = (
            definition.kwargs_json
            if kwargs_token is None
            else self._open(kwargs_token, "recurring", definition.id, "kwargs")
        )
        return args_json, kwargs_json
