"""Broken coordinators fail the coordinator suite at the intended test.

Each entry changes one behaviour of the loopback reference coordinator, the way a
coordinator author plausibly gets it wrong, and names the one contract test that must
catch it. Grow the catalogue whenever a coordinator bug is found anywhere. The control,
the unchanged loopback coordinator passing every contract, is ``TestLoopbackCoordinator``
in ``test_runtime_suites.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SUITE = """
import pytest
from ratchet.spi import encode_envelope
from ratchet_tck import Capabilities, ClusterCoordinatorSuite, WorkerProcess
from ratchet_tck.loopback import LoopbackClusterCoordinator, LoopbackHarness


class Broken(LoopbackClusterCoordinator):
{body}


class Harness(LoopbackHarness):
    def create(self, node_id):
        return Broken(self.bus, node_id)
{harness}

class TestBroken(ClusterCoordinatorSuite):
    capabilities = Capabilities(
        transport_failure=True, raw_injection=True, separate_processes=True
    )

    @pytest.fixture
    def coordinator_harness(self):
        harness = Harness()
        yield harness
        harness.close()
"""

UNCHANGED = """
    pass
"""

DUPLICATE_PUBLISH = """
    def publish(self, payload):
        self._bus.publish(payload)
        self._bus.publish(payload)
"""

CLAMPED_PRIORITY = """
    def notify_new_work(self, priority, source, execution_target=None):
        super().notify_new_work(min(priority, 3), source, execution_target)
"""

SELF_DELIVERY = """
    def deliver(self, payload):
        from ratchet.spi import decode_envelope
        hint = decode_envelope(payload)
        for listener in list(self._listeners):
            listener(hint)
"""

SELF_COUNTED_AS_RECEIVED = """
    def deliver(self, payload):
        from ratchet.spi import decode_envelope
        if decode_envelope(payload).source_node == self.node_id:
            self._count("received")
            return
        super().deliver(payload)
"""

NO_ISOLATION = """
    def _call(self, listener, hint):
        listener(hint)
"""

LAST_LISTENER_ONLY = """
    def register_wakeup_listener(self, listener):
        with self._lock:
            self._listeners.clear()
        super().register_wakeup_listener(listener)
"""

RAISING_NOTIFY = """
    def notify_new_work(self, priority, source, execution_target=None):
        self.publish(encode_envelope(priority, source, execution_target))
"""

GIVES_UP_AFTER_A_FAILED_PUBLISH = """
    def publish(self, payload):
        if getattr(self, "gave_up", False):
            return
        try:
            super().publish(payload)
        except ConnectionError:
            self.gave_up = True
            raise
"""

CLOSE_RAISES_THE_SECOND_TIME = """
    def close(self):
        if self._closed:
            raise RuntimeError("already closed")
        super().close()
"""

DELIVERS_AFTER_CLOSE = """
    def close_transport(self):
        pass  # the subscription outlives close

    def deliver(self, payload):
        closed, self._closed = self._closed, False
        try:
            super().deliver(payload)
        finally:
            self._closed = closed
"""

NOTIFIES_AFTER_CLOSE = """
    def notify_new_work(self, priority, source, execution_target=None):
        closed, self._closed = self._closed, False
        try:
            super().notify_new_work(priority, source, execution_target)
        finally:
            self._closed = closed
"""

ACCEPTS_ANY_VERSION = """
    def deliver(self, payload):
        import json
        try:
            data = json.loads(payload)
        except ValueError:
            data = None
        if isinstance(data, dict) and "v" in data:
            data["v"] = 2  # "be liberal in what you accept"
            payload = json.dumps(data)
        super().deliver(payload)
"""

TRUNCATED_NODE_ID = """
    def notify_new_work(self, priority, source, execution_target=None):
        super().notify_new_work(priority, source[:32], execution_target)
"""

DROPPED_TARGET = """
    def notify_new_work(self, priority, source, execution_target=None):
        super().notify_new_work(priority, source, None)
"""

NULL_TARGET_AS_EMPTY_STRING = """
    def notify_new_work(self, priority, source, execution_target=None):
        super().notify_new_work(priority, source, execution_target or "")
"""

SENT_COUNTED_TWICE = """
    def publish(self, payload):
        super().publish(payload)
        self._count("sent")  # the base counts it too
"""

RECEIVED_COUNTED_PER_LISTENER = """
    def _call(self, listener, hint):
        self._count("received")
        super()._call(listener, hint)
"""

NO_BUFFER = """
    def register_wakeup_listener(self, listener):
        with self._lock:
            self._early.clear()
        super().register_wakeup_listener(listener)
"""

BUFFER_DROPS_THE_NEWEST = """
    def deliver(self, payload):
        with self._lock:
            full = not self._listeners and len(self._early) >= 256
            if full:
                self._counts["received"] += 1
                self._counts["pre_registration_dropped"] += 1
        if not full:
            super().deliver(payload)
"""

IGNORES_WATCHES = """
    def _watch(self, job_ids, seconds):
        pass  # watches are decoded but never remembered
"""

KEEPS_THE_WATCH = """
    def notify_job_ended(self, job_id):
        expires = self._watched.get(job_id)
        super().notify_job_ended(job_id)
        if expires is not None:
            self._watched[job_id] = expires  # announces every end, not once
