"""The dashboard in a real browser: Playwright driving the system Chromium against the
dashboard served by uvicorn, on a real SQLite store with an embedded worker.

Chromium comes from Debian's packages (``scripts/services up chromium``; ``scripts/test``
installs it), never from Playwright's own download. Without it these tests skip on a
developer's machine and fail in CI (``CI=true``), where its absence is a broken set-up.
Every page's screenshot lands in ``artifacts/dashboard/``.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST
from ratchet import JobStatus, Ratchet
from ratchet_dashboard import create_app

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).parents[2] / "artifacts" / "dashboard"
TIMEOUT_MS = 20_000


def _need_chromium() -> None:
    if CHROMIUM.exists():
        return
    reason = f"{CHROMIUM} is missing: install it with `scripts/services up chromium`"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (scripts/test does it; in CI the browser tests must run)")
    pytest.skip(reason)


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.02)


class Flaky:
    """The job's behaviour, switched by the test: fail (to dead-letter) or succeed."""

    def __init__(self) -> None:
        self.fail = True


@pytest.fixture
def flaky() -> Flaky:
    return Flaky()


@pytest.fixture
def ratchet_app(sqlite_url: str, flaky: Flaky) -> Iterator[Ratchet]:
    app = Ratchet(sqlite_url, **FAST)

    @app.job(name="charge_card", max_retries=0)
    def charge_card(order: int) -> dict[str, Any]:
        if flaky.fail:
            raise ConnectionError(f"payment gateway refused order {order}")
        return {"order": order, "charged": True}

    @app.job(name="send_email")
    def send_email(to: str) -> str:
        return f"sent to {to}"

    yield app
    app.close()


@pytest.fixture
def base_url(ratchet_app: Ratchet) -> Iterator[str]:
    """The dashboard served by uvicorn in a thread, on a free loopback port."""
    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    config = uvicorn.Config(
        create_app(ratchet_app), host="127.0.0.1", port=port, log_level="warning", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="dashboard-uvicorn", daemon=True)
    thread.start()
    wait_until(lambda: server.started, "uvicorn serves the dashboard")
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def page(base_url: str) -> Iterator[Any]:
    _need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox"], headless=True
        )
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        tab = context.new_page()
        tab.set_default_timeout(TIMEOUT_MS)
        problems: list[str] = []
        tab.on("pageerror", lambda error: problems.append(str(error)))
        tab.on(
            "console",
            lambda message: problems.append(message.text) if message.type == "error" else None,
        )
        tab.on("dialog", lambda dialog: dialog.accept())  # "Retry all", "Purge" confirm
        yield tab
        browser.close()
    # The pages run under a strict CSP: a refused script or style would show up here.
    assert problems == []


def shoot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def dead_letter(app: Ratchet, order: int) -> str:
    """Enqueue a charge that fails, run it on an embedded worker, and stop the worker:
    the job is FAILED and nothing runs it again until a worker starts."""
    job_id = app.enqueue("charge_card", order)
    worker = app.worker().start()
    try:
        wait_until(lambda: _status(app, job_id) == JobStatus.FAILED, "the charge dead-letters")
    finally:
        worker.stop()
    return job_id


def _status(app: Ratchet, job_id: str) -> JobStatus | None:
    job = app.get_job(job_id)
    return None if job is None else job.status


def test_retry_from_dead_letters_turns_the_row_pending_then_succeeded(
    page: Any, base_url: str, ratchet_app: Ratchet, flaky: Flaky
) -> None:
    from playwright.sync_api import expect

    job_id = dead_letter(ratchet_app, 1001)
    flaky.fail = False  # the gateway is back

    page.goto(f"{base_url}/dead-letters")
    group = page.get_by_role("region", name="charge_card ConnectionError")
    expect(group).to_contain_text("payment gateway refused order 1001")
    shoot(page, "dead-letters")
    group.locator(f'tr[data-job-id="{job_id}"]').get_by_role(
        "button", name="Retry", exact=True
    ).click()

    watched = page.locator(f'section[aria-labelledby="watched"] tr[data-job-id="{job_id}"]')
    expect(page.get_by_role("status")).to_have_text("Retried 1 of 1 job(s).")
    expect(watched.locator(".status")).to_have_text("PENDING")  # no worker runs yet
    worker = ratchet_app.worker().start()
    try:
        # The row is polled while the tab is visible: it changes without a reload.
        expect(watched.locator(".status")).to_have_text("SUCCEEDED")
    finally:
        worker.stop()
    assert _status(ratchet_app, job_id) == JobStatus.SUCCEEDED

    page.goto(f"{base_url}/jobs/{job_id}")
    expect(page.get_by_label("Result")).to_contain_text('"charged": true')
    # The timeline keeps both attempts: the failure, then the success.
    expect(page.get_by_role("row", name="1 1")).to_contain_text("ConnectionError")
    expect(page.get_by_role("row", name="1 2")).to_contain_text("SUCCEEDED")


