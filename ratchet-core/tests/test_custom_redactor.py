"""``Ratchet(..., redactor=fn)``: the user's own masking, after the built-in rules."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from ratchet import Ratchet
from ratchet._logs import get_logger
from ratchet._redact import redact, remove_redactor
from ratchet.spi import JobStatus

CUSTOMER = re.compile(r"ACME-\d+")


def mask_customers(text: str) -> str:
    return CUSTOMER.sub("ACME-***", text)


def broken_redactor(text: str) -> str:
    raise KeyError(text)


@pytest.fixture(autouse=True)
def _process_wide() -> Iterator[None]:
    """A redactor is process-wide: take the test's away again."""
    yield
    remove_redactor(mask_customers)
    remove_redactor(broken_redactor)


def _failed_job_error(sqlite_url: str, **kwargs: object) -> str:
    app = Ratchet(sqlite_url, coordinator="none", **kwargs)  # type: ignore[arg-type]

    @app.job(name="charge", max_retries=0)
    def charge() -> None:
        raise ValueError("customer ACME-123456 has no card on file; password=hunter2")

    job_id = charge.enqueue()
    app.run_until_idle(timeout=30)
    job = app.get_job(job_id)
    assert job is not None and job.status is JobStatus.FAILED
    [execution] = app.executions(job_id)
    app.close()
    return f"{job.last_error}\n{execution.message}"


def test_the_custom_redactor_masks_stored_errors_after_the_built_in_rules(
    sqlite_url: str,
) -> None:
    stored = _failed_job_error(sqlite_url, redactor=mask_customers)
    assert "ACME-123456" not in stored and "ACME-***" in stored
    assert "hunter2" not in stored  # the built-in rules still ran


def test_negative_control_without_it_the_customer_number_is_stored(sqlite_url: str) -> None:
    assert "ACME-123456" in _failed_job_error(sqlite_url)


def test_log_records_go_through_it(sqlite_url: str, caplog: pytest.LogCaptureFixture) -> None:
    Ratchet(sqlite_url, coordinator="none", redactor=mask_customers).close()
    with caplog.at_level("WARNING"):
        get_logger("ratchet.test").warning("refund for %s failed", "ACME-42")
    assert "ACME-42" not in caplog.text and "ACME-***" in caplog.text


def test_a_redactor_that_raises_withholds_the_text() -> None:
    Ratchet("memory://", coordinator="none", redactor=broken_redactor).close()
    masked = redact("customer ACME-7 at alice@example.com")
    assert "ACME-7" not in masked and "alice" not in masked
    assert "the custom redactor" in masked and "KeyError" in masked


def test_a_redactor_must_be_a_function() -> None:
    with pytest.raises(TypeError, match="redactor must be a function"):
        Ratchet("memory://", coordinator="none", redactor="ACME-*")  # type: ignore[arg-type]