"""

ANNOUNCES_EVERY_END = """
    def notify_job_ended(self, job_id):
        from ratchet.spi._broadcast import _encode_completion
        self._send(_encode_completion(self.node_id, ended=[job_id]))
"""

HEARS_ITS_OWN_WATCH = """
    def watch_jobs(self, job_ids, seconds):
        self._watch(tuple(job_ids), seconds)  # keeps its own watch too
        super().watch_jobs(job_ids, seconds)
"""

IGNORES_CANCELS = """
    def _canceled(self, job_ids):
        pass  # cancel envelopes are decoded but never handed on
"""

HEARS_ITS_OWN_CANCEL = """
    def notify_canceled(self, job_ids):
        self._canceled(tuple(job_ids))  # tells its own listeners too
        super().notify_canceled(job_ids)
"""

CANCEL_LISTENERS_NOT_ISOLATED = """
    def _canceled(self, job_ids):
        for listener in list(self._cancel_listeners):
            listener(job_ids)  # the first that raises stops the rest
"""

# A worker whose coordinator never wakes it: "none" in both processes.
NEVER_WAKES = """
    def worker_process(self):
        return WorkerProcess(coordinator="none", coordinator_class="NoOpClusterCoordinator")
"""

CATALOGUE = [
    (DUPLICATE_PUBLISH, "", "test_remote_delivery_within_max_latency"),
    (CLAMPED_PRIORITY, "", "test_every_priority_round_trips"),
    (SELF_DELIVERY, "", "test_no_self_delivery"),
    (
        SELF_COUNTED_AS_RECEIVED,
        "",
        "test_self_notify_is_counted_as_ignored_or_filtered_at_the_wire",
    ),
    (NO_ISOLATION, "", "test_a_throwing_listener_does_not_stop_the_others"),
    (LAST_LISTENER_ONLY, "", "test_every_listener_receives_every_hint"),
    (RAISING_NOTIFY, "", "test_notify_does_not_raise_while_the_transport_is_down"),
    (GIVES_UP_AFTER_A_FAILED_PUBLISH, "", "test_delivery_resumes_after_transport_recovery"),
    (CLOSE_RAISES_THE_SECOND_TIME, "", "test_close_is_idempotent"),
    (DELIVERS_AFTER_CLOSE, "", "test_a_closed_node_does_not_fire_its_listeners"),
    (NOTIFIES_AFTER_CLOSE, "", "test_notify_after_close_is_a_no_op"),
    (ACCEPTS_ANY_VERSION, "", "test_unknown_envelope_version_is_rejected_loudly"),
    (TRUNCATED_NODE_ID, "", "test_envelope_round_trip_preserves_node_identity_and_priority"),
    (DROPPED_TARGET, "", "test_envelope_round_trip_preserves_an_execution_target"),
    (
        NULL_TARGET_AS_EMPTY_STRING,
        "",
        "test_envelope_round_trip_keeps_a_null_execution_target_null",
    ),
    (SENT_COUNTED_TWICE, "", "test_sent_count_is_exact"),
    (RECEIVED_COUNTED_PER_LISTENER, "", "test_received_count_is_exact"),
    (NO_BUFFER, "", "test_hints_before_the_first_listener_reach_it"),
    (BUFFER_DROPS_THE_NEWEST, "", "test_buffer_overflow_drops_the_oldest_and_counts_them"),
    (IGNORES_WATCHES, "", "test_a_watched_end_reaches_the_watcher_once"),
    (KEEPS_THE_WATCH, "", "test_a_watched_end_reaches_the_watcher_once"),
    (ANNOUNCES_EVERY_END, "", "test_an_end_nobody_watches_sends_nothing"),
    (HEARS_ITS_OWN_WATCH, "", "test_a_node_does_not_hear_its_own_watch"),
    (IGNORES_CANCELS, "", "test_a_cancel_reaches_the_other_node"),
    (HEARS_ITS_OWN_CANCEL, "", "test_a_node_does_not_hear_its_own_cancel"),
    (CANCEL_LISTENERS_NOT_ISOLATED, "", "test_a_raising_cancel_listener_does_not_stop_the_others"),
    pytest.param(
        UNCHANGED,
        NEVER_WAKES,
        "test_an_idle_worker_in_another_process_wakes_at_once",
        marks=pytest.mark.slow,
        id="never-wakes",
    ),
]


def _run(pytester: pytest.Pytester, body: str, harness: str, test: str) -> pytest.RunResult:
    pytester.syspathinsert(Path(__file__).parent)
    pytester.makepyfile(test_broken=SUITE.format(body=body, harness=harness))
    return pytester.runpytest_inprocess("-k", test, "-p", "no:cacheprovider")


@pytest.mark.parametrize(("body", "harness", "caught_by"), CATALOGUE)
def test_broken_coordinator_fails_the_intended_contract(
    pytester: pytest.Pytester, body: str, harness: str, caught_by: str
) -> None:
    result = _run(pytester, body, harness, caught_by)
    assert result.parseoutcomes().get("failed", 0) == 1, result.stdout.str()[-3000:]


def test_every_contract_has_a_broken_coordinator() -> None:
    """The catalogue covers every coordinator contract test of the suite."""
    from ratchet_tck import ClusterCoordinatorSuite

    contracts = {name for name in dir(ClusterCoordinatorSuite) if name.startswith("test_")}
    caught = {entry.values[2] if hasattr(entry, "values") else entry[2] for entry in CATALOGUE}
    assert contracts == caught
