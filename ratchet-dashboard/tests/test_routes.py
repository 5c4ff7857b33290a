"""Every page and action of the dashboard through Starlette's TestClient, on SQLite."""

from __future__ import annotations

import base64
import hashlib
import re
import time
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Mount
from starlette.testclient import TestClient

from conftest import csrf, make_app
from ratchet import JobStatus, Ratchet
from ratchet.events import OperatorAction
from ratchet_dashboard import _reads, create_app

PAGES = ["/", "/overview/panel", "/jobs", "/dead-letters", "/recurring", "/nodes", "/plugins"]


def failed_job(app: Ratchet, text: str = "boom") -> str:
    job_id = app.enqueue("boom", text)
    app.run_until_idle(timeout=10)
    job = app.get_job(job_id)
    assert job is not None and job.status == JobStatus.FAILED
    return job_id


def status_of(app: Ratchet, job_id: str) -> JobStatus:
    job = app.get_job(job_id)
    assert job is not None
    return job.status


@pytest.fixture
def populated(ratchet_app: Ratchet) -> dict[str, str]:
    """A job in each interesting state, and a schedule."""
    done = ratchet_app.enqueue("ok", 21)
    failed = failed_job(ratchet_app)
    crashed = ratchet_app.enqueue("crash")
    ratchet_app.run_until_idle(timeout=10)
    pending = ratchet_app.builder("ok", 1).delay(3600).tags("Billing").business_key("b-1").submit()
    ratchet_app.schedule_recurring("ok", "0 3 * * *", id="nightly", args=[5])
    return {"done": done, "failed": failed, "crashed": crashed, "pending": pending}


def audits(app: Ratchet) -> list[OperatorAction]:
    seen: list[OperatorAction] = []
    app.on(OperatorAction, seen.append)
    return seen


