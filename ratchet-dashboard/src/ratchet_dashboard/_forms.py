"""Reading what the browser sent: the Jobs filter (from a page's query string or a bulk
action's form), the selected job ids, numbers, and where an action returns."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import FormData
from starlette.requests import Request

from ratchet import JobStatus
from ratchet.spi import JobCursor, JobQuery

__all__ = ["BULK_LIMIT", "back_address", "fields", "here", "job_ids", "job_query", "number"]

BULK_LIMIT = 10_000
"""The most jobs one action touches."""


def fields(query: JobQuery) -> dict[str, Any]:
    """The query's fields, to build a changed copy (the next page of a bulk action)."""
    return {name: getattr(query, name) for name in JobQuery.__dataclass_fields__}


def job_ids(form: FormData) -> list[str]:
    """The ticked rows (``job_id`` fields), at most :data:`BULK_LIMIT`; ValueError for none."""
    ids = [str(v) for v in form.getlist("job_id") if str(v)]
    if not ids:
        raise ValueError("No job was selected: tick at least one row.")
    return ids[:BULK_LIMIT]


def number(value: object, name: str, low: float, high: float) -> float:
    """The form field ``name`` as a number from ``low`` to ``high``; ValueError naming it."""
    problem = f"{name} is {value!r}; give a number from {low:g} to {high:g}."
    try:
        parsed = float(str(value))
    except ValueError:
        raise ValueError(problem) from None
    if not low <= parsed <= high:  # NaN fails every comparison
        raise ValueError(problem)
    return parsed


def here(request: Request) -> str:
    """This page's path (the mount's prefix included) and query: where an action's form
    returns."""
    path = request.url.path
    query = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "notice"])
    return path + ("?" + query if query else "")


def back_address(request: Request, form: FormData, notice: str, extra: dict[str, str]) -> str:
    """Where to go after an action: the form's ``back`` page when it is one of ours (an
    open redirect would let a link send the operator anywhere), with the notice."""
    root = request.scope.get("root_path", "").rstrip("/")
    back = str(form.get("back", "")) or root + "/"
    if not back.startswith(root + "/") or back.startswith("//") or "\\" in back:
        back = root + "/"
    path, _, query = back.partition("?")
    pairs = [(k, v) for k, v in parse_qsl(query) if k not in ("notice", *extra)]
    return path + "?" + urlencode([*pairs, *extra.items(), ("notice", notice)])


def job_query(params: Any) -> tuple[JobQuery, dict[str, str], list[str]]:
    """The Jobs page's filter from query parameters (or a bulk action's form): the
    query, the filters to carry into links (without the cursor), and what was wrong."""
    problems: list[str] = []
    filters: dict[str, str] = {}
    statuses: list[JobStatus] = []
    # Checkboxes in the Jobs form send one value each; links carry them comma-separated.
    for raw in (part for value in params.getlist("status") for part in str(value).split(",")):
        if not raw.strip():
            continue
        try:
            statuses.append(JobStatus(raw.strip().upper()))
        except ValueError:
            problems.append(
                f"Unknown status {raw!r}; choose from {', '.join(s.value for s in JobStatus)}."
            )
    statuses = list(dict.fromkeys(statuses))
    if statuses:
        filters["status"] = ",".join(s.value for s in statuses)
    text: dict[str, str | None] = {}
    for name in ("name", "tag", "business_key", "idempotency_key"):
        value = str(params.get(name, "") or "").strip()
        if name == "tag":  # tags are stored lower-cased: "Billing" finds "billing"
            value = value.lower()
        text[name] = value or None
        if value:
            filters[name] = value
    moments: dict[str, datetime | None] = {}
    for name in ("created_from", "created_to"):
        value = str(params.get(name, "") or "").strip()
        moments[name] = None
        if value:
            try:
                moment = datetime.fromisoformat(value)
            except ValueError:
                problems.append(f"{name} is {value!r}; write it as 2026-01-31T14:00 (UTC).")
                continue
            moments[name] = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
            filters[name] = value
    limit = 50
    raw_limit = str(params.get("limit", "") or "")
    if raw_limit:
        if raw_limit.isdigit() and 1 <= int(raw_limit) <= 1000:
            limit = int(raw_limit)
            filters["limit"] = raw_limit
        else:
            problems.append(f"limit is {raw_limit!r}; give a whole number from 1 to 1000.")
    after = None
    raw_after = str(params.get("after", "") or "")
    if raw_after:
        moment_text, _, job_id = raw_after.partition("|")
        try:
            after = JobCursor(created_at=datetime.fromisoformat(moment_text), id=job_id)
        except ValueError:
            problems.append("The page position is not one this dashboard made; start again.")
    query = JobQuery(
        statuses=tuple(statuses),
        name=text["name"],
        tag=text["tag"],
        business_key=text["business_key"],
        idempotency_key=text["idempotency_key"],
        created_from=moments["created_from"],
        created_to=moments["created_to"],
        after=after,
        limit=limit,
    )
    return query, filters, problems
