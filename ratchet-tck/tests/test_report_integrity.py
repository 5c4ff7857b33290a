"""The report: levels, N/A, MISSING, and deviations from overridden required tests."""

from __future__ import annotations

import pytest

BASE = """
import uuid
import pytest
from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet_tck import Capabilities, JobStoreSuite


class TestMem(JobStoreSuite):
    tck_name = "memory under test"

    @pytest.fixture
    def store_factory(self):
        url = f"memory://{{uuid.uuid4().hex}}"
        return lambda: SQLiteJobStore.from_memory_url(url)
{extra}
"""

FAST = ["-p", "no:cacheprovider", "-k", "unknown_id or register_heartbeat"]


def report(pytester: pytest.Pytester) -> str:
    return (pytester.path / "ratchet-tck-report.md").read_text()


def test_overriding_a_required_test_is_a_deviation(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_suite=BASE.format(
            extra="""
    def test_unknown_id_reads_as_none(self, store):
        pass  # "fixed" by overriding
"""
        )
    )
    result = pytester.runpytest_inprocess(*FAST)
    assert result.parseoutcomes()["passed"] == 2
    text = report(pytester)
    assert "| `test_unknown_id_reads_as_none` | yes | DEVIATION |" in text
    assert "Not compatible" in text and "Ratchet Store Compatible" not in text


def test_declared_deviation_is_reported_with_its_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_suite=BASE.format(
            extra="""
    @pytest.mark.xfail(reason="our backend cannot read unknown ids yet", strict=True)
    def test_unknown_id_reads_as_none(self, store):
        assert False
"""
        )
    )
    pytester.runpytest_inprocess(*FAST)
    text = report(pytester)
    assert "XFAIL | declared: our backend cannot read unknown ids yet" in text
    assert "Not compatible" in text


def test_required_tests_not_run_are_missing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=BASE.format(extra=""))
    pytester.runpytest_inprocess("-p", "no:cacheprovider", "-k", "unknown_id")
    text = report(pytester)
    assert "| `test_register_heartbeat_and_list` | yes | MISSING |" in text
    assert "Not compatible" in text


def test_levels_and_capabilities(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=BASE.format(extra=""))
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--ratchet-tck-level", "core", "--ratchet-tck-report", "out/r.md"
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0
    text = (pytester.path / "out" / "r.md").read_text()
    assert "**Ratchet Store Compatible** at level CORE." in text
    assert "| ADVANCED |" not in text and "| BEHAVIORAL |" not in text
    assert "| `test_claimers_in_separate_processes_never_share_a_job` | no | N/A |" in text
    assert "## Store: memory under test" in text


def test_plain_test_modules_are_untouched(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_ok():\n    assert True\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "ratchet-tck-report.md").exists()
