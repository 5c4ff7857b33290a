"""The pytest plugin (entry point ``pytest11``): contract bookkeeping and the report.

Inert unless tests of a ratchet-tck suite are collected. Options:

* ``--ratchet-tck-report PATH``: where to write the Markdown report
  (default ``ratchet-tck-report.md``).
* ``--ratchet-tck-level LEVEL``: the level claimed (CORE, BEHAVIORAL, ADVANCED; default
  ADVANCED). Contract tests above it are deselected, not reported.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from ratchet_tck._contract import MARKER, ContractInfo, Level, contract_info
from ratchet_tck._report import ContractRow, SuiteReport, render

TRACKER_NAME = "ratchet-tck-tracker"
NA_PREFIX = "ratchet-tck N/A:"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ratchet-tck", "Ratchet conformance kit")
    group.addoption(
        "--ratchet-tck-report",
        default="ratchet-tck-report.md",
        help="where to write the conformance report",
    )
    group.addoption(
        "--ratchet-tck-level",
        default="ADVANCED",
        help="conformance level claimed: CORE, BEHAVIORAL or ADVANCED",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(name, level, required=True, capability=None): a ratchet-tck contract"
    )
    config.pluginmanager.register(_Tracker(config), TRACKER_NAME)


def compatible(config: pytest.Config) -> bool | None:
    """After a session: whether every suite was compatible (``None`` when none ran)."""
    tracker = config.pluginmanager.get_plugin(TRACKER_NAME)
    return None if tracker is None else tracker.compatible


def _is_tck_class(klass: type) -> bool:
    return klass.__module__.startswith("ratchet_tck.")


def _tck_definition(cls: type, name: str) -> tuple[Any, bool] | None:
    """The kit's own function for ``name`` and whether a non-kit class overrides it."""
    overridden = False
    for klass in cls.__mro__:
        if name in vars(klass):
            if _is_tck_class(klass):
                return vars(klass)[name], overridden
            overridden = True
    return None


def _contract_of(function: Any) -> ContractInfo | None:
    for mark in getattr(function, "pytestmark", []):
        if mark.name == MARKER:
            return contract_info(mark)
    return None


def _suite_kind(cls: type) -> str:
    names = {klass.__name__ for klass in cls.__mro__}
    if "JobStoreSuite" in names:
        return "Store"
    if "ClusterCoordinatorSuite" in names:
        return "Coordinator"
    if "NodeIdentityProviderSuite" in names:
        return "NodeIdentityProvider"
    return "RetryPolicy"


def _expected_rows(cls: type) -> dict[str, tuple[ContractInfo, bool]]:
    """Every contract test the kit defines for ``cls``: name → (info, overridden)."""
    rows: dict[str, tuple[ContractInfo, bool]] = {}
    for name in dir(cls):
        if not name.startswith("test_"):
            continue
        found = _tck_definition(cls, name)
        if found is None:
            continue
        function, overridden = found
        info = _contract_of(function)
        if info is not None and inspect.isfunction(function):
            rows[name] = (info, overridden)
    return rows


class _Tracker:
    """Per-session bookkeeping: which contract rows exist, and how each test ended."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.suites: dict[str, SuiteReport] = {}
        self.rows_by_item: dict[str, tuple[str, str]] = {}
        self.compatible: bool | None = None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self._classify(items)

    def _classify(self, items: list[pytest.Item]) -> None:
        config = self.config
        level = Level.parse(config.getoption("--ratchet-tck-level"))
        suites = self.suites
        rows_by_item = self.rows_by_item
        kept: list[pytest.Item] = []
        deselected: list[pytest.Item] = []
        for item in items:
            cls = getattr(item, "cls", None)
            if cls is None or not any(_is_tck_class(k) for k in cls.__mro__[1:]):
                kept.append(item)
                continue
            key = f"{item.nodeid.split('::')[0]}::{cls.__qualname__}"
            if key not in suites:
                report = SuiteReport(
                    name=getattr(cls, "tck_name", None) or cls.__qualname__,
                    kind=_suite_kind(cls),
                    level=level,
                )
                for name, (info, overridden) in _expected_rows(cls).items():
                    if info.level <= level:
                        report.rows[name] = ContractRow(test=name, info=info, overridden=overridden)
                suites[key] = report
            name = getattr(item, "originalname", item.name)
            row = suites[key].rows.get(name)
            found = _tck_definition(cls, name)
            if (
                found is not None
                and (found_info := _contract_of(found[0])) is not None
                and found_info.level > level
            ):
                deselected.append(item)
                continue
            if row is not None:
                rows_by_item[item.nodeid] = (key, name)
                if row.overridden:
                    xfail = item.get_closest_marker("xfail")
                    if xfail is not None and xfail.kwargs.get("reason"):
                        row.declared_reason = str(xfail.kwargs["reason"])
            kept.append(item)
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = kept

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        located = self.rows_by_item.get(report.nodeid)
        if located is None:
            return
        row = self.suites[located[0]].rows[located[1]]
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if hasattr(report, "wasxfail"):
                row.outcomes.append("xfailed")
            elif report.skipped:
                reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
                row.outcomes.append("na" if NA_PREFIX in reason else "skipped")
                if NA_PREFIX not in reason:
                    row.details.append(reason.removeprefix("Skipped: "))
            elif report.failed:
                row.outcomes.append("failed")
                message = report.longreprtext.strip().splitlines()
                row.details.append(
                    next((m for m in reversed(message) if m.startswith("E ")), "failed")[:200]
                )
            else:
                row.outcomes.append("passed")
        elif report.when == "teardown" and report.failed:
            row.outcomes.append("failed")
            row.details.append("teardown failed")

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.suites:
            return
        path = Path(self.config.getoption("--ratchet-tck-report"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(list(self.suites.values())), encoding="utf-8")
        self.compatible = all(s.compatible for s in self.suites.values())

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        suites = self.suites
        if not suites:
            return
        terminalreporter.section("ratchet-tck")
        for suite in suites.values():
            verdict = "compatible" if suite.compatible else "NOT compatible"
            terminalreporter.write_line(
                f"{suite.kind} {suite.name}: {verdict} at {suite.level.name}"
            )
        terminalreporter.write_line(f"report: {config.getoption('--ratchet-tck-report')}")
