"""Payload encryption (ratchet.encryption): what is sealed, that the store never holds the
clear text, that a changed or misplaced value fails loudly and once, and key rotation.

The store-level checks run on every first-party store whose server is configured (the
raw payload is read back with ``SupportsPayloadRewrite.scan_payloads``, exactly as
stored); the rest run on the embedded SQLite store.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ratchet import JobStatus, Ratchet, RatchetOptions
from ratchet._jobs import JobFunction
from ratchet._rotation import rotate_keys
from ratchet.cli import main
from ratchet.encryption import ENVELOPE_KEY, Encryption, generate_key, sealed_token
from ratchet.errors import (
    ArgumentsNotSerializableError,
    ConfigurationError,
    PayloadDecryptionError,
)
from ratchet.spi import JobStore, StoredPayload, SupportsPayloadRewrite

KEY_1 = "k1:" + generate_key()
KEY_2 = "k2:" + generate_key()
SECRET_WORDS = ("alice@example.com", "hunter2", "card-4242", "Zürich")


def _store_kinds() -> list[str]:
    kinds = ["sqlite"]
    for kind, variable in (
        ("postgresql", "RATCHET_TEST_POSTGRESQL_URL"),
        ("mysql", "RATCHET_TEST_MYSQL_URL"),
        ("mongodb", "RATCHET_TEST_MONGODB_URL"),
    ):
        if os.environ.get(variable):
            kinds.append(kind)
    return kinds


def _store_url(kind: str, tmp_path: Path) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'encryption.db'}"
    if kind == "mongodb":
        pytest.importorskip("ratchet_store_mongodb")
        from ratchet_store_mongodb.testing import with_database as with_mongo_database

        return with_mongo_database(
            os.environ["RATCHET_TEST_MONGODB_URL"], "ratchet_test_encryption"
        )
    if kind == "mysql":
        pytest.importorskip("ratchet_store_mysql")
        from ratchet_store_mysql.testing import ensure_database, with_database

        url = with_database(os.environ["RATCHET_TEST_MYSQL_URL"], "ratchet_test_encryption")
        ensure_database(url)
        return url
    pytest.importorskip("ratchet_store_postgresql")
    return os.environ["RATCHET_TEST_POSTGRESQL_URL"]


@pytest.fixture(params=_store_kinds())
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    url = _store_url(request.param, tmp_path)
    store = Ratchet(url, coordinator="none").store
    store.reset_for_tests()  # type: ignore[attr-defined]
    yield url
    store.reset_for_tests()  # type: ignore[attr-defined]
    store.close()


def make_app(url: str, keys: str | None = KEY_1, **options: Any) -> Ratchet:
    app = Ratchet(url, coordinator="none", encryption=keys, **options)
    register(app)
    return app


def register(app: Ratchet) -> None:
    """The same jobs under the same names in every application of a test (``card`` is
    registered ``encrypted=True`` where the application has a key: without one that
    refuses at registration, see test_configuration_errors_...)."""

    @app.job(
        name="card",
        encrypted=app.payloads.encryption is not None,
        max_retries=3,
        backoff_ms=1,
    )
    def card(email: str, *, number: str) -> dict[str, str]:
        return {"charged": number, "receipt_to": email}

    @app.job(name="plain", max_retries=3, backoff_ms=1)
    def plain(value: str) -> str:
        return value.upper()


def card_function(app: Ratchet) -> JobFunction[..., Any]:
    return JobFunction(app, app.definition("card"))


def raw(store: JobStore, job_id: str, *, archived: bool = False) -> StoredPayload:
    assert isinstance(store, SupportsPayloadRewrite)
    for stored in store.scan_payloads(archived=archived, after_id=None, limit=1000):
        if stored.job_id == job_id:
            return stored
    raise AssertionError(f"job {job_id} is not in the {'archive' if archived else 'live table'}")


def text_of(stored: StoredPayload) -> str:
    return " ".join(
        [stored.args_json, stored.kwargs_json, json.dumps(stored.params), stored.result_json or ""]
    )


def enqueue_card(app: Ratchet) -> str:
    return (
        app.builder("card", "alice@example.com", number="card-4242")
        .param("password", "hunter2")
        .param("city", "Zürich")
        .submit()
    )


# -- on every store ----------------------------------------------------------------------


def test_the_store_never_holds_the_clear_text_and_the_application_reads_it(
    store_url: str,
) -> None:
    app = make_app(store_url)
    job_id = enqueue_card(app)
    stored = raw(app.store, job_id)
    for word in SECRET_WORDS:
        assert word not in text_of(stored), f"{word!r} is stored in clear text"
    assert sealed_token(json.loads(stored.args_json)[0]) is not None
    assert sealed_token(stored.params) is not None
    job = app.get_job(job_id)
    assert job is not None
    assert job.args == ("alice@example.com",)
    assert job.kwargs == {"number": "card-4242"}
    assert job.params == {"password": "hunter2", "city": "Zürich"}

    app.run_until_idle(timeout=60)
    stored = raw(app.store, job_id)
    assert stored.status is JobStatus.SUCCEEDED
    assert "card-4242" not in (stored.result_json or ""), "the result is stored in clear text"
    assert app.get_job(job_id).result == {  # type: ignore[union-attr]
        "charged": "card-4242",
        "receipt_to": "alice@example.com",
    }
    assert card_function(app).result(job_id) == app.get_job(job_id).result  # type: ignore[union-attr]
    app.close()


def test_a_changed_value_fails_once_to_the_dead_letter_queue(store_url: str) -> None:
    app = make_app(store_url)
    job_id = enqueue_card(app)
    stored = raw(app.store, job_id)
    token = sealed_token(json.loads(stored.args_json)[0])
    assert token is not None
    flipped = token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]
    assert isinstance(app.store, SupportsPayloadRewrite)
    assert app.store.rewrite_payload(
        stored,
        args_json=json.dumps([{ENVELOPE_KEY: flipped}]),
        kwargs_json=stored.kwargs_json,
        params=stored.params,
        result_json=None,
    )
    app.run_until_idle(timeout=60)
    job = app.get_job(job_id)
    assert job is not None
    assert job.status is JobStatus.FAILED
    assert job.attempts == 1, "a value that cannot be opened was retried"
    assert "PayloadDecryptionError" in (job.last_error or "")
    assert "changed after it was sealed" in (job.last_error or "")
    app.close()


def test_rotation_reseals_live_archived_and_scheduled_payloads(store_url: str) -> None:
    old = make_app(store_url, KEY_1)
    archived = enqueue_card(old)
    old.run_until_idle(timeout=60)
    assert old.store.archive_finished_jobs(older_than_seconds=-3600, batch_size=1000) == 1
    succeeded = enqueue_card(old)
    old.run_until_idle(timeout=60)
    pending = old.builder("card", "dave@example.com", number="card-5555").delay(3600).submit()
    plain = old.enqueue("plain", "not secret")
    old.schedule_recurring(
        "card",
        "0 3 * * *",
        id="nightly-card",
        args=["bob@example.com"],
        kwargs={"number": "card-1111"},
    )
    old.close()

    rotated = make_app(store_url, f"{KEY_2},{KEY_1}")
    encryption = rotated.payloads.encryption
    assert encryption is not None
    report = rotate_keys(rotated.store, encryption, batch_size=2)  # several batches
    assert report.finished
    assert report.resealed == 3
    assert report.current == 1  # the plain job: nothing sealed, nothing to do
    assert report.schedules_resealed == 1
    again = rotate_keys(rotated.store, encryption, batch_size=2)
    assert (again.resealed, again.current, again.schedules_resealed) == (0, 4, 0)

    rows = [
        raw(rotated.store, archived, archived=True),
        raw(rotated.store, succeeded),
        raw(rotated.store, pending),
    ]
    for stored in rows:
        assert ":k1:" not in text_of(stored), "a value is still sealed with the old key"
        assert ":k2:" in stored.args_json
        assert not stored.params or ":k2:" in json.dumps(stored.params)
    assert ":k2:" in (rows[0].result_json or "") and ":k2:" in (rows[1].result_json or "")
    assert "not secret" in raw(rotated.store, plain).args_json
    [schedule] = rotated.store.list_recurring()
    assert ":k2:" in schedule.args_json and ":k2:" in schedule.kwargs_json
    rotated.close()

    only_new = make_app(store_url, KEY_2)  # the old key is gone: everything still opens
    assert only_new.get_job(pending).args == ("dave@example.com",)  # type: ignore[union-attr]
    assert only_new.get_job(succeeded).result["charged"] == "card-4242"  # type: ignore[union-attr]
    [definition] = only_new.store.list_recurring()
    assert only_new.payloads.open_template(definition)[0] == '["bob@example.com"]'
    only_new.close()


# -- on the embedded store ---------------------------------------------------------------


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ratchet.db'}"


def sqlite_row(url: str, job_id: str) -> tuple[str, str, str, str | None]:
    path = url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as connection:
        row = connection.execute(
            "SELECT args_json, kwargs_json, params_json, result_json FROM ratchet_job WHERE id = ?",
            (job_id,),
        ).fetchone()
    return row  # type: ignore[no-any-return]


def set_sqlite_column(url: str, job_id: str, column: str, value: str) -> None:
    path = url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as connection:
        connection.execute(f"UPDATE ratchet_job SET {column} = ? WHERE id = ?", (value, job_id))


def test_a_value_copied_to_another_column_or_job_does_not_open(url: str) -> None:
    app = make_app(url)
    first, second = enqueue_card(app), enqueue_card(app)
    args_first, kwargs_first, _, _ = sqlite_row(url, first)
    set_sqlite_column(url, second, "args_json", args_first)  # another job's arguments
    moved = json.dumps([json.loads(kwargs_first)])  # this job's kwargs in its args column
    set_sqlite_column(url, first, "args_json", moved)
    app.run_until_idle(timeout=30)
    for job_id in (first, second):
        job = app.get_job(job_id)
        assert job is not None
        assert job.status is JobStatus.FAILED and job.attempts == 1
        assert "sealed for another job or column" in (job.last_error or "")
    app.close()


def test_negative_control_the_binding_is_what_refuses_a_copied_value(url: str) -> None:
    """Without the job id and column in the associated data the copy above would open."""
    encryption = Encryption(KEY_1)
    token = encryption.seal('["x"]', binding="job/a/args")
    assert encryption.open(token, binding="job/a/args") == '["x"]'
    with pytest.raises(PayloadDecryptionError):
        encryption.open(token, binding="job/b/args")
    with pytest.raises(PayloadDecryptionError):
        encryption.open(token, binding="job/a/kwargs")


def test_a_worker_without_the_key_refuses_clearly_and_a_retry_with_it_succeeds(
    url: str,
) -> None:
    sealer = make_app(url, KEY_1)
    job_id = enqueue_card(sealer)
    sealer.close()

    keyless = make_app(url, None)
    listed = keyless.get_job(job_id)
    assert listed is not None and sealed_token(listed.args[0]) is not None, "shown sealed"
    keyless.run_until_idle(timeout=30)
    job = keyless.get_job(job_id)
    assert job is not None and job.status is JobStatus.FAILED and job.attempts == 1
    assert "no encryption key" in (job.last_error or "")
    assert "RATCHET_ENCRYPTION_KEYS" in (job.last_error or "")
    keyless.close()

    other_key = make_app(url, KEY_2)
    assert other_key.retry_job(job_id)
    other_key.run_until_idle(timeout=30)
    job = other_key.get_job(job_id)
    assert job is not None and job.status is JobStatus.FAILED
    assert "sealed with key 'k1'" in (job.last_error or "")
    other_key.close()

    keyed = make_app(url, KEY_1)
    assert keyed.retry_job(job_id)
    keyed.run_until_idle(timeout=30)
    assert keyed.get_job(job_id).status is JobStatus.SUCCEEDED  # type: ignore[union-attr]
    keyed.close()


def test_a_plain_job_is_stored_in_clear_unless_every_job_is_sealed(url: str) -> None:
    app = make_app(url)
    clear = app.enqueue("plain", "visible")
    assert "visible" in sqlite_row(url, clear)[0]
    app.close()
    sealing_all = make_app(url, KEY_1, encrypt_all=True)
    sealed = sealing_all.enqueue("plain", "hidden")
    assert "hidden" not in " ".join(v or "" for v in sqlite_row(url, sealed))
    assert sealing_all.builder("plain", "x").encrypted(False).build().encrypted is False
    sealing_all.run_until_idle(timeout=30)
    assert sealing_all.get_job(sealed).result == "HIDDEN"  # type: ignore[union-attr]
    assert "HIDDEN" not in (sqlite_row(url, sealed)[3] or "")
    sealing_all.close()


def test_builder_encrypted_seals_one_job(url: str) -> None:
    app = make_app(url)
    job_id = app.builder("plain", "one secret").encrypted().submit()
    assert "one secret" not in sqlite_row(url, job_id)[0]
    assert app.get_job(job_id).args == ("one secret",)  # type: ignore[union-attr]
    app.close()


def test_callbacks_get_the_opened_result_and_params(url: str) -> None:
    seen: list[Any] = []
    app = Ratchet(url, coordinator="none", encryption=KEY_1)

    def remember(result: Any) -> None:
        seen.append((result.value, result.params))

    @app.job(encrypted=True, on_success=remember)
    def secret() -> str:
        return "the answer"

    secret.builder().param("token", "t0ken").submit()
    app.run_until_idle(timeout=30)
    deadline = datetime.now(UTC).timestamp() + 10
    while not seen and datetime.now(UTC).timestamp() < deadline:
        import time

        time.sleep(0.01)
    [(value, params)] = seen
    assert value == "the answer" and params["token"] == "t0ken"
    app.close()


def test_a_recurring_template_is_sealed_and_each_fire_is_sealed_for_its_own_job(
    url: str,
) -> None:
    app = make_app(url)
    app.schedule_recurring(
        "card",
        "* * * * *",
        id="every-minute",
        args=["carol@example.com"],
        kwargs={"number": "card-9999"},
    )  # a job registered encrypted=True: its template is sealed without asking
    [definition] = app.store.list_recurring()
    assert "carol" not in definition.args_json and "card-9999" not in definition.kwargs_json
    worker = app.worker()
    now = app.store.database_time()
    worker.recurring._fire(definition, now.replace(second=0, microsecond=0), now)
    [job] = [j for j in app.list_jobs() if j.recurring_id == "every-minute"]
    assert job.args == ("carol@example.com",) and job.kwargs == {"number": "card-9999"}
    args_json = sqlite_row(url, job.id)[0]
    assert "carol" not in args_json
    assert args_json != definition.args_json, "the fire reused the template's seal"
    app.run_until_idle(timeout=30)
    assert app.get_job(job.id).status is JobStatus.SUCCEEDED  # type: ignore[union-attr]
    app.close()


def test_configuration_errors_name_the_problem_and_never_the_key(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = generate_key()
    short = "k1:" + generate_key()[:20] + "=="
    cases = {
        "no ':'": secret,
        "not standard base64": "k1:" + "*" * 44,
        "has 15 bytes": short,
        "twice": f"k1:{secret},k1:{secret}",
        "id 'bad id!' is not usable": f"bad id!:{secret}",
    }
    for expected, keys in cases.items():
        with pytest.raises(ConfigurationError) as raised:
            Ratchet(url, coordinator="none", encryption=keys)
        message = str(raised.value)
        assert expected.split("'")[0].strip() in message or expected in message, message
        assert secret not in message, "an error message shows the key"
    monkeypatch.setenv("RATCHET_ENCRYPT_ALL", "true")
    with pytest.raises(ConfigurationError, match="RATCHET_ENCRYPT_ALL is on"):
        Ratchet(url, coordinator="none")
    monkeypatch.delenv("RATCHET_ENCRYPT_ALL")
    keyless = Ratchet(url, coordinator="none")
    with pytest.raises(ConfigurationError, match="no encryption key"):

        @keyless.job(encrypted=True)
        def sealed() -> None: ...

    @keyless.job
    def unsealed() -> None: ...

    with pytest.raises(ConfigurationError, match="no encryption key"):
        keyless.builder(unsealed).encrypted().submit()
    assert keyless.list_jobs() == [], "a refused submission stored a job"
    keyless.close()


def test_keys_stay_out_of_reprs_and_logs(
    url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    secret = KEY_1.partition(":")[2]
    monkeypatch.setenv("RATCHET_ENCRYPTION_KEYS", KEY_1)
    caplog.set_level(logging.DEBUG)
    options = RatchetOptions.from_env()
    assert options.encryption_keys == KEY_1
    assert secret not in repr(options)
    app = make_app(url, None)  # the keys come from the environment
    assert app.payloads.encryption is not None
    assert secret not in repr(app.payloads.encryption)
    enqueue_card(app)
    app.run_until_idle(timeout=30)
    app.close()
    assert secret not in caplog.text


def test_a_value_that_looks_sealed_is_refused_at_enqueue(url: str) -> None:
    app = make_app(url)
    with pytest.raises(ArgumentsNotSerializableError, match="reserves"):
        app.enqueue("plain", {ENVELOPE_KEY: "v1:A256GCM:k1:abc"})
    with pytest.raises(ArgumentsNotSerializableError, match="reserves"):
        app.builder("plain", "x").param(ENVELOPE_KEY, "y").submit()
    app.close()


def test_result_of_a_job_sealed_with_an_unknown_key_raises(url: str) -> None:
    app = make_app(url)
    job_id = enqueue_card(app)
    app.run_until_idle(timeout=30)
    app.close()
    other = make_app(url, KEY_2)
    with pytest.raises(PayloadDecryptionError, match="sealed with a key"):
        card_function(other).result(job_id, timeout=5)
    other.close()


def test_cli_generates_keys_shows_opened_jobs_and_rotates(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keys", "generate", "--id", "k2026"]) == 0
    line = capsys.readouterr().out.strip()
    key_id, _, secret = line.partition(":")
    assert key_id == "k2026" and len(__import__("base64").b64decode(secret)) == 32

    app = make_app(url)
    job_id = enqueue_card(app)
    app.close()
    assert main(["jobs", "show", job_id, "--store", url]) == 0
    assert "Zürich" not in capsys.readouterr().out, "shown without the key"
    monkeypatch.setenv("RATCHET_ENCRYPTION_KEYS", KEY_1)
    assert main(["jobs", "show", job_id, "--store", url]) == 0
    assert "Zürich" in capsys.readouterr().out

    monkeypatch.setenv("RATCHET_ENCRYPTION_KEYS", f"{KEY_2},{KEY_1}")
    assert main(["keys", "rotate", "--store", url, "--batch-size", "1"]) == 0
    output = capsys.readouterr().out
    assert "Re-sealed 1 job(s)" in output and "may now be removed" in output
    assert ":k2:" in sqlite_row(url, job_id)[0]


def test_rotation_skips_a_row_that_moved_on_and_a_second_run_takes_it(url: str) -> None:
    """The fence of rewrite_payload: a row claimed between the scan and the rewrite keeps
    its values (and its claim), and is counted for the next run."""
    app = make_app(url, KEY_1)
    job_id = enqueue_card(app)
    app.close()
    rotated = make_app(url, f"{KEY_2},{KEY_1}")
    store = rotated.store
    assert isinstance(store, SupportsPayloadRewrite)
    scan = store.scan_payloads

    def scan_then_claim(**kwargs: Any) -> list[StoredPayload]:
        rows = scan(**kwargs)
        if rows and not kwargs["archived"]:
            store.claim_due_jobs(node_id="n", limit=10, priority_boost_seconds=0)
        return rows

    store.scan_payloads = scan_then_claim  # type: ignore[method-assign]
    encryption = rotated.payloads.encryption
    assert encryption is not None
    report = rotate_keys(store, encryption)
    assert report.moved_on == 1 and not report.finished
    assert ":k1:" in sqlite_row(url, job_id)[0], "a claimed row was rewritten"
    store.scan_payloads = scan  # type: ignore[method-assign]
    again = rotate_keys(store, encryption)
    assert again.resealed == 1 and again.finished
    rotated.close()


def test_a_sealed_job_round_trips_through_dataclasses_unchanged() -> None:
    """Sealing an already sealed job (a retry of the enqueue path) does not seal twice."""
    from ratchet._payloads import Payloads
    from ratchet.spi import NewJob

    payloads = Payloads(Encryption(KEY_1))
    job = NewJob(
        id="j", name="n", target="m:f", args_json='["a"]', kwargs_json="{}", encrypted=True
    )
    [sealed] = payloads.seal_jobs([job])
    [twice] = payloads.seal_jobs([sealed])
    assert twice == sealed
    assert dataclasses.replace(sealed, encrypted=False) != job


def test_the_testing_kit_finds_and_runs_sealed_jobs(url: str) -> None:
    app = make_app(url)
    with app.testing() as t:
        job_id = enqueue_card(app)
        stored = t.assert_enqueued("card", "alice@example.com", number="card-4242")
        assert stored.id == job_id
        assert sealed_token(json.loads(raw(t.store, job_id).args_json)[0]) is not None
        t.run()
        assert app.get_job(job_id).result["charged"] == "card-4242"  # type: ignore[union-attr]
    app.close()
