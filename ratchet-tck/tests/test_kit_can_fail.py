"""The kit catches broken stores, each at the test meant for its bug."""

from __future__ import annotations

from pathlib import Path

import pytest

SUITE = """
import pytest
import broken_stores
import reference_stores
from ratchet_tck import Capabilities, JobStoreSuite


class TestBroken(JobStoreSuite):
    capabilities = Capabilities(separate_processes=True)

    @pytest.fixture
    def store_url(self, tmp_path):
        return f"sqlite:///{{tmp_path / 'broken.db'}}"

    @pytest.fixture
    def store_factory(self, store_url):
        path = store_url.removeprefix("sqlite:///")
        return lambda: broken_stores.named("{store}")(path)

    @pytest.fixture
    def store_harness(self, store_url):
        return reference_stores.ReferenceHarness(store_url, broken_stores.named("{store}"))
"""


# Broken store → the contract test that must catch it. Grow this whenever a store bug is
# found anywhere: the mutant goes to broken_stores.py, its row here.
CATALOGUE = [
    ("DoubleClaimStore", "test_concurrent_claimers_never_share_a_job"),
    ("DoubleClaimStore", "test_claims_racing_cancels_have_one_winner_per_job"),
    ("IgnoresPriorityStore", "test_order_is_priority_then_scheduled_time_then_id"),
    ("IgnoresPriorityStore", "test_age_boost_lets_old_low_priority_work_overtake"),
    ("UnfencedCompletionStore", "test_stale_claim_sequence_changes_nothing"),
    ("UnfencedBatchCompletionStore", "test_each_row_of_a_batch_is_fenced_on_its_own"),
    ("UnfencedBatchCompletionStore", "test_a_batch_racing_a_takeover_never_records_both"),
    ("LocalClockStore", "test_due_time_is_judged_by_the_database_clock"),
    ("EarlyBusinessKeyReleaseStore", "test_key_is_held_while_pending_and_running"),
    ("StealableLockStore", "test_acquire_when_free_expired_or_ours"),
    ("StealableLockStore", "test_concurrent_acquirers_get_one_winner"),
    ("ChargesUnstartedClaimsStore", "test_claims_made_ahead_are_recovered_without_charge"),
    ("ChargesUnstartedClaimsStore", "test_a_restart_charges_only_started_claims"),
    ("IgnoresLateStartStore", "test_a_start_recorded_later_is_charged"),
    # time precision and the database clock
    ("WholeSecondDelayStore", "test_sub_second_delays_are_kept_and_honoured"),
    ("WholeSecondRetryDelayStore", "test_sub_second_delays_are_kept_and_honoured"),
    ("WholeSecondScheduleStore", "test_a_job_due_a_moment_from_now_is_not_claimable_yet"),
    ("ClaimsAheadStore", "test_a_job_due_a_moment_from_now_is_not_claimable_yet"),
    ("WholeSecondClockStore", "test_database_clock_and_written_times_have_sub_second_resolution"),
    ("LocalClockDelayStore", "test_every_time_the_store_writes_is_on_the_database_clock"),
    ("LocalClockRetryStore", "test_every_time_the_store_writes_is_on_the_database_clock"),
    ("LocalClockRegistrationStore", "test_every_time_the_store_writes_is_on_the_database_clock"),
    ("LocalClockHeartbeatStore", "test_every_time_the_store_writes_is_on_the_database_clock"),
    ("LocalClockStaleNodesStore", "test_age_comparisons_are_on_the_database_clock"),
    ("LocalClockArchiveStore", "test_age_comparisons_are_on_the_database_clock"),
    ("LocalClockLockStore", "test_lock_expiry_is_on_the_database_clock"),
    # claim order under a small limit
    ("SortsAfterLimitStore", "test_order_holds_when_the_limit_is_far_below_the_backlog"),
    ("OrdersByIdWithinLevelStore", "test_order_within_one_level_under_a_small_limit"),
    # exact matching
    ("CaseInsensitiveIdempotencyKeyStore", "test_idempotency_keys_match_exactly"),
    ("TrimmedIdempotencyKeyStore", "test_idempotency_keys_match_exactly"),
    ("CaseInsensitiveBusinessKeyStore", "test_business_keys_match_exactly"),
    ("LikeBusinessKeyCancelStore", "test_cancel_by_business_key_matches_exactly"),
    ("PrefixTagStore", "test_tags_match_whole_tags"),
    ("SubstringTagCancelStore", "test_cancel_by_tag_matches_whole_tags"),
    # atomicity of enqueues
    ("ChunkedEnqueueManyStore", "test_enqueue_many_is_all_or_nothing_for_every_conflict"),
    ("DeduplicatingEnqueueManyStore", "test_enqueue_many_is_all_or_nothing_for_every_conflict"),
    ("KeyReservedFirstStore", "test_a_rejected_enqueue_leaves_nothing_behind"),
    # neighbouring states and cut-offs
    ("CancelIgnoresStatusStore", "test_cancel_only_from_pending"),
    ("CancelIgnoresStatusStore", "test_claims_racing_cancels_have_one_winner_per_job"),
    ("CancelByKeyTakesRunningStore", "test_cancel_by_business_key_spares_running_and_finished"),
    ("CancelByTagIgnoresStatusStore", "test_cancel_by_tag_reaches_pending_jobs_only"),
    ("PurgesCanceledStore", "test_purge_deletes_failed_jobs_only"),
    ("ArchivesUnfinishedStore", "test_archive_takes_finished_jobs_only"),
    ("CountsArchivedStore", "test_archived_jobs_leave_every_live_view"),
    ("ArchiveByCreatedAtStore", "test_cut_offs_apply_to_the_finish_time"),
    ("PurgeByCreatedAtStore", "test_cut_offs_apply_to_the_finish_time"),
    ("PurgeExecutionsByStartStore", "test_cut_offs_apply_to_the_finish_time"),
    # batch equals single
    ("BatchDropsResultTypeStore", "test_a_batched_completion_stores_what_complete_job_stores"),
    ("BatchForgetsFinishTimeStore", "test_a_batched_completion_stores_what_complete_job_stores"),
    # leases
    ("ReacquireKeepsExpiryStore", "test_reacquiring_a_held_lock_extends_it"),
    ("RenewFromAcquisitionStore", "test_renewal_runs_from_the_time_of_renewal"),
    ("RenewShortensStore", "test_renewal_never_shortens_a_lease"),
    # recurring lifecycle
    ("FiresDeletedWithScheduleStore", "test_a_fired_instant_never_fires_again_after_delete"),
    ("RecreatingSaveRecurringStore", "test_definitions_are_saved_replaced_listed_and_deleted"),
    ("LastFireIgnoresSkipsStore", "test_last_fire_counts_fired_and_skipped_instants"),
    # races
    ("UnguardedRecoveryStore", "test_recoveries_racing_a_claim_charge_each_orphan_once"),
    ("UnguardedRecoveryStore", "test_completion_racing_recovery_has_one_winner_per_job"),
    ("StatuslessFenceStore", "test_completion_racing_recovery_has_one_winner_per_job"),
    ("StatuslessFenceStore", "test_outcome_for_a_job_that_is_not_running_changes_nothing"),
    # the rest of the SPI, method by method
    ("RetryDropsBusinessKeyStore", "test_retry_of_a_failed_job_reserves_its_key_again"),
    ("OldestFirstListStore", "test_list_jobs_by_status_and_tag_newest_first"),
    ("FindsFinishedKeyHolderStore", "test_key_is_released_when_the_job_ends"),
    ("ReleaseChargesAttemptStore", "test_release_charges_nothing"),
    ("RetryIgnoresDelayStore", "test_schedule_retry_returns_to_pending_after_the_delay"),
    ("CrashLimitCountsAttemptStore", "test_crash_limit_dead_letter_uses_no_attempt"),
    ("DrainChargesCrashStore", "test_draining_node_releases_its_claims_without_charge"),
    ("LateOutcomeOverwritesCurrentStore", "test_late_outcome_updates_only_a_superseded_execution"),
    ("ClosesRunningExecutionsStore", "test_open_execution_of_a_running_claim_is_not_closed"),
    # capabilities: transactional enqueue, migrations, reconnection
    ("SelfCommittingEnqueueInStore", "test_a_rolled_back_transaction_leaves_no_job"),
    ("SelfCommittingEnqueueInStore", "test_a_job_enqueued_in_a_transaction_appears_only_at"),
    ("ConflictRollsBackCallerStore", "test_a_conflict_leaves_the_callers_transaction_usable"),
    ("HolderLookedUpElsewhereStore", "test_a_key_held_earlier_in_the_same_transaction"),
    ("UnrecordedMigrationsStore", "test_applying_the_schema_again_changes_nothing"),
    ("UnrecordedMigrationsStore", "test_a_blank_database_gets_every_migration_once"),
    ("UnlockedMigratorStore", "test_nodes_applying_at_once_apply_each_migration_once"),
    ("StaleConnectionStore", "test_the_first_call_after_the_server_dropped_the_connections"),
    ("StaleConnectionStore", "test_jobs_and_claims_survive_dropped_connections"),
    # survivors of mutation testing (MUTATION.md), caught by ratchet_tck.store.details
    ("KeylessConflictErrorStore", "test_enqueue_conflicts_name_the_key_and_its_holder"),
    ("RetryConflictWithoutHolderStore", "test_retry_conflict_names_the_key_and_its_holder"),
    ("LateFailureAsSuccessStore", "test_a_late_failure_is_recorded_as_failed"),
    ("DisownsBySequenceStore", "test_recovering_a_node_leaves_other_nodes_claims_alone"),
    ("ClosesClosedRecordsStore", "test_closing_stale_records_leaves_closed_and_live_ones_alone"),
    ("DeletesOtherJobsTagsStore", "test_archive_and_purge_leave_other_jobs_tags_alone"),
    ("LargerDefaultListStore", "test_list_jobs_returns_at_most_100_by_default"),
    ("ResetKeepsKeysStore", "test_reset_for_tests_empties_every_view"),
    # job logs and progress (SupportsJobLogs)
    ("JobLogWriteTimeStore", "test_job_log_lines_round_trip_in_order"),
    ("KeepsOldestLinesStore", "test_job_log_bound_keeps_the_newest_lines_per_attempt"),
    ("TrimsAcrossAttemptsStore", "test_lines_of_two_attempts_are_kept_apart"),
    ("RaisesOnResentBatchStore", "test_a_batch_sent_again_duplicates_nothing"),
    ("ProgressKeepsFirstReportStore", "test_progress_round_trips_and_is_replaced"),
    ("UnfencedProgressStore", "test_a_stale_claims_progress_is_refused"),
    ("UnfencedProgressStore", "test_a_stale_claim_racing_its_successor_never_wins"),
    ("PurgesEveryJobLogStore", "test_purge_removes_only_old_lines_and_progress"),
    # queue ages (SupportsPendingAges)
    (
        "NewestPendingAgeStore",
        "test_oldest_pending_age_is_per_priority_and_counts_only_due_pending_jobs",
    ),
    ("FutureJobsWaitStore", "test_a_job_counts_once_it_is_due_and_stops_once_claimed"),
    (
        "FutureJobsWaitStore",
        "test_oldest_pending_age_is_per_priority_and_counts_only_due_pending_jobs",
    ),
    ("RunningJobsWaitStore", "test_a_job_counts_once_it_is_due_and_stops_once_claimed"),
    (
        "RunningJobsWaitStore",
        "test_oldest_pending_age_is_per_priority_and_counts_only_due_pending_jobs",
    ),
    # the activity probe (SupportsActivityProbe)
    (
        "IgnoresRunningJobsProbeStore",
        "test_only_running_and_due_pending_jobs_count_as_activity",
    ),
    (
        "FutureJobsAreActivityProbeStore",
        "test_only_running_and_due_pending_jobs_count_as_activity",
    ),
    ("FutureJobsAreActivityProbeStore", "test_a_job_becomes_activity_when_it_comes_due"),
    ("SkipsLowestPriorityProbeStore", "test_a_due_job_of_any_priority_is_activity"),
    # bulk dead-letter retry (SupportsBulkRetry)
    ("BulkRetryAnyStatusStore", "test_bulk_retry_takes_at_most_limit_oldest_failures_first"),
    (
        "NewestFailureFirstBulkRetryStore",
        "test_bulk_retry_takes_at_most_limit_oldest_failures_first",
    ),
    ("IgnoresNameBulkRetryStore", "test_bulk_retry_filters_by_exact_name_and_whole_tag"),
    ("TagPrefixBulkRetryStore", "test_bulk_retry_filters_by_exact_name_and_whole_tag"),
    ("RetriesHeldKeyBulkRetryStore", "test_bulk_retry_skips_jobs_whose_business_key_is_held"),
    ("DoubleBulkRetryStore", "test_racing_bulk_retries_never_return_a_job_twice"),
    # archive reads and batched purges (SupportsArchiveAccess)
    ("LiveTableArchiveReadStore", "test_an_archived_job_is_read_back_as_it_was_archived"),
    (
        "OldestFirstArchiveListStore",
        "test_archived_jobs_are_listed_newest_first_by_status_and_whole_tag",
    ),
    (
        "TagPrefixArchiveListStore",
        "test_archived_jobs_are_listed_newest_first_by_status_and_whole_tag",
    ),
    (
        "IgnoresStatusArchiveListStore",
        "test_archived_jobs_are_listed_newest_first_by_status_and_whole_tag",
    ),
    (
        "IgnoresCutOffArchivePurgeStore",
        "test_archive_purge_respects_the_cut_off_and_the_batch_size",
    ),
    ("NewestFirstArchivePurgeStore", "test_archive_purge_respects_the_cut_off_and_the_batch_size"),
    (
        "PurgesLiveJobsArchivePurgeStore",
        "test_archive_purge_respects_the_cut_off_and_the_batch_size",
    ),
    (
        "AnyStatusDeadLetterPurgeStore",
        "test_dead_letter_purge_takes_old_failed_jobs_only_in_batches",
    ),
    (
        "UnboundedDeadLetterPurgeStore",
        "test_dead_letter_purge_takes_old_failed_jobs_only_in_batches",
    ),
    (
        "IgnoresCutOffDeadLetterPurgeStore",
        "test_dead_letter_purge_takes_old_failed_jobs_only_in_batches",
    ),
    ("DropsKeysArchivePurgeStore", "test_idempotency_keys_survive_both_purges"),
    # payload rewrite (SupportsPayloadRewrite)
    ("UnfencedRewriteStore", "test_payload_rewrite_is_fenced_by_status_and_claim"),
    ("StatusOnlyRewriteFenceStore", "test_payload_rewrite_is_fenced_by_status_and_claim"),
    ("RewriteTouchesFinishedAtStore", "test_payload_rewrite_changes_nothing_else"),
    ("RewriteSkipsResultStore", "test_payload_rewrite_round_trips_raw_text"),
    ("ScanIgnoresAfterIdStore", "test_payload_scan_pages_by_id_in_byte_order"),
    ("CaseFoldedScanOrderStore", "test_payload_scan_pages_by_id_in_byte_order"),
    (
        "LiveScanSeesArchiveStore",
        "test_payload_scan_reads_the_archive_or_the_live_jobs_never_both",
    ),
    (
        "ArchiveScanReadsLiveStore",
        "test_payload_scan_reads_the_archive_or_the_live_jobs_never_both",
    ),
    (
        "CheckThenWriteRewriteStore",
        "test_payload_rewrites_racing_outcomes_never_lose_a_result",
    ),
    # snoozing (SupportsSnooze)
    ("UnfencedSnoozeStore", "test_a_stale_or_finished_claim_cannot_snooze"),
    ("SnoozeCountsAttemptStore", "test_a_snooze_charges_nothing_and_keeps_the_key"),
    ("SnoozeClearsErrorStore", "test_a_snooze_charges_nothing_and_keeps_the_key"),
    ("SnoozeIgnoresDelayStore", "test_a_snoozed_job_is_due_after_the_delay_on_the_database_clock"),
    ("SnoozeClosesFailedStore", "test_a_snooze_charges_nothing_and_keeps_the_key"),
    # canceling running jobs (SupportsRunningCancel)
    ("UnfencedRunningCancelStore", "test_a_stale_or_finished_claim_cannot_be_canceled_running"),
    ("RunningCancelKeepsRunningStore", "test_no_outcome_of_a_canceled_claim_is_recorded"),
    ("RunningCancelKeepsRunningStore", "test_a_running_cancel_ends_the_claim_as_canceled"),
    ("OutcomeOverridesRunningCancelStore", "test_no_outcome_of_a_canceled_claim_is_recorded"),
    (
        "OutcomeOverridesRunningCancelStore",
        "test_a_running_cancel_racing_an_outcome_has_one_winner",
    ),
    ("RunningCancelLeavesExecutionOpenStore", "test_a_running_cancel_ends_the_claim_as_canceled"),
    ("RunningCancelKeepsKeyStore", "test_a_running_cancel_releases_the_business_key"),
    (
        "CheckThenWriteRunningCancelStore",
        "test_a_running_cancel_racing_an_outcome_has_one_winner",
    ),
    ("CanceledAmongEchoesIdsStore", "test_canceled_among_names_exactly_the_canceled_jobs"),
    ("CanceledAmongAnyStatusStore", "test_canceled_among_names_exactly_the_canceled_jobs"),
    ("CanceledAmongFirstThousandStore", "test_canceled_among_reads_every_id_of_a_long_list"),
    # cluster-wide resource permits (SupportsResourcePermits)
    ("PermitLimitOffByOneStore", "test_permits_are_granted_up_to_the_limit"),
    (
        "UnconfiguredAsFullPermitStore",
        "test_permits_of_an_unconfigured_resource_raise_and_bad_limits_are_refused",
    ),
    (
        "BoolLimitPermitStore",
        "test_permits_of_an_unconfigured_resource_raise_and_bad_limits_are_refused",
    ),
    ("UnfencedReleasePermitStore", "test_a_permit_release_frees_capacity_fenced_by_the_claim"),
    (
        "ReleaseAlwaysAnswersTrueStore",
        "test_a_permit_release_frees_capacity_fenced_by_the_claim",
    ),
    ("ReacquireCountsOwnPermitStore", "test_a_claim_acquiring_again_holds_one_permit"),
    ("EndedPermitsCountStore", "test_a_permit_of_an_ended_claim_stops_counting"),
    ("EndedPermitsCountStore", "test_a_new_claim_replaces_the_permit_of_an_earlier_claim"),
    ("HoldersListEndedPermitsStore", "test_a_permit_of_an_ended_claim_stops_counting"),
    (
        "HousekeepingTakesLivePermitsStore",
        "test_release_ended_permits_deletes_only_the_permits_of_ended_claims",
    ),
    ("StaleClaimAcquiresPermitStore", "test_a_claim_that_is_not_running_is_granted_no_permit"),
    ("FinishedJobAcquiresPermitStore", "test_a_claim_that_is_not_running_is_granted_no_permit"),
    (
        "EarlierClaimPermitKeptStore",
        "test_a_new_claim_replaces_the_permit_of_an_earlier_claim",
    ),
    ("NodeReleaseTakesResourcesStore", "test_a_node_release_deletes_only_that_nodes_permits"),
    ("LoweredLimitEvictsStore", "test_a_lowered_limit_takes_no_permit_back"),
    ("FirstLimitStaysStore", "test_a_lowered_limit_takes_no_permit_back"),
    ("OverwritingNewSlotStore", "test_racing_acquires_never_exceed_the_permit_limit"),
    (
        "UnguardedSlotTakeOverStore",
        "test_racing_acquires_of_ended_permits_never_exceed_the_permit_limit",
    ),
    ("LoweredLimitOverlookedStore", "test_a_lowered_limit_takes_no_permit_back"),
    (
        "PermitHoldersByJobIdStore",
        "test_permit_holders_are_listed_oldest_first_with_their_fields",
    ),
    (
        "WholeSecondPermitTimeStore",
        "test_permit_holders_are_listed_oldest_first_with_their_fields",
    ),
    # pausing recurring schedules (SupportsRecurringPause)
    ("RedeployUnpausesStore", "test_saving_a_paused_schedule_again_keeps_it_paused"),
    ("PauseEveryScheduleStore", "test_a_paused_schedule_reads_back_paused_and_resumes"),
    (
        "PauseAnswersTrueStore",
        "test_pausing_an_unknown_schedule_answers_false_and_writes_nothing",
    ),
    ("PauseNeverReadBackStore", "test_a_paused_schedule_reads_back_paused_and_resumes"),
    # queues (SupportsQueues)
    ("QueueDroppedStore", "test_every_read_returns_the_queue_the_job_was_enqueued_in"),
    ("EveryQueueClaimedStore", "test_a_claim_from_named_queues_takes_only_theirs_in_claim_order"),
    ("FirstQueueOnlyStore", "test_a_claim_from_named_queues_takes_only_theirs_in_claim_order"),
    (
        "QueuesOneAfterAnotherStore",
        "test_a_claim_from_named_queues_takes_only_theirs_in_claim_order",
    ),
    ("PausedQueueClaimedStore", "test_a_paused_queue_is_not_claimed_and_does_not_crowd_out_others"),
    (
        "PausedAfterTheLimitStore",
        "test_a_paused_queue_is_not_claimed_and_does_not_crowd_out_others",
    ),
    ("PauseInMemoryStore", "test_a_pause_holds_for_every_store_instance"),
    (
        "PauseAnswersTrueQueueStore",
        "test_a_paused_queue_is_not_claimed_and_does_not_crowd_out_others",
    ),
    ("ResumeKeepsPausedStore", "test_a_paused_queue_is_not_claimed_and_does_not_crowd_out_others"),
    ("CountsFinishedJobsStore", "test_queue_counts_list_active_and_paused_queues"),
    ("BadQueueNameStoredStore", "test_bad_queue_names_are_refused_before_anything_changes"),
    # paused jobs (SupportsJobPause)
    ("PauseAnyStatusStore", "test_only_a_pending_job_pauses_and_only_a_paused_one_resumes"),
    ("PausedStaysPendingStore", "test_a_paused_job_is_not_claimed_until_resumed_with_its_schedule"),
    ("ResumeReschedulesStore", "test_a_paused_job_is_not_claimed_until_resumed_with_its_schedule"),
    ("PauseDropsBusinessKeyStore", "test_a_paused_job_holds_its_business_key_until_canceled"),
    ("CancelSkipsPausedStore", "test_a_paused_job_holds_its_business_key_until_canceled"),
    (
        "CancelByTagSkipsPausedStore",
        "test_the_cancels_by_tag_and_by_business_key_take_paused_jobs",
    ),
    ("PauseReadThenWriteStore", "test_a_pause_and_a_claim_of_the_same_job_exclude_each_other"),
    # chains (SupportsChains)
    ("StepStoredPendingStore", "test_a_dependent_job_waits_unclaimed_and_names_its_predecessor"),
    (
        "SuccessReleasesNothingStore",
        "test_the_success_of_a_step_releases_the_next_in_the_same_write",
    ),
    ("ReleaseKeepsItsTimeStore", "test_the_success_of_a_step_releases_the_next_in_the_same_write"),
    ("StaleCompletionReleasesStore", "test_a_refused_or_failed_outcome_releases_nothing"),
    ("BatchReleasesNothingStore", "test_a_batch_of_completions_releases_each_ones_dependents"),
    ("CancelOneLevelStore", "test_cancel_dependents_cancels_every_later_step_and_nothing_else"),
    ("CancelUnguardedStore", "test_cancel_dependents_cancels_every_later_step_and_nothing_else"),
    ("SettleCancelsEverythingStore", "test_settling_finishes_what_a_crash_between_writes_left"),
    ("SettleBehindActiveStore", "test_settling_finishes_what_a_crash_between_writes_left"),
    ("SettleUnguardedStore", "test_settling_from_several_instances_changes_each_step_once"),
    # signals (SupportsSignals)
    (
        "SignalWaiterStoredPendingStore",
        "test_a_job_awaiting_a_signal_waits_unclaimed_with_its_key_and_deadline",
    ),
    (
        "WaitersOfEveryKeyStore",
        "test_a_job_awaiting_a_signal_waits_unclaimed_with_its_key_and_deadline",
    ),
    ("DeliveryUnguardedStore", "test_a_delivery_releases_the_job_once_with_its_payload"),
    ("DeliveryKeepsDeadlineStore", "test_a_delivery_releases_the_job_once_with_its_payload"),
    (
        "DeliveryToAnyWaitingStore",
        "test_a_delivery_to_a_job_awaiting_no_signal_changes_nothing",
    ),
    (
        "ExpiredBeforeDeadlineStore",
        "test_expired_waits_are_read_earliest_deadline_first_and_only_when_due",
    ),
    (
        "ForeverExpiresStore",
        "test_expired_waits_are_read_earliest_deadline_first_and_only_when_due",
    ),
    ("RearmKeepsDeadlineStore", "test_an_expired_wait_is_charged_then_waits_again_or_fails"),
    ("ExpiryIgnoresAttemptsStore", "test_an_expired_wait_is_charged_then_waits_again_or_fails"),
    ("FailedWithoutFinishStore", "test_an_expired_wait_is_charged_then_waits_again_or_fails"),
    ("DeliveryReadThenWriteStore", "test_concurrent_deliveries_to_one_job_release_it_once"),
    ("ExpiryReadThenWriteStore", "test_a_delivery_and_an_expiry_racing_for_a_job_apply_once"),
    ("RotationSkipsSignalStore", "test_a_delivered_payload_is_rotated_with_the_others"),
    ("ArchiveScanWithoutSignalStore", "test_a_delivered_payload_is_rotated_with_the_others"),
    # workflows (SupportsWorkflows)
    (
        "SuccessReleasesBranchesStore",
        "test_a_branch_waits_with_its_condition_and_the_success_leaves_it",
    ),
    (
        "BranchConditionDroppedStore",
        "test_a_branch_waits_with_its_condition_and_the_success_leaves_it",
    ),
    (
        "ResolutionUnguardedStore",
        "test_a_resolution_releases_the_winner_and_cancels_the_rest_once",
    ),
    (
        "ResolutionKeepsDeadlineStore",
        "test_a_resolution_releases_the_winner_and_cancels_the_rest_once",
    ),
    ("NullWinnerReleasesStore", "test_a_resolution_without_a_winner_cancels_every_branch"),
    ("CancelBranchAnyStepStore", "test_cancel_branch_takes_one_waiting_branch_only"),
    ("SettleTakesBranchesStore", "test_settling_and_recovery_see_branches_as_theirs"),
    ("BranchParentsStillRunningStore", "test_settling_and_recovery_see_branches_as_theirs"),
    ("ResolutionReadThenWriteStore", "test_racing_resolutions_apply_one_decision"),
    # batches (SupportsBatches)
    ("RecordStoredPendingStore", "test_a_batch_record_waits_unclaimed_and_its_children_run"),
    ("ChildLinkDroppedStore", "test_a_batch_record_waits_unclaimed_and_its_children_run"),
    ("CompleteWhileActiveStore", "test_a_batch_completes_once_when_its_last_child_ends"),
    ("CompleteUnguardedStore", "test_a_batch_completes_once_when_its_last_child_ends"),
    (
        "CanceledNotCountedStore",
        "test_a_canceled_child_counts_and_an_unknown_batch_completes_nothing",
    ),
    ("ReadyWithActiveChildrenStore", "test_ready_batches_lists_what_a_crash_left"),
    (
        "CancelRunningChildrenStore",
        "test_cancel_batch_children_takes_the_children_still_to_start",
    ),
    (
        "CompleteReadThenWriteStore",
        "test_the_last_two_children_ending_on_two_nodes_complete_the_batch_once",
    ),
    # sealed payloads (ratchet.encryption)
    ("ShortArgumentsColumnStore", "test_an_encrypted_job_is_stored_sealed_and_runs_opened"),
    # job queries (SupportsJobQuery)
    ("QueryIdAscendingStore", "test_query_lists_live_jobs_newest_first_ties_broken_by_id"),
    ("QueryCursorIgnoresIdStore", "test_query_pages_cover_every_job_once_across_ties"),
    ("QueryCursorSkipsTiesStore", "test_query_pages_cover_every_job_once_across_ties"),
    ("QueryStatusIgnoredUnderNameStore", "test_query_pages_of_a_filter_continue_within_it"),
    ("QueryStatusBranchWithoutCursorStore", "test_query_pages_of_a_filter_continue_within_it"),
    ("QueryNamePrefixStore", "test_query_filters_by_exact_name_whole_tag_and_exact_keys"),
    ("QueryTagPrefixStore", "test_query_filters_by_exact_name_whole_tag_and_exact_keys"),
    ("QueryNameIgnoredUnderBusinessKeyStore", "test_query_ands_every_filter"),
    (
        "QueryBusinessKeyActiveOnlyStore",
        "test_query_business_key_lists_finished_and_active_holders",
    ),
    ("QueryOffsetPagingStore", "test_query_pages_stay_stable_while_new_jobs_arrive"),
    ("QueryCreatedToInclusiveStore", "test_query_created_range_is_from_inclusive_to_exclusive"),
    (
        "QueryIdempotencyKeyIgnoredStore",
        "test_query_filters_by_exact_name_whole_tag_and_exact_keys",
    ),
    (
        "QueryCursorOnShortPageStore",
        "test_query_short_page_has_no_cursor_and_a_full_one_has_its_last_job",
    ),
    ("QueryLimitClampedStore", "test_query_limit_must_be_1_to_1000"),
    ("DeadLetterGroupsWholeLineStore", "test_query_groups_dead_letters_by_name_and_error_type"),
    ("DeadLetterGroupsAnyStatusStore", "test_query_groups_dead_letters_by_name_and_error_type"),
    (
        "ExecutionCountsReleasedAsFailedStore",
        "test_query_counts_finished_executions_per_aligned_bucket",
    ),
    ("ExecutionBucketsUnalignedStore", "test_query_counts_finished_executions_per_aligned_bucket"),
    ("ExecutionCountsSinceExclusiveStore", "test_query_execution_counts_start_at_since_inclusive"),
]


