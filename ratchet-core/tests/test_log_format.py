"""Log output: JSON lines and text with structured fields, ``configure_logging``, and the
``ratchet`` command's ``--log-format``/``--log-level`` (and their variables)."""

from __future__ import annotations

import io
import json
import logging
import math
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import ratchet
from ratchet import JobPriority
from ratchet._log_format import (
    STRUCTURED_FIELDS,
    JsonLogFormatter,
    TextLogFormatter,
    configure_logging,
)
from ratchet._logs import get_logger
from ratchet.cli import build_parser, main
from ratchet.errors import ConfigurationError

SECRET_URL = "postgresql://u:s3cret@h/db"
MASKED_URL = "postgresql://u:***@h/db"
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
ALL_FIELDS = {
    "event": "job.succeeded",
    "job_id": "0190c3a0-0000-7000-8000-000000000001",
    "job_name": "send-email",
    "attempt": 2,
    "claim_seq": 7,
    "node_id": "node-a",
    "duration_seconds": 0.25,
    "priority": "HIGH",
    "error_type": "TimeoutError",
    "schedule_id": "nightly",
}


@pytest.fixture(autouse=True)
def restore_root_logger() -> Iterator[None]:
    """configure_logging changes the root logger; put it back for the other tests."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(level)


def capture(log_format: str, level: str | int = "DEBUG") -> io.StringIO:
    stream = io.StringIO()
    configure_logging(log_format, level, stream=stream)
    return stream


def lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_a_json_line_carries_the_base_fields_and_every_structured_field() -> None:
    stream = capture("json")
    get_logger("ratchet.test_log_format").info("Job %s done.", "j-1", extra=ALL_FIELDS)
    (line,) = lines(stream)
    record = json.loads(line)
    assert TIME.match(record.pop("time")), line
    assert record == {
        "level": "INFO",
        "logger": "ratchet.test_log_format",
        "message": "Job j-1 done.",
        "thread": "MainThread",
        **ALL_FIELDS,
    }
    assert set(ALL_FIELDS) == set(STRUCTURED_FIELDS)


def test_json_time_is_utc_with_milliseconds() -> None:
    formatter = JsonLogFormatter()
    record = logging.LogRecord("ratchet", logging.INFO, __file__, 1, "x", None, None)
    record.created = 1_780_000_000.123456  # 2026-05-28T20:26:40.123 UTC
    assert json.loads(formatter.format(record))["time"] == "2026-05-28T20:26:40.123Z"


def test_json_writes_only_the_structured_fields_a_record_carries() -> None:
    stream = capture("json")
    get_logger("ratchet.test_log_format").warning(
        "plain", extra={"job_id": "j-1", "password": "hunter2", "custom": 1}
    )
    record = json.loads(lines(stream)[0])
    assert set(record) == {"time", "level", "logger", "message", "thread", "job_id"}
    assert "hunter2" not in stream.getvalue()


def test_json_values_it_cannot_hold_become_text() -> None:
    stream = capture("json")
    job_id = uuid.UUID("0190c3a0-0000-7000-8000-000000000002")
    get_logger("ratchet.test_log_format").info(
        "x",
        extra={
            "job_id": job_id,
            "priority": JobPriority.HIGH,
            "duration_seconds": math.nan,
            "attempt": 3,
            "schedule_id": None,
            "event": object(),
        },
    )
    record = json.loads(lines(stream)[0])
    assert record["job_id"] == str(job_id)
    assert record["priority"] == "HIGH"
    assert record["duration_seconds"] == "nan"  # NaN is not JSON
    assert record["attempt"] == 3 and record["schedule_id"] is None
    assert record["event"].startswith("<object object at ")


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_a_secret_in_an_argument_is_masked(log_format: str) -> None:
    stream = capture(log_format)
    get_logger("ratchet.test_log_format").warning("Store %s is unreachable.", SECRET_URL)
    assert "s3cret" not in stream.getvalue()
    assert MASKED_URL in stream.getvalue()


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_a_record_of_a_logger_ratchet_did_not_make_is_masked_too(log_format: str) -> None:
    """A driver's or the application's logger has no SafeRecordFilter; the formatter
    applies it. Control: a plain logging.Formatter shows the secret."""
    stream = capture(log_format)
    plain = logging.getLogger("some_driver.test_log_format")
    plain.warning("connecting to %s", SECRET_URL)
    assert "s3cret" not in stream.getvalue() and MASKED_URL in stream.getvalue()

    record = logging.LogRecord("x", logging.INFO, __file__, 1, "to %s", (SECRET_URL,), None)
    assert "s3cret" in logging.Formatter().format(record)


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_a_secret_in_a_structured_field_or_a_traceback_is_masked(log_format: str) -> None:
    stream = capture(log_format)
    try:
        raise ConnectionError(f"cannot reach {SECRET_URL}")
    except ConnectionError:
        get_logger("ratchet.test_log_format").exception(
            "Store failed.", extra={"job_name": f"sync {SECRET_URL}"}
        )
    output = stream.getvalue()
    assert "s3cret" not in output
    assert output.count(MASKED_URL) == 2  # the field and the traceback
    if log_format == "json":
        record = json.loads(output)
        assert "ConnectionError: cannot reach postgresql://u:***@h/db" in record["exc_info"]
        assert record["exc_info"].startswith("Traceback (most recent call last):")


def test_a_newline_in_an_argument_cannot_start_a_second_json_line() -> None:
    stream = capture("json")
    forged = 'x\n{"level": "CRITICAL", "message": "forged"}\r\n'
    log = get_logger("ratchet.test_log_format")
    log.info("Job name %s.", forged, extra={"job_name": forged})
    log.info("Job name %r.", forged)
    records = [json.loads(line) for line in lines(stream)]
    assert len(records) == 2
    assert all(record["level"] == "INFO" for record in records)
    assert records[0]["message"] == 'Job name x\\n{"level": "CRITICAL", "message": "forged"}\\r\\n.'
    assert records[0]["job_name"] == 'x\\n{"level": "CRITICAL", "message": "forged"}\\r\\n'


def test_a_line_separator_or_bidi_override_in_a_value_stays_escaped() -> None:
    """splitlines() breaks at U+2028 too; such characters are escaped, not written raw."""
    stream = capture("json")
    get_logger("ratchet.test_log_format").info(
        "a\u2028b %s", "c\u202ed", extra={"job_id": "e\u2029"}
    )
    assert len(lines(stream)) == 1
    record = json.loads(stream.getvalue())
    assert record["message"] == "a\\u2028b c\\u202ed" and record["job_id"] == "e\\u2029"


def test_text_appends_the_structured_fields_quoting_values_with_spaces() -> None:
    stream = capture("text")
    get_logger("ratchet.test_log_format").info(
        "Job done.",
        extra={"job_id": "j-1", "job_name": "send email", "attempt": 2, "event": 'a"b', "x": 1},
    )
    (line,) = lines(stream)
    assert re.match(
        r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO    ratchet\.test_log_format: ", line
    )
    assert line.endswith('Job done. event="a\\"b" job_id=j-1 job_name="send email" attempt=2'), line


def test_text_keeps_a_record_without_fields_as_it_was() -> None:
    stream = capture("text")
    get_logger("ratchet.test_log_format").info("Plain %d.", 3)
    assert lines(stream)[0].endswith(" INFO    ratchet.test_log_format: Plain 3.")


def test_text_keeps_an_injected_newline_on_one_line() -> None:
    stream = capture("text")
    get_logger("ratchet.test_log_format").info(
        "Job %s.", "a\nFAKE LINE", extra={"job_name": "b\nFAKE"}
    )
    assert len(lines(stream)) == 1
    assert lines(stream)[0].endswith("Job a\\nFAKE LINE. job_name=b\\nFAKE")


def test_the_level_filters_records() -> None:
    stream = capture("json", "warning")
    log = get_logger("ratchet.test_log_format")
    log.info("hidden")
    log.warning("shown")
    assert [json.loads(line)["message"] for line in lines(stream)] == ["shown"]
    assert logging.getLogger().level == logging.WARNING


@pytest.mark.parametrize("level", ["debug", " INFO ", "Warning", 40, "50"])
def test_levels_by_name_or_number(level: str | int) -> None:
    configure_logging("text", level, stream=io.StringIO())
    names = {"debug": 10, " INFO ": 20, "Warning": 30, 40: 40, "50": 50}
    assert logging.getLogger().level == names[level]


@pytest.mark.parametrize("value", ["xml", "", "JSONL"])
def test_an_unknown_format_is_refused_naming_it_and_the_choices(value: str) -> None:
    root = logging.getLogger()
    before = list(root.handlers), root.level
    with pytest.raises(ConfigurationError) as error:
        configure_logging(value, "INFO")
    assert f"{value!r} is not a log format; choose one of 'text', 'json'" in str(error.value)
    assert (list(root.handlers), root.level) == before  # nothing changed


@pytest.mark.parametrize("value", ["loud", "", 15, True, "15", "9" * 5000])
def test_an_unknown_level_is_refused_naming_it_and_the_choices(value: str | int) -> None:
    root = logging.getLogger()
    before = list(root.handlers), root.level
    with pytest.raises(ConfigurationError, match="is not a log level; choose one of DEBUG, INFO"):
        configure_logging("json", value)
    assert (list(root.handlers), root.level) == before


def test_configure_logging_again_replaces_its_handler_only() -> None:
    root = logging.getLogger()
    theirs = logging.StreamHandler(io.StringIO())
    root.addHandler(theirs)
    first, second = io.StringIO(), io.StringIO()
    configure_logging("text", "INFO", stream=first)
    configure_logging("json", "INFO", stream=second)
    configure_logging("json", "INFO", stream=second)
    get_logger("ratchet.test_log_format").warning("once")
    ours = [
        h for h in root.handlers if isinstance(h.formatter, JsonLogFormatter | TextLogFormatter)
    ]
    assert len(ours) == 1 and theirs in root.handlers
    assert first.getvalue() == ""
    assert [json.loads(line)["message"] for line in lines(second)] == ["once"]
    root.removeHandler(theirs)


def test_the_default_handler_follows_sys_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", "INFO")
    get_logger("ratchet.test_log_format").info("to stderr")
    assert json.loads(capsys.readouterr().err)["message"] == "to stderr"


# The ratchet command


def test_log_options_go_before_the_command_or_after_worker() -> None:
    parse = build_parser().parse_args
    assert (parse(["nodes"]).log_format, parse(["nodes"]).log_level) == (None, None)
    before = parse(["--log-format", "JSON", "--log-level", "warning", "worker", "m:app"])
    assert (before.log_format, before.log_level) == ("json", 30)  # not reset by worker
    after = parse(["worker", "m:app", "--log-format", "json", "--log-level", "DEBUG"])
    assert (after.log_format, after.log_level) == ("json", 10)
    assert parse(["-v", "nodes"]).log_level == "DEBUG"
    assert parse(["worker", "m:app", "-v"]).log_level == "DEBUG"
    assert parse(["-v", "worker", "m:app", "--log-level", "ERROR"]).log_level == 40


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["worker", "m:app", "--log-format", "xml"], "'xml' is not a log format"),
        (["--log-level", "loud", "nodes"], "'loud' is not a log level"),
    ],
)
def test_the_command_refuses_unknown_log_options(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert expected in capsys.readouterr().err


@pytest.mark.parametrize(
    ("variable", "value"), [("RATCHET_LOG_FORMAT", "yaml"), ("RATCHET_LOG_LEVEL", "LOUD")]
)
def test_the_command_refuses_unknown_log_variables_naming_them(
    variable: str, value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(variable, value)
    assert main(["worker", "no_such_module_for_logs:app"]) == 2
    err = capsys.readouterr().err
    assert f"ratchet: error: {variable}={value!r} is not a log" in err
    assert "no_such_module_for_logs" not in err  # refused before the command ran


def test_json_logs_make_a_command_error_a_json_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Set by RATCHET_LOG_FORMAT; control: the same error in text is not JSON."""
    monkeypatch.setenv("RATCHET_LOG_FORMAT", "json")
    assert main(["worker", "no_such_module_for_logs:app"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    record = json.loads(line)
    assert record["level"] == "ERROR" and record["logger"] == "ratchet.cli"
    assert record["message"].startswith("ratchet: error: APP 'no_such_module_for_logs:app'")

    assert main(["worker", "no_such_module_for_logs:app", "--log-format", "text"]) == 2
    text = capsys.readouterr().err
    assert text.startswith("ratchet: error: APP ")
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


def test_the_command_leaves_logging_as_it_found_it(capsys: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger()
    before = list(root.handlers), root.level
    assert main(["--log-level", "DEBUG", "worker", "no_such_module_for_logs:app"]) == 2
    assert (list(root.handlers), root.level) == before


def test_worker_process_writes_only_json_lines(tmp_path: Path) -> None:
    """`python -m ratchet worker APP --log-format json`: every stderr line is a JSON
    object, the start line among them."""
    store_url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    (tmp_path / "json_log_app.py").write_text(
        textwrap.dedent(f"""
        from ratchet import Ratchet
        app = Ratchet({store_url!r}, poll_burst_seconds=0.02, poll_idle_max_seconds=0.2,
                      coordinator="none")

        @app.job(name="greet")
        def greet(name):
            return "hello " + name
        """)
    )
    source = str(Path(ratchet.__file__).parents[1])  # this checkout, not an installed copy
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RATCHET_")},
        "PYTHONPATH": os.pathsep.join([str(tmp_path), source]),
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "ratchet", "worker", "json_log_app:app", "--log-format", "json"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stderr is not None
        deadline = time.monotonic() + 30
        seen: list[str] = []
        while not any(" started on " in line for line in seen):
            assert time.monotonic() < deadline, f"no start line: {seen}"
            line = worker.stderr.readline()
            assert line, f"worker exited early: {seen}"
            seen.append(line)
        worker.send_signal(signal.SIGINT)
        stdout, rest = worker.communicate(timeout=30)
    finally:
        worker.kill()
        worker.wait()
    assert worker.returncode == 0, "".join(seen) + rest
    assert stdout == ""
    records = [json.loads(line) for line in ("".join(seen) + rest).splitlines()]
    started = [
        r for r in records if r["logger"] == "ratchet.worker" and " started on " in r["message"]
    ]
    assert len(started) == 1 and started[0]["level"] == "INFO"
    assert any(r["message"].startswith("ratchet worker ") for r in records)  # the CLI's banner
    assert any("stopped" in r["message"] for r in records)
    assert all(TIME.match(r["time"]) for r in records)


def test_every_record_of_a_workers_threads_names_its_node() -> None:
    """Worker threads (claim loop, job slots, outcome writer, callbacks, maintenance) log
    with ``node_id`` bound (``ratchet._logs.log_fields``); a record logged outside any
    worker carries none, so the field comes from the binding and not from the formatter."""
    stream = capture("json", "DEBUG")
    app = ratchet.Ratchet("memory://", node_id="node-logs", poll_idle_max_seconds=0.05)

    def failed(result: ratchet.JobResult) -> None:
        get_logger("ratchet.test_log_format").info("callback for %s", result.job_id)

    @app.job(name="fails-then-succeeds", max_retries=1, backoff_ms=10, on_failure=failed)
    def flaky(fail: bool) -> None:
        if fail:
            raise RuntimeError("boom")

    flaky.enqueue(True)
    app.run_until_idle(timeout=30)
    get_logger("ratchet.test_log_format").info("outside any worker")
    records = [json.loads(line) for line in lines(stream)]
    engine = [
        r
        for r in records
        if r["logger"].startswith("ratchet.") and r["message"] != "outside any worker"
    ]
    assert engine, records
    threads = {r["thread"] for r in engine}
    assert any(t.startswith("ratchet-") for t in threads), threads
    assert all(r.get("node_id") == "node-logs" for r in engine), [
        (r["thread"], r["message"]) for r in engine if r.get("node_id") != "node-logs"
    ]
    assert any(r["message"].startswith("callback for") for r in engine)
    (outside,) = [r for r in records if r["message"] == "outside any worker"]
    assert "node_id" not in outside
