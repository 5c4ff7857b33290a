"""What an operator tool builds on: ``Ratchet.audit``, ``Ratchet.run_recurring_now`` and
the ``ratchet_cli_commands`` hook through which an installed plugin adds a command."""

from __future__ import annotations

import argparse
import logging
from typing import Any

import pytest

from ratchet import JobStatus, Ratchet
from ratchet.cli import build_parser, main
from ratchet.errors import BusinessKeyConflictError, UnknownRecurringError
from ratchet.events import OperatorAction
from ratchet.plugins import hookimpl, register_process_plugin, unregister_process_plugin


def test_audit_emits_an_operator_action_and_logs_it(
    app: Ratchet, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[OperatorAction] = []
    app.on(OperatorAction, seen.append)
    with caplog.at_level(logging.INFO, logger="ratchet.audit"):
        returned = app.audit("retry", actor="alice", job_ids=["j1", "j2"], detail="from the DLQ")
    assert seen == [returned]
    assert (returned.actor, returned.action, returned.job_ids) == ("alice", "retry", ("j1", "j2"))
    assert returned.detail == "from the DLQ" and returned.node_id == app.node_id
    [record] = [r for r in caplog.records if r.name == "ratchet.audit"]
    assert record.levelno == logging.INFO
    assert "'alice'" in record.getMessage() and "j1, j2" in record.getMessage()


def test_audit_masks_secrets_in_the_log(app: Ratchet, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="ratchet.audit"):
        app.audit("purge", actor="bob", detail="store postgresql://u:hunter2@db/x")
    text = caplog.text
    assert "purge" in text and "hunter2" not in text


def test_run_recurring_now_enqueues_one_job_under_the_schedules_business_key(
    app: Ratchet,
) -> None:
    @app.job(name="report")
    def report(region: str) -> str:
        return region

    app.schedule_recurring(report, "0 3 * * *", id="nightly", args=["eu"], tags=["Ops"])
    job_id = app.run_recurring_now("nightly")
    job = app.get_job(job_id)
    assert job is not None
    assert (job.name, job.status, job.business_key) == ("report", JobStatus.PENDING, "nightly")
    assert job.recurring_id == "nightly" and job.tags == ("ops",)
    assert job.args == ("eu",)
    # Two runs of one schedule never overlap: the pending one holds the key.
    with pytest.raises(BusinessKeyConflictError):
        app.run_recurring_now("nightly")
    # The schedule's own instants are untouched: no fire time was recorded.
    assert app.store.last_recurring_fire("nightly") is None
    assert app.run_until_idle(timeout=10) is not None
    done = app.get_job(job_id)
    assert done is not None and done.status == JobStatus.SUCCEEDED


def test_run_recurring_now_names_the_saved_schedules_for_an_unknown_id(app: Ratchet) -> None:
    @app.job(name="report")
    def report() -> None: ...

    app.schedule_recurring(report, "0 3 * * *", id="nightly")
    with pytest.raises(UnknownRecurringError, match=r"'nighly'.*Saved: 'nightly'"):
        app.run_recurring_now("nighly")


class _CommandPlugin:
    @hookimpl
    def ratchet_cli_commands(self, subparsers: Any) -> None:
        hello = subparsers.add_parser("hello", help="say hello")
        hello.add_argument("--name", default="world")
        hello.set_defaults(handler=self.run)

    def run(self, args: argparse.Namespace) -> int:
        print(f"hello {args.name}")
        return 7


class _BrokenCommandPlugin:
    @hookimpl
    def ratchet_cli_commands(self, subparsers: Any) -> None:
        raise RuntimeError("plugin bug")


class _ClashingCommandPlugin:
    @hookimpl
    def ratchet_cli_commands(self, subparsers: Any) -> None:
        subparsers.add_parser("worker", help="takes a built-in name")


@pytest.fixture
def command_plugins() -> Any:
    register_process_plugin(_CommandPlugin(), "test-commands")
    register_process_plugin(_BrokenCommandPlugin(), "test-broken-commands")
    register_process_plugin(_ClashingCommandPlugin(), "test-clashing-commands")
    yield
    for name in ("test-commands", "test-broken-commands", "test-clashing-commands"):
        unregister_process_plugin(name)


@pytest.mark.usefixtures("command_plugins")
def test_an_installed_plugin_adds_a_command(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="ratchet.cli"):
        assert main(["hello", "--name", "ops"]) == 7
    assert capsys.readouterr().out == "hello ops\n"
    # The broken and the clashing plugin are named and skipped; the rest works.
    warned = " ".join(r.getMessage() for r in caplog.records if r.name == "ratchet.cli")
    assert "'test-broken-commands'" in warned and "'test-clashing-commands'" in warned
    assert "hello" in build_parser().format_help()


def test_a_disabled_plugin_adds_no_command(monkeypatch: pytest.MonkeyPatch) -> None:
    register_process_plugin(_CommandPlugin(), "test-commands")
    monkeypatch.setenv("RATCHET_DISABLED_PLUGINS", "test-commands")
    try:
        with pytest.raises(SystemExit):
            build_parser().parse_args(["hello"])
    finally:
        unregister_process_plugin("test-commands")


def test_without_the_hook_call_the_plugin_command_is_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Negative control: the command exists only because build_parser calls the hook."""
    import ratchet.cli

    register_process_plugin(_CommandPlugin(), "test-commands")
    monkeypatch.setattr(ratchet.cli, "_plugin_commands", lambda commands: None)
    try:
        with pytest.raises(SystemExit):
            build_parser().parse_args(["hello"])
    finally:
        unregister_process_plugin("test-commands")
