"""The kit catches broken stores, each at the test meant for its bug."""

from __future__ import annotations

from pathlib import Path

import pytest

SUITE = """
import pytest
import broken_stores
from ratchet_tck import Capabilities, JobStoreSuite


class TestBroken(JobStoreSuite):
    capabilities = Capabilities(separate_processes=True)

    @pytest.fixture
    def store_url(self, tmp_path):
        return f"sqlite:///{{tmp_path / 'broken.db'}}"

    @pytest.fixture
    def store_factory(self, store_url):
        path = store_url.removeprefix("sqlite:///")
        return lambda: broken_stores.{store}(path)
"""


@pytest.mark.parametrize(
    ("store", "caught_by"),
    [
        ("DoubleClaimStore", "test_concurrent_claimers_never_share_a_job"),
        ("IgnoresPriorityStore", "test_order_is_priority_then_scheduled_time_then_id"),
        ("IgnoresPriorityStore", "test_age_boost_lets_old_low_priority_work_overtake"),
        ("UnfencedCompletionStore", "test_stale_claim_sequence_changes_nothing"),
        ("UnfencedBatchCompletionStore", "test_each_row_of_a_batch_is_fenced_on_its_own"),
        ("UnfencedBatchCompletionStore", "test_a_batch_racing_a_takeover_never_records_both"),
        ("LocalClockStore", "test_due_time_is_judged_by_the_database_clock"),
        ("EarlyBusinessKeyReleaseStore", "test_key_is_held_while_pending_and_running"),
        ("StealableLockStore", "test_acquire_when_free_expired_or_ours"),
        ("StealableLockStore", "test_concurrent_acquirers_get_one_winner"),
    ],
)
def test_broken_store_fails_the_intended_contract(
    pytester: pytest.Pytester, store: str, caught_by: str
) -> None:
    pytester.syspathinsert(Path(__file__).parent)
    pytester.makepyfile(test_broken=SUITE.format(store=store))
    result = pytester.runpytest_inprocess("-k", caught_by, "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1, result.stdout.str()[-3000:]
    report = (pytester.path / "ratchet-tck-report.md").read_text()
    assert "Not compatible" in report and "Ratchet Store Compatible" not in report


def test_the_unbroken_store_passes_the_same_tests(pytester: pytest.Pytester) -> None:
    """Control: the same harness with the real store passes every one of those tests."""
    pytester.syspathinsert(Path(__file__).parent)
    pytester.makepyfile(
        test_broken=SUITE.format(store="SQLiteJobStore")
        .replace("broken_stores.SQLiteJobStore", "SQLiteJobStore")
        .replace("import broken_stores", "from ratchet.stores.sqlite.store import SQLiteJobStore")
    )
    selection = " or ".join(
        {
            "test_concurrent_claimers_never_share_a_job",
            "test_order_is_priority_then_scheduled_time_then_id",
            "test_stale_claim_sequence_changes_nothing",
            "test_each_row_of_a_batch_is_fenced_on_its_own",
            "test_a_batch_racing_a_takeover_never_records_both",
            "test_due_time_is_judged_by_the_database_clock",
            "test_key_is_held_while_pending_and_running",
            "test_acquire_when_free_expired_or_ours",
        }
    )
    result = pytester.runpytest_inprocess("-k", selection, "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("passed", 0) >= 8, result.stdout.str()[
        -3000:
    ]