# -- pages ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", PAGES)
def test_every_page_answers(client: TestClient, populated: dict[str, str], path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/html")


def test_the_overview_counts_statuses_and_shows_the_store(
    client: TestClient, populated: dict[str, str], ratchet_app: Ratchet
) -> None:
    text = client.get("/").text
    assert re.search(r'data-count="FAILED">\s*2<', text)
    assert re.search(r'data-count="SUCCEEDED">\s*1<', text)
    assert re.search(r'data-count="dlq">\s*2<', text)
    assert ratchet_app.store.describe() in text
    # Polled while visible: the panel refreshes through htmx, driven by dashboard.js.
    assert 'data-poll-ms="5000"' in text and 'hx-get="/overview/panel"' in text
    # Throughput from execution records: 1 success, 2 failed attempts in the last hour.
    panel = client.get("/overview/panel").text
    assert re.search(r"<td>last hour</td>\s*<td>1</td>\s*<td>2</td>\s*<td>66.7%</td>", panel)


def test_the_job_page_shows_arguments_result_error_and_attempts(
    client: TestClient, populated: dict[str, str]
) -> None:
    done = client.get(f"/jobs/{populated['done']}").text
    assert "SUCCEEDED" in done and '<pre class="json" aria-label="Result">42</pre>' in done
    assert "21" in done
    failed = client.get(f"/jobs/{populated['failed']}").text
    assert "ValueError: boom" in failed and "Traceback" in failed
    assert "<td>1</td><td>1</td>" in failed  # attempt 1, claim 1 in the timeline


def test_an_unknown_job_is_404(client: TestClient) -> None:
    assert client.get("/jobs/no-such-job").status_code == 404


def test_error_text_is_escaped(client: TestClient, ratchet_app: Ratchet) -> None:
    job_id = failed_job(ratchet_app, "<script>alert(1)</script>")
    for path in (f"/jobs/{job_id}", "/dead-letters"):
        text = client.get(path).text
        assert "<script>alert(1)" not in text
        assert "&lt;script&gt;alert(1)" in text


def test_security_headers(client: TestClient) -> None:
    headers = client.get("/").headers
    assert headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert "script-src 'self'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"


def test_static_files_are_served_and_htmx_is_the_recorded_one(client: TestClient) -> None:
    notice = (Path(__file__).parents[1] / "src/ratchet_dashboard/static/NOTICE.md").read_text()
    recorded = re.search(r"sha256: `([0-9a-f]{64})`", notice)
    assert recorded is not None
    response = client.get("/static/htmx.min.js")
    assert response.status_code == 200
    assert hashlib.sha256(response.content).hexdigest() == recorded.group(1)
    assert client.get("/static/dashboard.css").status_code == 200
    assert client.get("/static/dashboard.js").status_code == 200


def test_dead_letters_are_grouped_by_name_and_error_type(
    client: TestClient, populated: dict[str, str], ratchet_app: Ratchet
) -> None:
    failed_job(ratchet_app, "again")
    text = client.get("/dead-letters").text
    groups = re.findall(
        r'<h2>(\w+) <span class="error-type">(\w+)</span> <span class="count">(\d+)</span>', text
    )
    assert groups == [("boom", "ValueError", "2"), ("crash", "KeyError", "1")]


def test_recurring_shows_the_schedule_and_its_next_fire(
    client: TestClient, populated: dict[str, str]
) -> None:
    text = client.get("/recurring").text
    assert "nightly" in text and "at 03:00 every day" in text and "fire_once" in text
    assert "Run now" in text


def test_nodes_mark_stale_ones(ratchet_app: Ratchet, client: TestClient) -> None:
    ratchet_app.store.register_node("node-live")
    text = client.get("/nodes").text
    assert 'data-node-id="node-live"' in text and "<td>live</td>" in text
    # A node whose heartbeat is older than the grace: the smallest grace, then a wait.
    strict = Ratchet(ratchet_app.store, coordinator="none", orphan_grace_seconds=0.01)
    with TestClient(create_app(strict)) as other:
        deadline = time.monotonic() + 10
        while "<td>stale</td>" not in other.get("/nodes").text:
            assert time.monotonic() < deadline, "the node never showed as stale"
            time.sleep(0.02)


def test_plugins_page_masks_secrets(sqlite_url: str) -> None:
    key = base64.b64encode(b"k" * 32).decode()
    app = make_app(sqlite_url, encryption_keys=f"k1:{key}")
    try:
        with TestClient(create_app(app)) as client:
            text = client.get("/plugins").text
        assert "RATCHET_ENCRYPTION_KEYS" in text and "********" in text
        assert key not in text
        assert "sqlite" in text  # the plugin report: the built-in stores
    finally:
        app.close()


def test_arguments_are_opened_with_the_applications_keys_and_stay_sealed_without(
    sqlite_url: str,
) -> None:
    key = base64.b64encode(b"s" * 32).decode()
    app = make_app(sqlite_url, encryption_keys=f"k1:{key}", encrypt_all=True)
    try:
        job_id = app.builder("ok", 123456789).delay(3600).submit()
        with TestClient(create_app(app)) as client:
            assert "123456789" in client.get(f"/jobs/{job_id}").text
        keyless = Ratchet(app.store, coordinator="none")
        with TestClient(create_app(keyless)) as client:
            text = client.get(f"/jobs/{job_id}").text
        assert "123456789" not in text and job_id in text
    finally:
        app.close()


# -- the Jobs page: filters and keyset pagination ---------------------------------------


def test_filters(client: TestClient, populated: dict[str, str], ratchet_app: Ratchet) -> None:
    def ids(query: str) -> set[str]:
        return set(re.findall(r'<tr data-job-id="([^"]+)"', client.get("/jobs" + query).text))

    assert ids("?status=FAILED") == {populated["failed"], populated["crashed"]}
    assert ids("?status=FAILED&status=PENDING") == {
        populated["failed"],
        populated["crashed"],
        populated["pending"],
    }
    assert ids("?name=crash") == {populated["crashed"]}
    assert ids("?tag=billing") == {populated["pending"]}
    assert ids("?tag=+Billing+") == {populated["pending"]}
    assert ids("?business_key=b-1") == {populated["pending"]}
    keyed = ratchet_app.builder("ok", 2).delay(3600).idempotency_key("once").submit()
    assert ids("?idempotency_key=once") == {keyed}
    assert ids("?created_from=2999-01-01T00:00") == set()
    assert len(ids("?created_to=2999-01-01T00:00")) == 5
    problem = client.get("/jobs?status=LOST&created_from=yesterday").text
    assert (
        "Unknown status &#39;LOST&#39;" in problem
        and "created_from is &#39;yesterday&#39;" in problem
    )


def test_keyset_pagination_visits_every_job_once(client: TestClient, ratchet_app: Ratchet) -> None:
    made = {ratchet_app.builder("ok", n).delay(3600).submit() for n in range(7)}
    seen: list[str] = []
    link = "/jobs?limit=3"
    pages = 0
    while link:
        text = client.get(link).text
        seen += re.findall(r'<tr data-job-id="([^"]+)"', text)
        found = re.search(r'<a href="([^"]+)" rel="next">Next page</a>', text)
        link = found.group(1).replace("&amp;", "&") if found else ""
        pages += 1
        assert pages < 10
    assert pages == 3 and len(seen) == 7 and set(seen) == made


def test_without_the_query_capability_the_pages_use_the_basic_api(
    client: TestClient, populated: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from typing import Protocol, runtime_checkable

    @runtime_checkable
    class Nobody(Protocol):
        def nobody_has_this(self) -> None: ...

    monkeypatch.setattr(_reads, "SupportsJobQuery", Nobody)
    for path in PAGES:
        assert client.get(path).status_code == 200, path
    text = client.get("/jobs?status=FAILED&limit=1").text
    assert len(re.findall(r'<tr data-job-id="', text)) == 1 and 'rel="next"' in text
    groups = client.get("/dead-letters").text
    assert '<span class="error-type">ValueError</span>' in groups


# -- actions --------------------------------------------------------------------------


def test_retry_moves_a_dead_letter_back_and_audits_it(
    client: TestClient, populated: dict[str, str], ratchet_app: Ratchet
) -> None:
    seen = audits(ratchet_app)
    token = csrf(client, "/dead-letters")
    response = client.post(
        "/actions/retry",
        data={"csrf_token": token, "job_id": populated["failed"], "back": "/dead-letters"},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert response.headers["location"].startswith(f"/dead-letters?watch={populated['failed']}")
    assert status_of(ratchet_app, populated["failed"]) == JobStatus.PENDING
    assert [(e.action, e.actor, e.job_ids) for e in seen] == [
        ("retry", "anonymous", (populated["failed"],))
    ]
    # The page it returns to shows the job it retried, polled while it runs.
    page = client.get(response.headers["location"]).text
    assert "Retried 1 of 1 job(s)." in page and "Just retried" in page
    rows = client.get(f"/jobs/rows?ids={populated['failed']}").text
    assert f'data-job-id="{populated["failed"]}"' in rows and "PENDING" in rows


def test_cancel_selected_jobs(
    client: TestClient, populated: dict[str, str], ratchet_app: Ratchet
) -> None:
    seen = audits(ratchet_app)
    other = ratchet_app.builder("ok", 3).delay(3600).submit()
    token = csrf(client, "/jobs")
    response = client.post(
        "/actions/cancel",
        data={"csrf_token": token, "job_id": [populated["pending"], other, populated["done"]]},
    )
    assert response.status_code == 200 and "Canceled 2 of 3 job(s)." in response.text
    assert status_of(ratchet_app, populated["pending"]) == JobStatus.CANCELED
    assert status_of(ratchet_app, other) == JobStatus.CANCELED
    assert seen[0].action == "cancel" and set(seen[0].job_ids) == {populated["pending"], other}


def test_pause_and_resume_selected_jobs(
    client: TestClient, populated: dict[str, str], ratchet_app: Ratchet
) -> None:
    """Pause takes the PENDING jobs of the selection to PAUSED (a finished one is left
    as it is), the job page then offers Resume instead of Pause, and Resume brings them
    back; both are audited with the jobs they changed."""
    seen = audits(ratchet_app)
    token = csrf(client, "/jobs")
    paused = client.post(
        "/actions/pause",
        data={"csrf_token": token, "job_id": [populated["pending"], populated["done"]]},
    )
    assert "Paused 1 of 2 job(s)" in paused.text
    assert status_of(ratchet_app, populated["pending"]) == JobStatus.PAUSED
    assert status_of(ratchet_app, populated["done"]) == JobStatus.SUCCEEDED
    page = client.get(f"/jobs/{populated['pending']}").text
    assert "/actions/resume" in page and "/actions/pause" not in page
    resumed = client.post(
        "/actions/resume", data={"csrf_token": token, "job_id": populated["pending"]}
    )
    assert "Resumed 1 of 1 job(s)." in resumed.text
    assert status_of(ratchet_app, populated["pending"]) == JobStatus.PENDING
    assert [(e.action, e.job_ids) for e in seen] == [
        ("pause", (populated["pending"],)),
        ("resume", (populated["pending"],)),
    ]


def test_a_chain_step_links_to_the_step_it_waits_for(
    client: TestClient, populated: dict[str, str], ratchet_app: Ratchet
) -> None:
    first = ratchet_app.builder("ok", 1).delay(3600).then("ok", 2).submit()
    [second] = ratchet_app.dependents(first)
    page = client.get(f"/jobs/{second.id}").text
    assert f'href="/jobs/{first}"' in page and "WAITING" in page
    assert "/actions/cancel" in page  # a waiting step can be canceled
    assert f'href="/jobs/{second.id}"' in client.get(f"/jobs/{first}").text  # its next step


def test_a_workflow_branch_shows_its_condition(
    client: TestClient, populated: dict[str, str], ratchet_app: Ratchet
) -> None:
    first = ratchet_app.builder("ok", 1).delay(3600).then_on_failure("ok", 2).submit()
    [branch] = ratchet_app.dependents(first)
    page = client.get(f"/jobs/{branch.id}").text
    assert "on failure" in page and f'href="/jobs/{first}"' in page


def test_a_batch_child_links_to_its_record(
    client: TestClient, populated: dict[str, str], ratchet_app: Ratchet
) -> None:
    batch_id = ratchet_app.batch("nightly").for_each([1, 2], "ok").submit()
    [child] = [job for job in ratchet_app.list_jobs(limit=50) if job.batch_id == batch_id][:1]
    assert f'href="/jobs/{batch_id}"' in client.get(f"/jobs/{child.id}").text
    assert "a batch of 2 children" in client.get(f"/jobs/{batch_id}").text


def test_a_job_awaiting_a_signal_shows_its_key_then_its_payload(
    client: TestClient, populated: dict[str, str], ratchet_app: Ratchet
) -> None:
    job_id = ratchet_app.builder("ok", 1).await_signal("approval-7", timeout=600).submit()
    page = client.get(f"/jobs/{job_id}").text
    assert "approval-7" in page and "awaited until" in page and "WAITING" in page
    assert "Signal payload" not in page
    assert ratchet_app.deliver_signal("approval-7", {"approved": "yes-<b>"}) == 1
    page = client.get(f"/jobs/{job_id}").text
    assert "delivered" in page and "Signal payload" in page
    assert "yes-&lt;b&gt;" in page and "yes-<b>" not in page  # escaped like any payload


def test_retry_all_applies_to_the_filter(
    client: TestClient, populated: dict[str, str], ratchet_app: Ratchet
) -> None:
    seen = audits(ratchet_app)
    token = csrf(client, "/jobs")
    client.post("/actions/retry-all", data={"csrf_token": token, "name": "crash"})
    assert status_of(ratchet_app, populated["crashed"]) == JobStatus.PENDING
    assert status_of(ratchet_app, populated["failed"]) == JobStatus.FAILED
    assert seen[0].action == "retry_all" and "name=crash" in (seen[0].detail or "")


def test_retry_all_of_a_dead_letter_group_keeps_to_its_error_type(
    client: TestClient, populated: dict[str, str], ratchet_app: Ratchet
) -> None:
    token = csrf(client, "/dead-letters")
    client.post(
        "/actions/retry-all",
        data={"csrf_token": token, "status": "FAILED", "name": "boom", "error_type": "KeyError"},
    )
    assert status_of(ratchet_app, populated["failed"]) == JobStatus.FAILED  # a ValueError
    client.post(
        "/actions/retry-all",
        data={"csrf_token": token, "status": "FAILED", "name": "boom", "error_type": "ValueError"},
    )
    assert status_of(ratchet_app, populated["failed"]) == JobStatus.PENDING
    assert status_of(ratchet_app, populated["crashed"]) == JobStatus.FAILED


def test_purge_deletes_dead_letters(
    client: TestClient, populated: dict[str, str], ratchet_app: Ratchet
) -> None:
    seen = audits(ratchet_app)
    token = csrf(client, "/dead-letters")
    kept = client.post("/actions/purge", data={"csrf_token": token, "older_than_days": "30"})
    assert "Purged 0" in kept.text and ratchet_app.get_job(populated["failed"]) is not None
    gone = client.post("/actions/purge", data={"csrf_token": token, "older_than_days": "0"})
    assert "Purged 2" in gone.text
    assert ratchet_app.get_job(populated["failed"]) is None
    assert ratchet_app.get_job(populated["done"]) is not None
    assert [e.action for e in seen] == ["purge", "purge"]
    refused = client.post("/actions/purge", data={"csrf_token": token, "older_than_days": "-1"})
    assert "Refused: older_than_days is &#39;-1&#39;" in refused.text


def test_run_now_fires_the_schedule_under_its_business_key(
    client: TestClient, populated: dict[str, str], ratchet_app: Ratchet
) -> None:
    seen = audits(ratchet_app)
    token = csrf(client, "/recurring")
    response = client.post(
        "/actions/run-now", data={"csrf_token": token, "recurring_id": "nightly"}
    )
    assert "runs now as job" in response.text
    [event] = seen
    job = ratchet_app.get_job(event.job_ids[0])
    assert job is not None and job.business_key == "nightly" and job.args == (5,)
    again = client.post("/actions/run-now", data={"csrf_token": token, "recurring_id": "nightly"})
    assert "Refused:" in again.text  # the pending run holds the key
    unknown = client.post("/actions/run-now", data={"csrf_token": token, "recurring_id": "x"})
    assert "Refused: No recurring schedule is saved under &#39;x&#39;" in unknown.text


def test_pause_and_resume_a_schedule_from_the_recurring_page(
    client: TestClient, populated: dict[str, str], ratchet_app: Ratchet
) -> None:
    """Pause shows the schedule paused (and a Resume button) for every node; Resume lets
    it fire again; both are audited; an unknown id is refused, naming it."""
    seen = audits(ratchet_app)
    token = csrf(client, "/recurring")
    paused = client.post(
        "/actions/pause-schedule", data={"csrf_token": token, "recurring_id": "nightly"}
    )
    assert "Schedule &#39;nightly&#39; is paused" in paused.text
    assert [d.paused for d in ratchet_app.list_recurring() if d.id == "nightly"] == [True]
    page = client.get("/recurring").text
    assert "<strong>paused</strong>" in page and "/actions/resume-schedule" in page
    resumed = client.post(
        "/actions/resume-schedule", data={"csrf_token": token, "recurring_id": "nightly"}
    )
    assert "is resumed" in resumed.text
    assert [d.paused for d in ratchet_app.list_recurring() if d.id == "nightly"] == [False]
    assert [e.action for e in seen] == ["pause_recurring", "resume_recurring"]
    unknown = client.post(
        "/actions/pause-schedule", data={"csrf_token": token, "recurring_id": "x"}
    )
    assert "Refused: No recurring schedule is saved under &#39;x&#39;" in unknown.text


def test_the_return_address_stays_on_the_dashboard(
    client: TestClient, populated: dict[str, str]
) -> None:
    token = csrf(client)
    for back in ("https://evil.example/", "//evil.example/x", "/\\evil"):
        response = client.post(
            "/actions/retry",
            data={"csrf_token": token, "job_id": populated["failed"], "back": back},
            follow_redirects=False,
        )
        assert response.headers["location"].startswith("/?"), back


# -- refusals -------------------------------------------------------------------------


@pytest.mark.parametrize("token", [None, "", "forged-token-of-the-right-length-0123456789"])
def test_an_action_without_the_sessions_csrf_token_is_refused(
    client: TestClient, populated: dict[str, str], ratchet_app: Ratchet, token: str | None
) -> None:
    seen = audits(ratchet_app)
    csrf(client)
    data = {"job_id": populated["failed"]}
    if token is not None:
        data["csrf_token"] = token
    response = client.post("/actions/retry", data=data)
    assert response.status_code == 403
    assert status_of(ratchet_app, populated["failed"]) == JobStatus.FAILED
    assert seen == []


def test_a_token_without_its_cookie_is_refused(
    client: TestClient, populated: dict[str, str], ratchet_app: Ratchet
) -> None:
    token = csrf(client)
    client.cookies.clear()  # another site's page posting the stolen value: no cookie
    response = client.post(
        "/actions/retry", data={"csrf_token": token, "job_id": populated["failed"]}
    )
    assert response.status_code == 403
    assert status_of(ratchet_app, populated["failed"]) == JobStatus.FAILED


def test_read_only_hides_the_buttons_and_refuses_actions(
    ratchet_app: Ratchet, populated: dict[str, str]
) -> None:
    with TestClient(create_app(ratchet_app, read_only=True)) as client:
        for path in [*PAGES, f"/jobs/{populated['failed']}"]:
            text = client.get(path).text
            assert "<button" not in text.replace('<button type="submit">Filter</button>', ""), path
            assert "/actions/" not in text, path
        token = csrf(client)
        for action in (
            "retry",
            "cancel",
            "pause",
            "resume",
            "retry-all",
            "purge",
            "run-now",
            "pause-schedule",
            "resume-schedule",
        ):
            response = client.post(
                f"/actions/{action}",
                data={
                    "csrf_token": token,
                    "job_id": populated["failed"],
                    "recurring_id": "nightly",
                },
            )
            assert response.status_code == 403, action
    assert status_of(ratchet_app, populated["failed"]) == JobStatus.FAILED


def test_basic_auth(ratchet_app: Ratchet, populated: dict[str, str]) -> None:
    seen = audits(ratchet_app)
    with TestClient(create_app(ratchet_app, auth=("ops", "s3cret"))) as client:
        for path in ("/", "/jobs", "/static/htmx.min.js"):
            refused = client.get(path)
            assert refused.status_code == 401, path
            assert refused.headers["www-authenticate"].startswith("Basic ")
        assert client.get("/", auth=("ops", "wrong")).status_code == 401
        assert client.get("/", auth=("other", "s3cret")).status_code == 401
        client.auth = ("ops", "s3cret")
        token = csrf(client)
        client.post("/actions/retry", data={"csrf_token": token, "job_id": populated["failed"]})
    assert [e.actor for e in seen] == ["ops"]


def test_a_callable_names_the_user(ratchet_app: Ratchet, populated: dict[str, str]) -> None:
    seen = audits(ratchet_app)

    async def from_header(request: Request) -> str | None:
        return request.headers.get("x-user")

    with TestClient(create_app(ratchet_app, auth=from_header)) as client:
        assert client.get("/").status_code == 401
        client.headers["x-user"] = "carol"
        token = csrf(client)
        client.post("/actions/retry", data={"csrf_token": token, "job_id": populated["failed"]})
    assert [e.actor for e in seen] == ["carol"]


def test_bad_auth_arguments_are_refused(ratchet_app: Ratchet) -> None:
    with pytest.raises(ValueError, match="non-empty"):
        create_app(ratchet_app, auth=("ops", ""))
    with pytest.raises(TypeError, match="auth must be"):
        create_app(ratchet_app, auth=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ratchet.Ratchet"):
        create_app("sqlite:///x.db")  # type: ignore[arg-type]


# -- mounted under a prefix -------------------------------------------------------------


def test_mounted_under_a_prefix_every_link_and_form_uses_it(
    ratchet_app: Ratchet, populated: dict[str, str]
) -> None:
    outer = Starlette(routes=[Mount("/ops", app=create_app(ratchet_app))])
    with TestClient(outer) as client:
        for path in PAGES:
            assert client.get("/ops" + path).status_code == 200, path
        text = client.get("/ops/dead-letters").text
        links = re.findall(r'(?:href|action|src|hx-get)="([^"#:]+)"', text)
        assert links and all(link.startswith("/ops/") for link in links), links
        assert client.get("/ops/static/htmx.min.js").status_code == 200
        token = client.cookies.get("ratchet_dashboard_csrf")
        assert token
        response = client.post(
            "/ops/actions/retry",
            data={"csrf_token": token, "job_id": populated["failed"], "back": "/ops/dead-letters"},
            follow_redirects=False,
        )
        assert response.status_code == 303
        assert response.headers["location"].startswith("/ops/dead-letters?")
        # A return address outside the mount is not followed.
        outside = client.post(
            "/ops/actions/retry",
            data={"csrf_token": token, "job_id": populated["crashed"], "back": "/elsewhere"},
            follow_redirects=False,
        )
        assert outside.headers["location"].startswith("/ops/?")
    assert status_of(ratchet_app, populated["failed"]) == JobStatus.PENDING


def test_mounted_in_fastapi(ratchet_app: Ratchet, populated: dict[str, str]) -> None:
    from fastapi import FastAPI

    api = FastAPI()
    api.mount("/ops", create_app(ratchet_app))
    with TestClient(api) as client:
        text = client.get("/ops/jobs").text
        assert f'href="/ops/jobs/{populated["done"]}"' in text


# -- negative controls: the refusal tests notice a missing guard ------------------------


def test_without_the_csrf_check_a_forged_post_would_act(
    client: TestClient,
    populated: dict[str, str],
    ratchet_app: Ratchet,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ratchet_dashboard.app

    monkeypatch.setattr(ratchet_dashboard.app, "check_csrf", lambda request, submitted: True)
    response = client.post("/actions/retry", data={"job_id": populated["failed"]})
    assert response.status_code == 200
    assert status_of(ratchet_app, populated["failed"]) == JobStatus.PENDING


def test_without_the_read_only_check_an_action_would_act(
    ratchet_app: Ratchet, populated: dict[str, str]
) -> None:
    dashboard = create_app(ratchet_app, read_only=True)
    with TestClient(dashboard) as client:
        token = csrf(client)
        assert client.post("/actions/cancel", data={"csrf_token": token}).status_code == 403
    writable = create_app(ratchet_app, read_only=False)  # the same request, guard off
    with TestClient(writable) as client:
        token = csrf(client)
        data = {"csrf_token": token, "job_id": populated["pending"]}
        assert client.post("/actions/cancel", data=data).status_code == 200
    assert status_of(ratchet_app, populated["pending"]) == JobStatus.CANCELED


def test_options_mask_secrets_and_store_url_passwords() -> None:
    from ratchet import RatchetOptions
    from ratchet_dashboard._reads import masked_options

    options = RatchetOptions.from_env(
        store_url="postgresql://ops:hunter2@db/ratchet", encryption_keys="k1:c2VjcmV0"
    )
    shown = {variable: value for variable, value, _doc in masked_options(options)}
    assert shown["RATCHET_STORE_URL"] == "postgresql://ops:***@db/ratchet"
    assert shown["RATCHET_ENCRYPTION_KEYS"] == "********"
    assert "hunter2" not in str(shown) and "c2VjcmV0" not in str(shown)