def test_filters_pagination_and_bulk_cancel(page: Any, base_url: str, ratchet_app: Ratchet) -> None:
    from playwright.sync_api import expect

    billing = {
        ratchet_app.builder("send_email", f"b{n}@example.com").delay(3600).tags("billing").submit()
        for n in range(3)
    }
    others = {
        ratchet_app.builder("send_email", f"o{n}@example.com").delay(3600).submit()
        for n in range(4)
    }
    rows = page.locator("table.jobs tbody tr[data-job-id]")

    def shown() -> set[str]:
        return {rows.nth(i).get_attribute("data-job-id") for i in range(rows.count())}

    page.goto(f"{base_url}/jobs")
    page.get_by_label("Per page").select_option("25")
    page.get_by_label("Tag").fill("billing")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(3)
    assert shown() == billing

    # Keyset pagination, 3 a page over 7 jobs: 3, 3, 1, each job once.
    page.goto(f"{base_url}/jobs?limit=3")
    seen: list[str | None] = []
    for expected in (3, 3, 1):
        expect(rows).to_have_count(expected)
        seen += sorted(shown())
        next_page = page.get_by_role("link", name="Next page")
        if expected == 3:
            next_page.click()
        else:
            expect(next_page).to_have_count(0)
    assert len(seen) == 7 and set(seen) == billing | others

    # Bulk select on the filtered page, then Cancel.
    page.goto(f"{base_url}/jobs?tag=billing&status=PENDING")
    page.get_by_label("Select every job on this page").check()
    page.get_by_role("button", name="Cancel", exact=True).click()
    expect(page.get_by_role("status")).to_have_text("Canceled 3 of 3 job(s).")
    assert {_status(ratchet_app, job_id) for job_id in billing} == {JobStatus.CANCELED}
    assert {_status(ratchet_app, job_id) for job_id in others} == {JobStatus.PENDING}


def test_every_page_and_its_screenshot(
    page: Any, base_url: str, ratchet_app: Ratchet, flaky: Flaky
) -> None:
    from playwright.sync_api import expect

    dead_letter(ratchet_app, 7)
    flaky.fail = False
    done = ratchet_app.enqueue("charge_card", 8)
    ratchet_app.enqueue("send_email", "ops@example.com")
    ratchet_app.builder("send_email", "later@example.com").delay(3600).tags("digest").submit()
    ratchet_app.schedule_recurring("send_email", "0 7 * * 1", id="weekly-digest", args=["all"])
    worker = ratchet_app.worker().start()
    try:
        wait_until(lambda: _status(ratchet_app, done) == JobStatus.SUCCEEDED, "the charge runs")
        for name, path, heading in (
            ("overview", "/", "Overview"),
            ("jobs", "/jobs", "Jobs"),
            ("job", f"/jobs/{done}", "Job"),
            ("dead-letters-page", "/dead-letters", "Dead letters"),
            ("recurring", "/recurring", "Recurring schedules"),
            ("nodes", "/nodes", "Nodes"),
            ("plugins", "/plugins", "Plugins and configuration"),
        ):
            page.goto(base_url + path)
            expect(page.get_by_role("heading", level=1)).to_contain_text(heading)
            shoot(page, name)
        page.goto(f"{base_url}/nodes")
        expect(page.locator(f'tr[data-node-id="{ratchet_app.node_id}"]')).to_contain_text("live")

        page.goto(f"{base_url}/recurring")
        page.get_by_role("button", name="Run now").click()
        expect(page.get_by_role("status")).to_contain_text("'weekly-digest' runs now as job")
        fired = ratchet_app.list_jobs(status=None, limit=100)
        assert any(job.business_key == "weekly-digest" for job in fired)
    finally:
        worker.stop()

    # "Retry all" and "Purge" ask before they act (the dialog handler accepts).
    page.goto(f"{base_url}/dead-letters")
    page.get_by_label("Older than").fill("0")
    page.get_by_role("button", name="Purge").click()
    expect(page.get_by_role("status")).to_have_text(
        "Purged 1 dead-lettered job(s) older than 0 day(s)."
    )
    page.goto(f"{base_url}/")
    expect(page.locator('[data-count="dlq"]')).to_have_text("0")
    shoot(page, "overview-after-purge")


def test_a_missing_chromium_skips_locally_and_fails_in_ci(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import test_browser

    monkeypatch.setattr(test_browser, "CHROMIUM", tmp_path / "no-chromium")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="scripts/services up chromium"):
        _need_chromium()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="must run"):
        _need_chromium()
