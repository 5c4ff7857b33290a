"""Collecting suite outcomes and writing ``ratchet-tck-report.md``."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version

from ratchet_tck._contract import ContractInfo, Level

__all__ = ["ContractRow", "SuiteReport", "is_compatible", "render"]

# Row results, in order of severity for aggregation.
PASS, NA, SKIPPED, NOT_RUN, MISSING, XFAIL, DEVIATION, FAIL = (
    "PASS",
    "N/A",
    "SKIPPED",
    "NOT RUN",
    "MISSING",
    "XFAIL",
    "DEVIATION",
    "FAIL",
)
_BLOCKING = {FAIL, DEVIATION, XFAIL, MISSING}


@dataclass
class ContractRow:
    """One contract test of one suite class, over all its parameters."""

    test: str
    info: ContractInfo
    outcomes: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    overridden: bool = False
    declared_reason: str | None = None

    @property
    def result(self) -> str:
        if self.overridden and self.declared_reason is None:
            return DEVIATION
        if "failed" in self.outcomes:
            return FAIL
        if self.declared_reason is not None or "xfailed" in self.outcomes:
            return XFAIL
        if not self.outcomes:
            return MISSING if self.info.required else NOT_RUN
        if all(o == "na" for o in self.outcomes):
            return NA
        if all(o == "passed" for o in self.outcomes):
            return PASS
        if any(o == "skipped" for o in self.outcomes):
            return MISSING if self.info.required else SKIPPED
        return PASS

    @property
    def blocking(self) -> bool:
        return self.info.required and self.result in _BLOCKING


@dataclass
class SuiteReport:
    """Every contract row of one implementer's suite class."""

    name: str
    kind: str
    level: Level
    rows: dict[str, ContractRow] = field(default_factory=dict)
    describe: str = ""

    @property
    def compatible(self) -> bool:
        return bool(self.rows) and not any(row.blocking for row in self.rows.values())

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for row in self.rows.values():
            counts[row.result] = counts.get(row.result, 0) + 1
        return counts


def _version(distribution: str) -> str:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return "not installed"


def render(suites: list[SuiteReport]) -> str:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    lines = [
        "# Ratchet conformance report",
        "",
        f"- Date: {now}",
        f"- ratchet-core {_version('ratchet-core')}, ratchet-tck {_version('ratchet-tck')}, "
        f"Python {platform.python_version()} on {platform.system()} {platform.machine()}",
        "",
        "Results: PASS; FAIL; N/A (capability not declared); MISSING (required, not run or "
        "skipped); DEVIATION (a required test overridden without `xfail(reason=…)`); XFAIL "
        "(a declared deviation); NOT RUN (optional, not run).",
    ]
    for suite in suites:
        lines += ["", f"## {suite.kind}: {suite.name}", ""]
        if suite.describe:
            lines.append(f"- Implementation: {suite.describe}")
        lines.append(f"- Level claimed: {suite.level.name}")
        counts = ", ".join(f"{n} {r}" for r, n in sorted(suite.counts().items()))
        lines.append(f"- Contract tests: {len(suite.rows)} ({counts})")
        lines.append("")
        if suite.compatible:
            title = (
                "Ratchet Store Compatible"
                if suite.kind == "Store"
                else f"Ratchet {suite.kind} Compatible"
            )
            lines.append(f"**{title}** at level {suite.level.name}.")
        else:
            blocking = sum(1 for row in suite.rows.values() if row.blocking)
            lines.append(
                f"**Not compatible**: {blocking} required contract test(s) failed, deviate or "
                "are missing."
            )
        lines += [
            "",
            "| Level | Contract | Test | Required | Result | Detail |",
            "|---|---|---|---|---|---|",
        ]
        ordered = sorted(suite.rows.values(), key=lambda r: (r.info.level, r.info.contract, r.test))
        for row in ordered:
            detail = "; ".join(row.details)
            if row.declared_reason:
                detail = f"declared: {row.declared_reason}" + (f"; {detail}" if detail else "")
            if row.result == DEVIATION:
                detail = "required test overridden without xfail(reason=…)" + (
                    f"; {detail}" if detail else ""
                )
            detail = detail.replace("|", "\\|").replace("\n", " ")[:300]
            lines.append(
                f"| {row.info.level.name} | {row.info.contract} | `{row.test}` | "
                f"{'yes' if row.info.required else 'no'} | {row.result} | {detail} |"
            )
    return "\n".join(lines) + "\n"


def is_compatible(report_text: str) -> bool:
    """Whether a rendered report declares every suite in it compatible."""
    return "Compatible** at level" in report_text and "**Not compatible**" not in report_text
