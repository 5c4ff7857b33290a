"""The SQL stores' job queries (:class:`ratchet.spi.SupportsJobQuery`), written once.

A query's filters are optional, but a statement whose predicates are all
``(:x IS NULL OR ...)`` can use no index, and a statement per combination of filters
would be dozens per backend. So each statement here is named after the one filter that
drives it, an index range read in page order (newest first):

=============================  ==========================================================
``query_jobs``                 ``ratchet_job_created``, backwards
``query_jobs_by_name``         ``ratchet_job_name_created`` (migration 0005)
``query_jobs_by_business_key`` ``ratchet_job_business_key_created`` (migration 0005)
``query_jobs_by_tag``          the tag table's primary key, then the jobs of that tag
``query_jobs_by_status``       one range of ``ratchet_job_status_created`` per status
                               asked for, merged (an IN list would sort every match)
``query_jobs_by_id``           the job the idempotency key names (looked up first)
=============================  ==========================================================

Every other filter is checked on the rows the range reads (:func:`job_query_fragments`
builds those predicates for each backend's placeholders), and the times are never
``NULL``: an absent bound or cursor is a sentinel far outside any job's time, so the
created-at bounds and the cursor are always index bounds.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ratchet._types import (
    DeadLetterGroup,
    ExecutionBucket,
    JobCursor,
    JobPage,
    JobQuery,
    JobStatus,
)
from ratchet.spi._checks import check_aware
from ratchet.spi._job_queries import check_bucket_seconds, check_query_limit
from ratchet.spi._rows import RowDecoder
from ratchet.spi.sql._encoder import RowEncoder
from ratchet.spi.sql._session import Params, Row

__all__ = ["JOB_QUERY_STATEMENTS", "SQLJobQuery", "driving_statement", "job_query_fragments"]

JOB_QUERY_STATEMENTS = frozenset(
    {
        # the parameters of _query_params -> jobs, newest first (module docstring)
        "query_jobs",
        "query_jobs_by_name",
        "query_jobs_by_business_key",
        "query_jobs_by_tag",
        "query_jobs_by_status",  # want_<status> flags: 1 for each status asked for
        "query_jobs_by_id",  # job_id
        # limit -> (name, error_type, count, latest finished_at) of FAILED jobs
        "dead_letter_groups",
        # since, bucket (seconds) -> (bucket start in epoch seconds, succeeded, failed, other)
        "execution_counts",
    }
)
"""The job-query statements every SQL backend's ``.sql`` file provides."""

