"""BEHAVIORAL: keys and tags match exactly.

Idempotency keys and business keys are compared as given: another case, surrounding
whitespace, a prefix, an extension or a look-alike character is another key. Tags reach
the store already normalised by the engine (stripped and lower-cased, see
``ratchet._jobs.normalize_tag``) and match as whole tags: a tag never matches another that
merely contains it or starts with it, and ``_`` or ``%`` in a tag are plain characters.
"""

from __future__ import annotations

from ratchet.errors import RatchetError
from ratchet.spi import JobStatus, JobStore
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import StoreSuiteBase

KEY = "Order-1"
# Each of these is a different key from KEY (and from each other).
LOOK_ALIKES = (
    "order-1",  # case
    "ORDER-1",
    "Order-1 ",  # whitespace
    " Order-1",
    "Order-10",  # extension
    "Order-",  # prefix
    "Order_1",  # a LIKE wildcard that would match KEY
    "Order\u20101",  # HYPHEN, not HYPHEN-MINUS
    "\u041erder-1",  # CYRILLIC CAPITAL LETTER O
)

# Tag → the one job carrying it; every query below must find exactly that job.
TAGS = ("report", "reports", "report-daily", "daily-report", "rep", "a_c", "abc", "50%", "500")


class ExactMatchContracts(StoreSuiteBase):
    @contract("idempotency-keys", Level.BEHAVIORAL)
    def test_idempotency_keys_match_exactly(self, store: JobStore) -> None:
        """After ``Order-1`` is used, keys differing only in case, whitespace, a prefix, an
        extension or a look-alike character are accepted, and each look-up returns the job
        of exactly that key.

        On failure: the key column or index compares case- or accent-insensitively (a
        ``_ci`` collation, ``COLLATE NOCASE``), pads or trims spaces, or the look-up uses
        ``LIKE``; compare keys byte for byte (a binary collation, ``=``).
        """
        original = self.enqueue(store, idempotency_key=KEY)
        owners: dict[str, str] = {KEY: original}
        rejected: dict[str, str] = {}
        for key in LOOK_ALIKES:
            try:
                owners[key] = self.enqueue(store, idempotency_key=key)
            except RatchetError as exc:
                rejected[key] = type(exc).__name__
        assert not rejected, f"different keys taken for {KEY!r}: {rejected}"
        wrong = [k for k in owners if store.find_job_id_by_idempotency_key(k) != owners[k]]
        assert not wrong, f"look-ups of these keys returned another key's job: {wrong}"
        assert store.find_job_id_by_idempotency_key("Order") is None
        assert store.count_jobs()[JobStatus.PENDING] == len(owners)

    def _holders(self, store: JobStore) -> dict[str, str]:
        """A PENDING job for ``KEY`` and for each look-alike: key → job id."""
        holders: dict[str, str] = {KEY: self.enqueue(store, business_key=KEY)}
        rejected: dict[str, str] = {}
        for key in LOOK_ALIKES:
            try:
                holders[key] = self.enqueue(store, business_key=key)
            except RatchetError as exc:
                rejected[key] = type(exc).__name__
        assert not rejected, f"different keys conflicted with {KEY!r}: {rejected}"
        return holders

    def _tagged(self, store: JobStore) -> tuple[dict[str, str], str]:
        """A job for each of ``TAGS`` (tag → job id), and one tagged ``eu, report, z``."""
        return (
            {tag: self.enqueue(store, tags=(tag,)) for tag in TAGS},
            self.enqueue(store, tags=("eu", "report", "z")),
        )

    @contract("business-keys", Level.BEHAVIORAL)
    def test_business_keys_match_exactly(self, store: JobStore) -> None:
        """While ``Order-1`` is held, business keys differing only in case, whitespace, a
        prefix, an extension or a look-alike character are free, and each look-up returns
        the holder of exactly that key.

        On failure: see the idempotency-key test: the key is compared case-insensitively,
        trimmed, padded or with ``LIKE`` (whose ``_`` matches any character).
        """
        holders = self._holders(store)
        wrong = [
            key
            for key, holder in holders.items()
            if getattr(store.find_active_job_by_business_key(key), "id", None) != holder
        ]
        assert not wrong, f"look-ups of these keys returned another key's holder: {wrong}"
        assert store.find_active_job_by_business_key("Order") is None

    @contract("recurring", Level.ADVANCED)
    def test_cancel_by_business_key_matches_exactly(self, store: JobStore) -> None:
        """With ``Order-1`` and its look-alikes all held, ``cancel_by_business_key`` of
        ``Order_1``, ``order-1`` and ``Order-1`` each cancels exactly the holder of that
        key.

        On failure: the cancel compares with ``LIKE`` (case-insensitive in several
        databases, ``_`` a wildcard) or a case-insensitive collation; use ``=`` on a binary
        comparison.
        """
        holders = self._holders(store)
        for key in ("Order_1", "order-1", KEY):
            assert store.cancel_by_business_key(key) == 1, f"cancel of {key!r} hit other keys"
        canceled = {
            key
            for key, job_id in holders.items()
            if self.get(store, job_id).status is JobStatus.CANCELED
        }
        assert canceled == {"Order_1", "order-1", KEY}, f"canceled: {sorted(canceled)}"

    @contract("tags", Level.BEHAVIORAL)
    def test_tags_match_whole_tags(self, store: JobStore) -> None:
        """Jobs tagged ``report``, ``reports``, ``report-daily``, ``daily-report``, ``rep``,
        ``a_c``, ``abc``, ``50%`` and ``500``: ``list_jobs(tag=…)`` of each returns exactly
        its job (plus, for ``report``, a job carrying it among other tags).

        On failure: the filter matches a prefix or a substring (``LIKE 'x%'``, a search in
        the tags' JSON text) or uses ``LIKE`` at all (``_`` and ``%`` are wildcards there);
        match the stored tag with ``=``.
        """
        tagged, several = self._tagged(store)
        for tag, job_id in tagged.items():
            expected = {job_id, several} if tag == "report" else {job_id}
            got = {job.id for job in store.list_jobs(tag=tag)}
            assert got == expected, (
                f"list_jobs(tag={tag!r}) found the jobs of {self._tags(store, got - expected)}"
            )
        assert [j.id for j in store.list_jobs(tag="eu")] == [several]

    @contract("recurring", Level.ADVANCED)
    def test_cancel_by_tag_matches_whole_tags(self, store: JobStore) -> None:
        """With the jobs of the tag test, ``cancel_by_tag`` of ``a_c``, ``50%`` and
        ``report`` cancels exactly the jobs carrying those tags (1, 1 and 2).

        On failure: as for ``list_jobs``: the cancel matches a prefix, a substring of the
        tags' text, or uses ``LIKE``.
        """
        tagged, several = self._tagged(store)
        for tag, count in (("a_c", 1), ("50%", 1), ("report", 2)):
            assert store.cancel_by_tag(tag) == count, f"cancel_by_tag({tag!r})"
        canceled = {
            tag
            for tag, job_id in tagged.items()
            if self.get(store, job_id).status is JobStatus.CANCELED
        }
        assert canceled == {"a_c", "50%", "report"}, f"canceled: {sorted(canceled)}"
        assert self.get(store, several).status is JobStatus.CANCELED

    @staticmethod
    def _tags(store: JobStore, job_ids: set[str]) -> list[tuple[str, ...]]:
        return [job.tags for job_id in job_ids if (job := store.get_job(job_id)) is not None]
