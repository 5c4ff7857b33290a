"""Payload rewrite (``SupportsPayloadRewrite``): raw payload scans in id order and fenced
rewrites, what ``ratchet keys rotate`` re-encrypts stored payloads with.

N/A for stores without the capability: their payloads cannot be rotated.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ratchet.spi import Job, JobStatus, JobStore, StoredPayload, SupportsPayloadRewrite
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import (
    NA_PREFIX,
    StoreFactory,
    StoreSuiteBase,
    raised,
    run_concurrently,
)

# Ids whose byte order differs from a case-folded or accent-folded order: upper case
# sorts before lower case, "é" (0xC3 0xA9) and "中" after every ASCII letter.
_ORDERED_IDS = ("A-1", "B-2", "Z-9", "a-0", "a-1", "b-1", "z-0", "é-1", "中-1")
# Jobs of the race: enough that the rewrites and the outcomes cross many times.
_RACED = 24
# A value as the encryption writes it: the token is opaque text, non-ASCII kept.
_ENCRYPTED = '{"ratchet:encrypted":"tök€n-1"}'


def rewrite_store(store: JobStore) -> SupportsPayloadRewrite:
    if not isinstance(store, SupportsPayloadRewrite):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsPayloadRewrite")
    return store


def scan_all(store: SupportsPayloadRewrite, *, archived: bool, limit: int) -> list[StoredPayload]:
    """Every payload of one table, batch after batch of ``limit`` (each checked)."""
    scanned: list[StoredPayload] = []
    after: str | None = None
    for _ in range(1000):
        batch = store.scan_payloads(archived=archived, after_id=after, limit=limit)
        assert len(batch) <= limit, f"a scan of limit {limit} returned {len(batch)} jobs"
        scanned += batch
        if len(batch) < limit:
            return scanned
        after = batch[-1].job_id
    raise AssertionError("the scan never came back short: after_id is not honoured")


def payload_of(store: SupportsPayloadRewrite, job_id: str, *, archived: bool) -> StoredPayload:
    """The stored payload of one job, from a whole scan of its table."""
    for payload in scan_all(store, archived=archived, limit=100):
        if payload.job_id == job_id:
            return payload
    raise AssertionError(f"job {job_id} is not in the {'archive' if archived else 'live'} scan")


def rewrite(
    store: SupportsPayloadRewrite,
    stored: StoredPayload,
    *,
    args_json: str = f"[{_ENCRYPTED}]",
    kwargs_json: str = _ENCRYPTED,
    params: dict[str, Any] | None = None,
    result_json: str | None = None,
) -> bool:
    return store.rewrite_payload(
        stored,
        args_json=args_json,
        kwargs_json=kwargs_json,
        params={"ratchet:encrypted": "tök€n-2"} if params is None else params,
        result_json=result_json,
    )


def same_except_payload(before: Job, after: Job) -> bool:
    """Whether ``after`` is ``before`` but for arguments, params and result."""
    restored = dataclasses.replace(
        after, args=before.args, kwargs=before.kwargs, params=before.params, result=before.result
    )
    return restored == before


class PayloadRewriteContracts(StoreSuiteBase):
    def archived(self, store: JobStore, **overrides: Any) -> str:
        """A job completed with a result and moved to the archive (with every other
        finished job)."""
        job = self.running(store, **overrides)
        assert store.complete_job(
            job.id, job.claim_seq, result_json='{"kept": "résumé"}', result_type="dict"
        )
        self.sleep_past(0.05)
        assert store.archive_finished_jobs(older_than_seconds=0, batch_size=100) >= 1
        assert store.get_job(job.id) is None, "archiving left the job live"
        return job.id

    @contract("payload rewrite", Level.CORE)
    def test_payload_scan_pages_by_id_in_byte_order(self, store: JobStore) -> None:
        """Nine jobs with ids in mixed case and non-ASCII letters, scanned in batches of
        2 from ``after_id=None`` and then each batch's last id: every batch holds at most
        2 jobs, and together they list every job once, in byte order of the id (``A-1``
        before ``a-0``, ``é-1`` after ``z-0``). A scan from an id that does not exist
        starts after it; ``limit <= 0`` returns nothing.

        On failure: ``WHERE id > :after_id ORDER BY id LIMIT :limit`` on the primary key,
        with a binary collation (not a case-insensitive or locale one).
        """
        scanner = rewrite_store(store)
        for job_id in reversed(_ORDERED_IDS):
            self.enqueue(store, id=job_id)
        first = scanner.scan_payloads(archived=False, after_id=None, limit=2)
        assert [p.job_id for p in first] == list(_ORDERED_IDS[:2]), "the first batch"
        ids = [p.job_id for p in scan_all(scanner, archived=False, limit=2)]
        assert ids == list(_ORDERED_IDS), f"scanned {ids}; byte order is {list(_ORDERED_IDS)}"
        after_gap = scanner.scan_payloads(archived=False, after_id="a-00", limit=2)
        assert [p.job_id for p in after_gap] == ["a-1", "b-1"], "a scan after a missing id"
        assert scanner.scan_payloads(archived=False, after_id=None, limit=0) == []

    @contract("payload rewrite", Level.CORE)
    def test_payload_scan_reads_the_archive_or_the_live_jobs_never_both(
        self, store: JobStore
    ) -> None:
        """With two archived jobs and two live ones, ``archived=True`` lists the archived
        ones only (``archived`` set, status SUCCEEDED, the result as stored) and
        ``archived=False`` the live ones only.

        On failure: the archive scan reads ``ratchet_job_archive`` and the live scan
        ``ratchet_job``, each alone.
        """
        scanner = rewrite_store(store)
        gone = sorted(self.archived(store) for _ in range(2))
        live = sorted([self.enqueue(store), self.running(store).id])
        archive = scan_all(scanner, archived=True, limit=10)
        assert [p.job_id for p in archive] == gone, f"the archive scan listed {archive}"
        for payload in archive:
            assert payload.archived and payload.status is JobStatus.SUCCEEDED, payload
            assert payload.result_json == '{"kept": "résumé"}', payload
        current = scan_all(scanner, archived=False, limit=10)
        assert [p.job_id for p in current] == live, f"the live scan listed {current}"
        assert not any(p.archived for p in current), "a live job came back as archived"

    @contract("payload rewrite", Level.CORE)
    def test_payload_rewrite_round_trips_raw_text(self, store: JobStore) -> None:
        """A scan returns the payload text exactly as enqueued and completed (spacing and
        non-ASCII kept, never re-encoded) with the job's status and claim; a rewrite then
        shows in ``get_job`` (arguments, keyword arguments, params, result) and in the
        next scan byte for byte. An archived job's payload is rewritten in the archive.

        On failure: the scan decodes and re-encodes the JSON columns, or the rewrite
        leaves one of the four values out (``params`` goes through the store's own
        encoding, as an enqueue's does).
        """
        scanner = rewrite_store(store)
        job = self.running(
            store, args_json='[1,  "é"]', kwargs_json='{"k" : "ü"}', params={"p": "ß"}
        )
        assert store.complete_job(job.id, job.claim_seq, result_json='[ "r" ]', result_type="x")
        stored = payload_of(scanner, job.id, archived=False)
        assert (stored.args_json, stored.kwargs_json, stored.params, stored.result_json) == (
            '[1,  "é"]',
            '{"k" : "ü"}',
            {"p": "ß"},
            '[ "r" ]',
        ), f"not the stored text: {stored}"
        assert (stored.status, stored.claim_seq, stored.archived) == (
            JobStatus.SUCCEEDED,
            job.claim_seq,
            False,
        ), stored
        assert rewrite(scanner, stored, result_json=_ENCRYPTED)
        after = self.get(store, job.id)
        encrypted = {"ratchet:encrypted": "tök€n-1"}
        assert (after.args, after.kwargs, after.result) == ((encrypted,), encrypted, encrypted)
        assert after.params == {"ratchet:encrypted": "tök€n-2"}, after.params
        again = payload_of(scanner, job.id, archived=False)
        assert (again.args_json, again.kwargs_json, again.result_json) == (
            f"[{_ENCRYPTED}]",
            _ENCRYPTED,
            _ENCRYPTED,
        ), again
        old = payload_of(scanner, self.archived(store), archived=True)
        assert rewrite(scanner, old, result_json=_ENCRYPTED), "an archived job was not rewritten"
        moved = payload_of(scanner, old.job_id, archived=True)
        assert (moved.args_json, moved.result_json, moved.params) == (
            f"[{_ENCRYPTED}]",
            _ENCRYPTED,
            {"ratchet:encrypted": "tök€n-2"},
        ), moved
        assert store.get_job(old.job_id) is None, "rewriting an archived job made it live"

    @contract("payload rewrite", Level.CORE)
    def test_payload_rewrite_changes_nothing_else(self, store: JobStore) -> None:
        """A rewrite of a completed job (tags, keys, params, times) and of a pending one
        leaves every other field of the job as it was (status, attempts, claim, keys,
        tags, times) and its execution records alone.

        On failure: the rewrite's UPDATE sets only ``args_json``, ``kwargs_json``, the
        params and ``result_json`` (no ``updated_at``, ``finished_at`` or counter).
        """
        scanner = rewrite_store(store)
        job = self.running(
            store, tags=("t",), business_key="bk", idempotency_key="ik", params={"p": 1}
        )
        assert store.complete_job(job.id, job.claim_seq, result_json='"r"', result_type="str")
        waiting = self.enqueue(store, scheduled_at=self.past(store, -3600), priority=0)
        for job_id in (job.id, waiting):
            before = self.get(store, job_id)
            executions = store.list_executions(job_id)
            self.sleep_past(0.01)  # a time the rewrite wrote would differ
            assert rewrite(scanner, payload_of(scanner, job_id, archived=False))
            after = self.get(store, job_id)
            assert same_except_payload(before, after), f"before {before}\nafter  {after}"
            assert store.list_executions(job_id) == executions, "the executions changed"

    @contract("payload rewrite", Level.CORE)
    def test_payload_rewrite_is_fenced_by_status_and_claim(self, store: JobStore) -> None:
        """A rewrite of a payload scanned before the job was claimed, completed, retried
        after a failure, released and claimed again, dead-letter retried, archived or
        purged returns ``False`` and changes nothing: the job keeps its payload and its
        result.

        On failure: the UPDATE must match ``id``, ``status`` and ``claim_seq`` of the
        scan, and its row count decide the answer.
        """
        scanner = rewrite_store(store)
        scanned: dict[str, StoredPayload] = {}

        def scan(job_id: str, *, archived: bool = False) -> None:
            scanned[job_id] = payload_of(scanner, job_id, archived=archived)

        claimed = self.enqueue(store, priority=4, scheduled_at=self.past(store, 7200))
        scan(claimed)
        self.claim(store, claimed)
        completed = self.running(store)
        scan(completed.id)
        assert store.complete_job(
            completed.id, completed.claim_seq, result_json='"done"', result_type="str"
        )
        retried = self.running(store)
        scan(retried.id)
        assert store.schedule_retry(retried.id, retried.claim_seq, error="x", delay_seconds=3600)
        reclaimed = self.running(store)
        scan(reclaimed.id)
        assert store.release_claim(reclaimed.id, reclaimed.claim_seq, message="drain")
        self.claim(store, reclaimed.id)
        dead = self.running(store)
        assert store.fail_job(dead.id, dead.claim_seq, error="boom")
        scan(dead.id)
        assert store.retry_failed_job(dead.id)
        purged = self.running(store)
        assert store.fail_job(purged.id, purged.claim_seq, error="boom")
        scan(purged.id)
        archived = self.running(store)
        assert store.complete_job(
            archived.id, archived.claim_seq, result_json="1", result_type="int"
        )
        scan(archived.id)
        self.sleep_past(0.05)
        assert store.purge_failed_jobs(older_than_seconds=0) == 1
        assert store.archive_finished_jobs(older_than_seconds=0, batch_size=100) >= 1
        live_before = {p.job_id: p for p in scan_all(scanner, archived=False, limit=100)}
        archive_before = scan_all(scanner, archived=True, limit=100)
        for job_id, stored in scanned.items():
            assert not rewrite(scanner, stored), f"a rewrite of {job_id} went through: {stored}"
        live_after = {p.job_id: p for p in scan_all(scanner, archived=False, limit=100)}
        assert live_after == live_before, "a refused rewrite changed a live job"
        assert scan_all(scanner, archived=True, limit=100) == archive_before, "the archive"
        [done] = [p for p in archive_before if p.job_id == completed.id]
        assert done.result_json == '"done"', f"the completion's result: {done}"
        held = payload_of(scanner, claimed, archived=False)
        for forged in (
            dataclasses.replace(held, claim_seq=held.claim_seq + 1),
            dataclasses.replace(held, status=JobStatus.PENDING),
            dataclasses.replace(held, archived=True),
        ):
            assert not rewrite(scanner, forged), f"a rewrite under another fence: {forged}"
        assert payload_of(scanner, claimed, archived=False) == held, "a refused rewrite wrote"

    @contract("payload rewrite", Level.ADVANCED)
    def test_payload_rewrites_racing_outcomes_never_lose_a_result(
        self, stores: StoreFactory
    ) -> None:
        """24 pending jobs are scanned; then one store instance claims and completes them
        one by one (each with its own result) while another rewrites their payloads from
        that scan, in the opposite order. Every job ends SUCCEEDED with its result; a job
        has the new arguments exactly when its rewrite returned ``True`` (it landed before
        the claim), the old ones otherwise.

        On failure: the fence is checked by a read before an UPDATE by id alone (a
        completion landing in between is overwritten); the check and the write must be
        one fenced statement (or one compare-and-swap on the job's version).
        """
        setup = stores()
        scanner = rewrite_store(setup)
        ids = [
            self.enqueue(setup, args_json='["old"]', scheduled_at=self.past(setup, 3600))
            for _ in range(_RACED)
        ]
        scanned = {p.job_id: p for p in scan_all(scanner, archived=False, limit=100)}
        worker, rotator = stores(), rewrite_store(stores())

        def claim_and_complete() -> int:
            done = 0
            for _ in range(_RACED * 4):
                claimed = worker.claim_due_jobs(node_id="w", limit=1, priority_boost_seconds=0)
                for job in claimed:
                    result = f'{{"of": "{job.id}"}}'
                    done += worker.complete_job(
                        job.id, job.claim_seq, result_json=result, result_type="dict"
                    )
                if done == _RACED:
                    break
            return done

        def rewrite_all() -> dict[str, bool]:
            return {
                job_id: rewrite(rotator, scanned[job_id], args_json='["new"]')
                for job_id in reversed(ids)
            }

        results = run_concurrently([claim_and_complete, rewrite_all])
        assert raised(results) == [], raised(results)
        assert results[0] == _RACED, f"{results[0]} of {_RACED} jobs completed"
        for job_id, rewritten in results[1].items():
            job = self.get(setup, job_id)
            assert (job.status, job.result) == (JobStatus.SUCCEEDED, {"of": job_id}), (
                f"job {job_id} after the race: {job.status}, result {job.result!r}"
            )
            expected = ("new",) if rewritten else ("old",)
            assert job.args == expected, (
                f"job {job_id}: rewrite returned {rewritten} but its arguments are {job.args}"
            )
