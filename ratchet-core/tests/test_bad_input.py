"""Bad input: a clear error naming the value and the fix, and nothing half-written."""

from __future__ import annotations

import pytest

import ratchet
from conftest import FAST
from ratchet import JobStatus, Ratchet
from ratchet.errors import (
    ArgumentsNotSerializableError,
    BusinessKeyConflictError,
    ConfigurationError,
    DuplicateIdempotencyKeyError,
    InvalidStoreURLError,
    PayloadTooLargeError,
    UnknownStoreError,
)


def test_non_json_arguments_name_the_argument(app: Ratchet) -> None:
    @app.job
    def work(*args: object, **kwargs: object) -> None: ...

    with pytest.raises(
        ArgumentsNotSerializableError, match=r"Positional argument 1 .*\{1, 2\}.*'set'"
    ):
        work.enqueue("fine", {1, 2})
    with pytest.raises(ArgumentsNotSerializableError, match=r"Keyword argument 'when'"):
        work.enqueue(when=object())
    with pytest.raises(ArgumentsNotSerializableError, match="Param 'blob'"):
        work.builder().param("blob", b"bytes").submit()
    with pytest.raises(ArgumentsNotSerializableError, match="nan"):
        work.enqueue(float("nan"))
    assert isinstance(ArgumentsNotSerializableError("x"), TypeError)
    assert app.list_jobs() == []


def test_payload_over_the_limit() -> None:
    app = Ratchet("memory://", max_payload_kb=1, **FAST)

    @app.job
    def work(data: str) -> None: ...

    work.enqueue("x" * 900)
    with pytest.raises(PayloadTooLargeError, match=r"over the limit of 1024 bytes.*reference"):
        work.enqueue("é" * 600)  # 1200 bytes encoded
    assert len(app.list_jobs()) == 1


def test_unknown_store_scheme_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    # As on a machine where only ratchet-core is installed.
    monkeypatch.setenv("RATCHET_DISABLED_PLUGINS", "postgresql,mysql,mongodb")
    with pytest.raises(UnknownStoreError) as info:
        Ratchet("postgres://db/app")
    message = str(info.value)
    assert "'postgres'" in message and "Installed: 'memory', 'sqlite'" in message
    assert "Did you mean 'postgresql'?" in message
    assert "pip install ratchet-store-postgresql" in message


def test_malformed_store_urls() -> None:
    with pytest.raises(InvalidStoreURLError, match="has no scheme"):
        Ratchet("ratchet.db")
    with pytest.raises(InvalidStoreURLError, match="names a host"):
        Ratchet("sqlite://localhost/x.db")
    with pytest.raises(InvalidStoreURLError, match="no file path"):
        Ratchet("sqlite:///")
    with pytest.raises(TypeError, match="URL string or a JobStore"):
        Ratchet(42)  # type: ignore[arg-type]


def test_duplicate_idempotency_key_even_after_completion(app: Ratchet) -> None:
    @app.job
    def work() -> None: ...

    first = work.builder().idempotency_key("req-1").submit()
    app.run_until_idle(timeout=30)
    with pytest.raises(DuplicateIdempotencyKeyError, match=f"'req-1'.*{first}") as info:
        work.builder().idempotency_key("req-1").submit()
    assert info.value.existing_job_id == first
    assert len(app.list_jobs()) == 1


def test_active_business_key_conflict_and_release(app: Ratchet) -> None:
    @app.job
    def work() -> None: ...

    first = work.builder().business_key("order-9").submit()
    with pytest.raises(BusinessKeyConflictError, match=f"'order-9'.*{first}") as info:
        work.builder().business_key("order-9").submit()
    assert info.value.existing_job_id == first
    app.run_until_idle(timeout=30)  # SUCCEEDED releases the key
    second = work.builder().business_key("order-9").submit()
    assert app.get_job(second).status is JobStatus.PENDING  # type: ignore[union-attr]


def test_retry_job_rereserves_the_business_key(app: Ratchet) -> None:
    @app.job(max_retries=0)
    def fails() -> None:
        raise RuntimeError("x")

    failed = fails.builder().business_key("k").submit()
    app.run_until_idle(timeout=30)
    holder = fails.builder().business_key("k").submit()  # FAILED released the key
    with pytest.raises(BusinessKeyConflictError, match="cannot be retried"):
        app.retry_job(failed)
    assert app.get_job(failed).status is JobStatus.FAILED  # type: ignore[union-attr]
    app.cancel_job(holder)
    assert app.retry_job(failed) is True


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("RATCHET_WORKER_CONCURRENCY", "-2", "must be >= 1"),
        ("RATCHET_WORKER_CONCURRENCY", "many", "not a whole number"),
        ("RATCHET_POLL_IDLE_MAX_SECONDS", "soon", "not a number"),
        ("RATCHET_NODE_ORPHAN_GRACE_SECONDS", "-1", "must be >= 0.01"),
        ("RATCHET_MAX_PAYLOAD_KB", "nan", "must be >="),
    ],
)
def test_invalid_configuration_values(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigurationError, match=message) as info:
        Ratchet("memory://")
    assert variable in str(info.value) and repr(value) in str(info.value)


def test_invalid_keyword_options() -> None:
    with pytest.raises(ConfigurationError, match="option 'concurrency' is 0"):
        Ratchet("memory://", concurrency=0)
    with pytest.raises(ConfigurationError, match="Unknown Ratchet option.*'concurency'"):
        Ratchet("memory://", concurency=4)


def test_invalid_builder_values(app: Ratchet) -> None:
    @app.job
    def work() -> None: ...

    with pytest.raises(ValueError, match="Priority 9 is out of range"):
        work.builder().priority(9)
    with pytest.raises(ValueError, match="Delay -1 s is negative"):
        work.builder().delay(seconds=-1)
    with pytest.raises(ValueError, match="timezone-aware"):
        import datetime

        work.builder().at(datetime.datetime(2030, 1, 1))
    with pytest.raises(ValueError, match="max_retries is -1"):
        work.builder().max_retries(-1)
    with pytest.raises(ValueError, match="Business key '' must be a non-empty"):
        work.builder().business_key("")
    with pytest.raises(ValueError, match="Job timeout 0"):
        app.job(timeout=0)(lambda: None)


def test_errors_share_one_root() -> None:
    for name in ratchet.errors.__all__:
        assert issubclass(getattr(ratchet.errors, name), ratchet.RatchetError)
    assert issubclass(ratchet.InvalidCronError, ValueError)


def test_secrets_are_redacted_from_urls() -> None:
    from ratchet._redact import redact

    assert redact("postgresql://app:s3cret@db/x") == "postgresql://app:***@db/x"
    assert redact("failed: host=db password=s3cret port=5") == "failed: host=db password=*** port=5"
    assert redact("mongodb://db/x?authSource=admin&password=s3cret&tls=true") == (
        "mongodb://db/x?authSource=admin&password=***&tls=true"
    )
    assert redact("stomp://guest@broker:61613") == "stomp://guest@broker:61613"


def test_transactional_enqueue_needs_a_capable_store(app: Ratchet) -> None:
    @app.job
    def work() -> None: ...

    with pytest.raises(ratchet.RatchetError, match="cannot enqueue inside your transaction"):
        app.enqueue_in(object(), work)
    assert app.list_jobs() == []
