"""``create_app``: the dashboard as a Starlette ASGI application.

Pages are server-rendered Jinja2 (autoescaped); htmx (vendored, see
``static/NOTICE.md``) refreshes the parts that change while the tab is visible. Every
link and form is built from the request's ``root_path``, so the app works mounted under
any prefix (``Mount("/ops", create_app(app))``). Actions are POSTs that go through the
same :class:`ratchet.Ratchet` methods code calls (so workers are woken as they would
be), each followed by :meth:`ratchet.Ratchet.audit`, then a redirect back (303).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from ratchet import JobStatus, Ratchet
from ratchet.errors import JobLogsUnsupportedError, RatchetError
from ratchet.spi import JobQuery, SupportsArchiveAccess, SupportsChains, SupportsJobQuery, redact
from ratchet_dashboard import _forms, _reads, _templates
from ratchet_dashboard._security import (
    ACTOR_KEY,
    CSRF_FIELD,
    Auth,
    AuthMiddleware,
    SecurityHeadersMiddleware,
    check_auth,
    check_csrf,
    csrf_token,
    set_csrf_cookie,
)

__all__ = ["create_app"]

HERE = Path(__file__).parent
PAGE_SIZES = (25, 50, 100, 200)
GROUPS_WITH_ROWS = 10
"""Dead-letter groups whose newest jobs are listed (with a "Retry" each); the rest link to
their jobs on the Jobs page."""

NAVIGATION = (
    ("overview", "Overview", "/"),
    ("jobs", "Jobs", "/jobs"),
    ("dead-letters", "Dead letters", "/dead-letters"),
    ("recurring", "Recurring", "/recurring"),
    ("nodes", "Nodes", "/nodes"),
    ("plugins", "Plugins and configuration", "/plugins"),
)


def create_app(
    ratchet_app: Ratchet,
    *,
    auth: Auth = None,
    read_only: bool = False,
) -> Starlette:
    """The dashboard of ``ratchet_app`` as an ASGI application.

    ``auth``: ``None`` (no authentication: keep it on a loopback address or behind your
    own), ``(user, password)`` for HTTP Basic, or a callable given the Starlette
    ``Request`` that returns the user's name, or ``None`` to refuse with 401 (it may be
    ``async``); the name is the ``actor`` of the audit events. ``read_only`` hides every
    button and refuses every action with 403.
    """
    if not isinstance(ratchet_app, Ratchet):
        raise TypeError(
            f"create_app needs a ratchet.Ratchet application, got {type(ratchet_app).__name__}."
        )
    check_auth(auth)  # now, not at the first request
    dashboard = _Dashboard(ratchet_app, read_only=read_only)
    routes = [
        Route("/", dashboard.overview_page, name="overview"),
        Route("/overview/panel", dashboard.overview_panel),
        Route("/jobs", dashboard.jobs_page),
        Route("/jobs/rows", dashboard.job_rows),
        Route("/jobs/{job_id}", dashboard.job_page),
        Route("/dead-letters", dashboard.dead_letters_page),
        Route("/recurring", dashboard.recurring_page),
        Route("/nodes", dashboard.nodes_page),
        Route("/plugins", dashboard.plugins_page),
        Route("/actions/{action}", dashboard.action, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(SecurityHeadersMiddleware),
            Middleware(AuthMiddleware, auth=auth),
        ],
    )


class _Dashboard:
    """The request handlers, over one application."""

    def __init__(self, app: Ratchet, *, read_only: bool) -> None:
        self.app = app
        self.read_only = read_only
        self.templates = Jinja2Templates(env=_templates.environment())

    # -- rendering -----------------------------------------------------------------------

    def render(self, request: Request, template: str, page: str, **context: Any) -> HTMLResponse:
        token = csrf_token(request)
        response = self.templates.TemplateResponse(
            request,
            template,
            {
                "root": request.scope.get("root_path", "").rstrip("/"),
                "here": _forms.here(request),
                "navigation": NAVIGATION,
                "page": page,
                "csrf_field": CSRF_FIELD,
                "csrf_token": token,
                "read_only": self.read_only,
                "actor": request.scope.get("state", {}).get(ACTOR_KEY, ""),
                "notice": request.query_params.get("notice", ""),
                "statuses": list(JobStatus),
                **context,
            },
        )
        set_csrf_cookie(request, response, token)
        return response

    # -- pages ---------------------------------------------------------------------------

    def overview_page(self, request: Request) -> Response:
        return self.render(request, "overview.html", "overview", overview=_reads.overview(self.app))

    def overview_panel(self, request: Request) -> Response:
        return self.render(
            request, "_overview_panel.html", "overview", overview=_reads.overview(self.app)
        )

    def jobs_page(self, request: Request) -> Response:
        query, filters, problems = _forms.job_query(request.query_params)
        page = _reads.query_jobs(self.app, query)
        next_link = None
        if page.next is not None:
            cursor = f"{page.next.created_at.isoformat()}|{page.next.id}"
            next_link = "?" + urlencode({**filters, "after": cursor})
        return self.render(
            request,
            "jobs.html",
            "jobs",
            jobs=page.jobs,
            filters=filters,
            problems=problems,
            next_link=next_link,
            first_link="?" + urlencode(filters) if query.after is not None else None,
            page_sizes=PAGE_SIZES,
            limit=query.limit,
            selected_statuses={s.value for s in query.statuses},
            queryable=isinstance(self.app.store, SupportsJobQuery),
        )

    def job_rows(self, request: Request) -> Response:
        """Table rows of the jobs named by ``ids`` (comma-separated): what the Dead
        letters page polls to show retried jobs going through their states."""
        ids = [i for i in request.query_params.get("ids", "").split(",") if i][:100]
        jobs = [job for job in (self.app.get_job(i) for i in ids) if job is not None]
        return self.render(request, "_job_rows.html", "jobs", jobs=jobs, selectable=False)

    def job_page(self, request: Request) -> Response:
        job_id = request.path_params["job_id"]
        job = self.app.get_job(
            job_id, include_archived=isinstance(self.app.store, SupportsArchiveAccess)
        )
        if job is None:
            raise HTTPException(404, f"No job has the id {job_id!r}.")
        executions = self.app.executions(job_id)
        try:
            logs = self.app.job_logs(job_id)
            progress = self.app.job_progress(job_id)
        except JobLogsUnsupportedError:
            logs, progress = None, None
        chains = isinstance(self.app.store, SupportsChains)
        return self.render(
            request,
            "job.html",
            "jobs",
            job=job,
            next_steps=self.app.dependents(job_id) if chains else [],
            last_error=redact(job.last_error) if job.last_error else None,
            executions=executions,
            logs=logs,
            progress=progress,
        )

    def dead_letters_page(self, request: Request) -> Response:
        # The jobs of the largest groups only: each group's rows cost a query or more.
        groups = [
            (group, _reads.failed_jobs_of(self.app, group) if index < GROUPS_WITH_ROWS else [])
            for index, group in enumerate(_reads.dead_letter_groups(self.app))
        ]
        watch = [i for i in request.query_params.get("watch", "").split(",") if i][:100]
        return self.render(
            request,
            "dead_letters.html",
            "dead-letters",
            groups=groups,
            watch=",".join(watch),
            watched=[job for job in (self.app.get_job(i) for i in watch) if job is not None],
            total=self.app.store.count_jobs().get(JobStatus.FAILED, 0),
        )

    def recurring_page(self, request: Request) -> Response:
        return self.render(request, "recurring.html", "recurring", rows=_reads.recurring(self.app))

    def nodes_page(self, request: Request) -> Response:
        return self.render(
            request,
            "nodes.html",
            "nodes",
            rows=_reads.nodes(self.app),
            grace=self.app.options.orphan_grace_seconds,
        )

    def plugins_page(self, request: Request) -> Response:
        return self.render(
            request,
            "plugins.html",
            "plugins",
            plugins=self.app.plugins.plugins,
            store=self.app.store.describe(),
            coordinator=type(self.app.coordinator).__name__,
            coordinator_reason=self.app.coordinator_reason,
            options=_reads.masked_options(self.app.options),
        )

    # -- actions -------------------------------------------------------------------------

    async def action(self, request: Request) -> Response:
        if self.read_only:
            raise HTTPException(403, "The dashboard is read-only: actions are switched off.")
        form = await request.form()
        if not check_csrf(request, form.get(CSRF_FIELD)):
            raise HTTPException(
                403, "The form's CSRF token is missing or stale: reload the page and try again."
            )
        handler = self.ACTIONS.get(request.path_params["action"])
        if handler is None:
            raise HTTPException(404, f"Unknown action {request.path_params['action']!r}.")
        actor = str(request.scope.get("state", {}).get(ACTOR_KEY, ""))
        try:  # the store calls block: off the event loop, like the pages
            notice, extra = await run_in_threadpool(handler, self, form, actor)
        except (RatchetError, ValueError) as exc:
            notice, extra = f"Refused: {redact(str(exc))}", {}
        return RedirectResponse(_forms.back_address(request, form, notice, extra), status_code=303)

    def _retry(self, form: FormData, actor: str) -> tuple[str, dict[str, str]]:
        ids = _forms.job_ids(form)
        retried = [job_id for job_id in ids if self.app.retry_job(job_id)]
        self.app.audit("retry", actor=actor, job_ids=retried, detail=f"asked for {len(ids)}")
        watch = {"watch": ",".join(retried)} if retried else {}
        return f"Retried {len(retried)} of {len(ids)} job(s).", watch

    def _cancel(self, form: FormData, actor: str) -> tuple[str, dict[str, str]]:
        ids = _forms.job_ids(form)
        canceled = [job_id for job_id in ids if self.app.cancel_job(job_id)]
        self.app.audit("cancel", actor=actor, job_ids=canceled, detail=f"asked for {len(ids)}")
        return f"Canceled {len(canceled)} of {len(ids)} job(s).", {}

    def _pause(self, form: FormData, actor: str) -> tuple[str, dict[str, str]]:
        ids = _forms.job_ids(form)
        paused = [job_id for job_id in ids if self.app.pause_job(job_id)]
        self.app.audit("pause", actor=actor, job_ids=paused, detail=f"asked for {len(ids)}")
        return f"Paused {len(paused)} of {len(ids)} job(s) (only PENDING jobs pause).", {}

    def _resume(self, form: FormData, actor: str) -> tuple[str, dict[str, str]]:
        ids = _forms.job_ids(form)
        resumed = [job_id for job_id in ids if self.app.resume_job(job_id)]
        self.app.audit("resume", actor=actor, job_ids=resumed, detail=f"asked for {len(ids)}")
        return f"Resumed {len(resumed)} of {len(ids)} job(s).", {}

    def _retry_all(self, form: FormData, actor: str) -> tuple[str, dict[str, str]]:
        """Every FAILED job of the filter the form carries (the page's filter)."""
        query, filters, problems = _forms.job_query(form)
        if problems:
            raise ValueError("; ".join(problems))
        statuses = query.statuses or (JobStatus.FAILED,)
        if JobStatus.FAILED not in statuses:
            return "Nothing to retry: the filter selects no FAILED jobs.", {}
        error = str(form.get("error_type", "")) or None
        detail = urlencode({k: v for k, v in filters.items() if k != "limit"}) or "every job"
        simple = {"name", "tag"} >= {k for k in filters if k not in ("status", "limit")}
        if simple and error is None:
            count = self.app.retry_jobs(name=query.name, tag=query.tag)
            self.app.audit("retry_all", actor=actor, detail=f"{detail}; {count} retried")
            return f"Retried {count} dead-lettered job(s).", {}
        failed = JobQuery(
            **{**_forms.fields(query), "statuses": (JobStatus.FAILED,), "limit": 1000}
        )
        chosen: list[str] = []
        while len(chosen) < _forms.BULK_LIMIT:
            page = _reads.query_jobs(self.app, failed)
            chosen += [
                j.id for j in page.jobs if error is None or _reads.error_type(j.last_error) == error
            ]
            if page.next is None:
                break
            failed = JobQuery(**{**_forms.fields(failed), "after": page.next})
        retried = [job_id for job_id in chosen[: _forms.BULK_LIMIT] if self.app.retry_job(job_id)]
        if error is not None:
            detail += f"; error type {error!r}"
        self.app.audit("retry_all", actor=actor, job_ids=retried, detail=detail)
        return f"Retried {len(retried)} dead-lettered job(s).", {}

    def _purge(self, form: FormData, actor: str) -> tuple[str, dict[str, str]]:
        days = _forms.number(form.get("older_than_days", "30"), "older_than_days", 0, 3650)
        age = days * 86400
        store = self.app.store
        purged = 0
        if isinstance(store, SupportsArchiveAccess):
            while True:  # in batches: no transaction grows with the dead-letter queue
                deleted = store.purge_dead_letters(older_than_seconds=age, batch_size=1000)
                purged += deleted
                if deleted < 1000:
                    break
        else:
            purged = store.purge_failed_jobs(older_than_seconds=age)
        self.app.audit("purge", actor=actor, detail=f"older than {days:g} day(s); {purged} deleted")
        return f"Purged {purged} dead-lettered job(s) older than {days:g} day(s).", {}

    def _run_now(self, form: FormData, actor: str) -> tuple[str, dict[str, str]]:
        recurring_id = str(form.get("recurring_id", ""))
        job_id = self.app.run_recurring_now(recurring_id)
        detail = f"schedule {recurring_id!r}"
        self.app.audit("run_now", actor=actor, job_ids=[job_id], detail=detail)
        return f"Schedule {recurring_id!r} runs now as job {job_id}.", {}

    def _pause_schedule(self, form: FormData, actor: str) -> tuple[str, dict[str, str]]:
        recurring_id = str(form.get("recurring_id", ""))
        self.app.pause_recurring(recurring_id)
        self.app.audit("pause_recurring", actor=actor, detail=f"schedule {recurring_id!r}")
        return f"Schedule {recurring_id!r} is paused: it fires no more until resumed.", {}

    def _resume_schedule(self, form: FormData, actor: str) -> tuple[str, dict[str, str]]:
        recurring_id = str(form.get("recurring_id", ""))
        self.app.resume_recurring(recurring_id)
        self.app.audit("resume_recurring", actor=actor, detail=f"schedule {recurring_id!r}")
        return (
            f"Schedule {recurring_id!r} is resumed; the instants it missed follow its "
            "misfire policy.",
            {},
        )

    ACTIONS: Mapping[str, Callable[[_Dashboard, FormData, str], tuple[str, dict[str, str]]]] = {
        "retry": _retry,
        "cancel": _cancel,
        "pause": _pause,
        "resume": _resume,
        "retry-all": _retry_all,
        "purge": _purge,
        "run-now": _run_now,
        "pause-schedule": _pause_schedule,
        "resume-schedule": _resume_schedule,
    }