_STATUSES = tuple(JobStatus)
_EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
_LATEST = datetime(9999, 12, 31, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def job_query_fragments(
    param: Callable[[str], str],
    *,
    columns: str,
    text_param: Callable[[str], str] | None = None,
    checked_status: str = "status",
) -> dict[str, str]:
    """The ``{{fragments}}`` of a backend's job-query statements:

    * ``job_query_filters``: every filter of :func:`SQLJobQuery._query_params`, ANDed, on
      the unqualified columns of ``ratchet_job``;
    * ``job_query_by_status``: the per-status ranges of ``query_jobs_by_status``, each
      read only when its ``want_<status>`` flag is 1, merged newest first.

    ``param(name)`` is the driver's placeholder; ``text_param(name)`` the same typed as
    text where the database cannot infer it from ``IS NULL`` alone (PostgreSQL);
    ``columns`` the job columns in :class:`~ratchet.spi.RowDecoder` order;
    ``checked_status`` the status column as the filter checks it, where the planner must
    not take that check for an index to drive by (SQLite's ``+status``: without
    statistics it reads every job of the statuses through ``ratchet_job_status_created``
    and sorts them, rather than walk ``ratchet_job_created`` a page deep).
    """
    as_text = text_param or param
    statuses = ", ".join(param(f"status_{index}") for index in range(len(_STATUSES)))
    filters = (
        f"created_at >= {param('created_from')} AND created_at < {param('created_to')}"
        f" AND created_at < {param('after_next')}"
        f" AND (created_at < {param('after_at')} OR id < {param('after_id')})"
        f" AND {checked_status} IN ({statuses})"
        f" AND ({as_text('name')} IS NULL OR name = {param('name')})"
        f" AND ({as_text('business_key')} IS NULL OR business_key = {param('business_key')})"
        f" AND ({as_text('tag')} IS NULL"
        f" OR id IN (SELECT job_id FROM ratchet_job_tag WHERE tag = {param('tag')}))"
        f" AND ({as_text('job_id')} IS NULL OR id = {param('job_id')})"
    )
    branches = " UNION ALL ".join(
        f"SELECT * FROM (SELECT {columns} FROM ratchet_job WHERE status = '{status.value}'"
        f" AND {param('want_' + status.value.lower())} = 1 AND {filters}"
        f" ORDER BY created_at DESC, id DESC LIMIT {param('limit')}) AS by_{status.value.lower()}"
        for status in _STATUSES
    )
    return {"job_query_filters": filters, "job_query_by_status": branches}


def driving_statement(query: JobQuery) -> str:
    """The statement that drives ``query`` (the module docstring's table), the idempotency
    key's aside (``query_jobs_by_id``, once the key is looked up): the one filter whose
    index range reads the page."""
    if query.business_key is not None:
        return "query_jobs_by_business_key"
    if query.name is not None:
        return "query_jobs_by_name"
    if query.tag is not None:
        return "query_jobs_by_tag"
    return "query_jobs_by_status" if query.statuses else "query_jobs"


class SQLJobQuery:
    """:class:`ratchet.spi.SupportsJobQuery` for :class:`ratchet.spi.sql.SQLJobStore`
    (mixed into it): validation, the driving statement, the decoding."""

    encode: RowEncoder
    decode: RowDecoder

    def _query(self, name: str, params: Params | None = None) -> list[Row]:
        raise NotImplementedError  # SQLJobStore's primitive

    def query_jobs(self, query: JobQuery) -> JobPage:
        """The driving statement (module docstring) with every filter as a parameter."""
        limit = check_query_limit(query.limit)
        job_id: str | None = None
        if query.idempotency_key is not None:
            rows = self._query("select_idempotency_key", {"key": query.idempotency_key})
            if not rows:
                return JobPage(jobs=(), next=None)
            job_id = self.decode.text(rows[0][0])
        params = self._query_params(query, limit=limit, job_id=job_id)
        name = "query_jobs_by_id" if job_id is not None else driving_statement(query)
        jobs = tuple(self.decode.job(row) for row in self._query(name, params))
        last = jobs[-1] if len(jobs) == limit else None
        cursor = None if last is None else JobCursor(created_at=last.created_at, id=last.id)
        return JobPage(jobs=jobs, next=cursor)

    def _query_params(self, query: JobQuery, *, limit: int, job_id: str | None) -> dict[str, Any]:
        statuses = tuple(JobStatus(status) for status in query.statuses) or _STATUSES
        padded = statuses + (statuses[0],) * (len(_STATUSES) - len(statuses))
        after_at = _LATEST if query.after is None else query.after.created_at
        params: dict[str, Any] = {
            "created_from": self._stored_from(query.created_from or _EARLIEST, "created_from"),
            "created_to": self._stored_from(query.created_to or _LATEST, "created_to"),
            # Strictly after the cursor: an earlier time, or its time and a smaller id.
            "after_at": self._stored_from(after_at, "after"),
            "after_next": self._stored_from(after_at + _MICROSECOND, "after"),
            "after_id": "" if query.after is None else query.after.id,
            "name": query.name,
            "business_key": query.business_key,
            "tag": query.tag,
            "job_id": job_id,
            "limit": limit,
        }
        params.update({f"status_{i}": status.value for i, status in enumerate(padded)})
        params.update({f"want_{s.value.lower()}": int(s in statuses) for s in _STATUSES})
        return params

    def _stored_from(self, moment: datetime, what: str) -> Any:
        """The smallest stored time that reads back as ``moment`` or later, as a
        parameter: ``moment`` itself where times are stored to the microsecond. (A
        backend storing times more finely, SQLite's epoch seconds, widens it.) Every time
        comparison of a query uses it, so a time read from a job (a cursor, a bound)
        compares equal to that job's stored time."""
        return self.encode.moment(moment, f"JobQuery.{what}")

    def dead_letter_groups(self, *, limit: int = 100) -> list[DeadLetterGroup]:
        """One grouped read of the FAILED jobs (their partial index, migration 0004)."""
        if int(limit) <= 0:
            return []
        return [
            DeadLetterGroup(
                name=self.decode.text(name),
                error_type="" if error_type is None else self.decode.text(error_type),
                count=int(count),
                latest_failed_at=self.decode.time(latest),
            )
            for name, error_type, count, latest in self._query(
                "dead_letter_groups", {"limit": int(limit)}
            )
        ]

    def execution_counts(self, *, since: datetime, bucket_seconds: int) -> list[ExecutionBucket]:
        """One grouped range of the execution records' finished-at index."""
        bucket = check_bucket_seconds(bucket_seconds)
        params = {
            "since": self._stored_from(check_aware(since, "since"), "since"),
            "bucket": bucket,
        }
        return [
            ExecutionBucket(
                start=datetime.fromtimestamp(int(start), tz=UTC),
                succeeded=int(succeeded),
                failed=int(failed),
                other=int(other),
            )
            for start, succeeded, failed, other in self._query("execution_counts", params)
        ]