@pytest.mark.parametrize(("store", "caught_by"), CATALOGUE)
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
    """Control: the same harness with the real store passes every one of those tests. The
    real store is the reference: the embedded store plus the capabilities the capability
    contracts need (transactional enqueue, a droppable connection), done right, so none of
    those tests is N/A here."""
    pytester.syspathinsert(Path(__file__).parent)
    pytester.makepyfile(test_broken=SUITE.format(store="ReferenceStore"))
    selection = " or ".join(sorted({test for _, test in CATALOGUE}))
    result = pytester.runpytest_inprocess("-k", selection, "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    passed = outcomes.get("passed", 0)
    expected = len({test for _, test in CATALOGUE})
    assert outcomes.get("failed", 0) == 0 and passed >= expected, result.stdout.str()[-3000:]


def test_every_broken_store_has_its_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """The catalogue holds at least 30 broken stores, and each has a row in the table."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    import broken_archive_stores
    import broken_batch_stores
    import broken_capability_stores
    import broken_chain_stores
    import broken_cluster_stores
    import broken_detail_stores
    import broken_job_log_stores
    import broken_job_pause_stores
    import broken_named_queue_stores
    import broken_query_stores
    import broken_queue_stores
    import broken_recurring_pause_stores
    import broken_resource_permit_stores
    import broken_retry_stores
    import broken_rewrite_stores
    import broken_running_cancel_stores
    import broken_signal_stores
    import broken_snooze_stores
    import broken_stores
    import broken_workflow_stores

    from ratchet.stores.sqlite.store import SQLiteJobStore

    defined = {
        name
        for module in (
            broken_stores,
            broken_queue_stores,
            broken_cluster_stores,
            broken_capability_stores,
            broken_detail_stores,
            broken_job_log_stores,
            broken_retry_stores,
            broken_archive_stores,
            broken_rewrite_stores,
            broken_query_stores,
            broken_snooze_stores,
            broken_running_cancel_stores,
            broken_resource_permit_stores,
            broken_recurring_pause_stores,
            broken_named_queue_stores,
            broken_job_pause_stores,
            broken_chain_stores,
            broken_signal_stores,
            broken_workflow_stores,
            broken_batch_stores,
        )
        for name, value in vars(module).items()
        if isinstance(value, type)
        and issubclass(value, SQLiteJobStore)
        and value is not SQLiteJobStore
        and not name.startswith("_")  # a helper the broken stores build on
    }
    assert defined == {store for store, _ in CATALOGUE}
    assert len(defined) >= 30


def test_suite_test_names_are_unique() -> None:
    """No contract test of one mixin hides another's of the same name (the report and the
    suite class keep only one of them)."""
    from ratchet_tck import JobStoreSuite

    seen: dict[str, str] = {}
    clashes = []
    for klass in JobStoreSuite.__mro__:
        for name in vars(klass):
            if name.startswith("test_"):
                if name in seen:
                    clashes.append(f"{name}: {seen[name]} and {klass.__qualname__}")
                seen[name] = klass.__qualname__
    assert not clashes


def test_every_broken_store_overrides_what_the_store_still_has(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A broken store must fail its contract for the bug it carries, not because the real
    store's internals moved under it (a method it overrides renamed, or called with other
    parameters, crashes every test and would pass its row for the wrong reason). So every
    method a broken store defines exists on a store it derives from (the embedded store,
    its shared SQL layer, the reference store) with the same parameters."""
    import inspect

    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    import broken_stores

    drifted = []
    for store, _ in CATALOGUE:
        cls = broken_stores.named(store)
        for name in vars(cls):
            if name.startswith("__") or not callable(getattr(cls, name)):
                continue
            owner = next((k for k in cls.__mro__[1:] if name in vars(k)), None)
            if owner is None:
                if not name.startswith("_"):
                    drifted.append(f"{store}.{name}: no store it derives from has it")
                continue  # a helper of the broken store's own
            real = inspect.signature(getattr(owner, name))
            mine = inspect.signature(getattr(cls, name))
            if list(real.parameters) != list(mine.parameters):
                drifted.append(f"{store}.{name}{mine} vs {owner.__name__}.{name}{real}")
    assert not drifted, drifted
