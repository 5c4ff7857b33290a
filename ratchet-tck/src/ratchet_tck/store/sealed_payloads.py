"""Sealed payloads (``ratchet.encryption``): a store keeps an encrypted job's values as it
keeps any JSON, so the application can open them again.

The store knows nothing of encryption: a sealed value is JSON of the column's shape
(``[{"ratchet:encrypted": TOKEN}]`` for the arguments, ``{"ratchet:encrypted": TOKEN}``
for keyword arguments, params and the result) whose token is longer than most clear
values. A store that cuts, re-encodes or drops any of it makes the job fail to open.
Needs the ``cryptography`` package (``ratchet-core[encryption]``); N/A without it.
"""

from __future__ import annotations

import pytest

from ratchet.spi import JobStatus, JobStore
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import NA_PREFIX, StoreSuiteBase

_SECRETS = ("ada@example.org", "s3cr3t-pässwörd", "4111-1111")


class SealedPayloadContracts(StoreSuiteBase):
    @contract("sealed payloads", Level.BEHAVIORAL)
    def test_an_encrypted_job_is_stored_sealed_and_runs_opened(self, store: JobStore) -> None:
        """An application with a key enqueues a job registered ``encrypted=True`` with an
        argument, a keyword argument and a param that must not be stored in clear, then
        runs it (``run_until_idle``). The store's own reads (``get_job``) show none of the
        clear values, neither before nor after the run; the application's reads open the
        arguments, params and result again; the job SUCCEEDED with the result its body
        computed from the opened values (so a store that changed a sealed value, which
        fails the job with PayloadDecryptionError, fails here).

        On failure: store ``args_json``, ``kwargs_json``, ``params`` and ``result_json``
        exactly as given (no length limit below the payload limit, no re-encoding that
        changes the token text); a job's values are read back from its own row.
        """
        try:
            from ratchet import Ratchet
            from ratchet.encryption import generate_key
        except ImportError:  # pragma: no cover - ratchet-core is the kit's dependency
            raise
        try:
            import cryptography  # noqa: F401
        except ImportError:
            pytest.skip(f"{NA_PREFIX} the cryptography package is not installed")
        app = Ratchet(store, coordinator="none", encryption="tck:" + generate_key())

        @app.job(name="tck.sealed", encrypted=True, max_retries=0)
        def sealed(email: str, *, card: str) -> dict[str, str]:
            from ratchet import current_job

            return {"to": email, "card": card, "password": current_job().param("password")}

        job_id = (
            app.builder(sealed, _SECRETS[0], card=_SECRETS[2])
            .param("password", _SECRETS[1])
            .submit()
        )
        stored = store.get_job(job_id)
        assert stored is not None
        shown = repr((stored.args, stored.kwargs, stored.params, stored.result))
        leaked = [secret for secret in _SECRETS if secret in shown]
        assert not leaked, f"the store holds {leaked} in clear text: it was not sealed"
        opened = app.get_job(job_id)
        assert opened is not None and opened.args == (_SECRETS[0],), (
            f"the arguments did not open again: {opened.args if opened else None!r}"
        )
        assert opened.kwargs == {"card": _SECRETS[2]}
        assert opened.params.get("password") == _SECRETS[1]

        app.run_until_idle(timeout=60)
        finished = app.get_job(job_id)
        assert finished is not None
        assert finished.status is JobStatus.SUCCEEDED, (
            f"the job is {finished.status}: {finished.last_error}"
        )
        assert finished.result == {"to": _SECRETS[0], "card": _SECRETS[2], "password": _SECRETS[1]}
        raw = store.get_job(job_id)
        assert raw is not None
        leaked = [secret for secret in _SECRETS if secret in repr(raw.result)]
        assert not leaked, f"the stored result holds {leaked} in clear text"
