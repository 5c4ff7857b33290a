"""Pausing recurring schedules (``SupportsRecurringPause``): the flag is the store's, read
back by ``list_recurring``, and kept when a worker saves its definitions again.

N/A for stores without the capability: there every schedule fires.
"""

from __future__ import annotations

import pytest

from ratchet.spi import JobStore, RecurringDefinition, SupportsRecurringPause
from ratchet_tck._contract import Level, contract
from ratchet_tck.store._base import NA_PREFIX, StoreSuiteBase
from ratchet_tck.store.retention import FIRE


def pausing_store(store: JobStore) -> SupportsRecurringPause:
    if not isinstance(store, SupportsRecurringPause):
        pytest.skip(f"{NA_PREFIX} the store does not offer SupportsRecurringPause")
    return store


def schedule(recurring_id: str, *, cron: str = "0 2 * * *") -> RecurringDefinition:
    return RecurringDefinition(id=recurring_id, cron=cron, name="nightly", target="app:nightly")


def paused_ids(store: JobStore) -> dict[str, bool]:
    return {definition.id: definition.paused for definition in store.list_recurring()}


class RecurringPauseContracts(StoreSuiteBase):
    @contract("recurring-pause", Level.ADVANCED)
    def test_a_paused_schedule_reads_back_paused_and_resumes(self, store: JobStore) -> None:
        """Two schedules saved: pausing one answers ``True`` and ``list_recurring`` shows
        exactly that one paused (a new schedule starts unpaused); pausing it again still
        answers ``True``; resuming answers ``True`` and it reads back unpaused.

        On failure: ``set_recurring_paused`` must write the flag of the one schedule
        named, and ``list_recurring`` must return it as ``RecurringDefinition.paused``.
        """
        pauser = pausing_store(store)
        store.save_recurring(schedule("nightly"))
        store.save_recurring(schedule("hourly", cron="0 * * * *"))
        assert paused_ids(store) == {"hourly": False, "nightly": False}
        assert pauser.set_recurring_paused("nightly", True) is True
        assert paused_ids(store) == {"hourly": False, "nightly": True}
        assert pauser.set_recurring_paused("nightly", True) is True, "a second pause"
        assert pauser.set_recurring_paused("nightly", False) is True
        assert paused_ids(store) == {"hourly": False, "nightly": False}

    @contract("recurring-pause", Level.ADVANCED)
    def test_saving_a_paused_schedule_again_keeps_it_paused(self, store: JobStore) -> None:
        """A paused schedule saved again with a new cron (a redeploy: every worker saves
        its definitions at start) stays paused and takes the new cron; deleted and saved
        anew it starts unpaused. Its fire records survive the pause.

        On failure: the upsert of ``save_recurring`` must leave the paused flag out of what
        it replaces (a new row starts unpaused), and the pause must not touch fires.
        """
        pauser = pausing_store(store)
        store.save_recurring(schedule("nightly"))
        assert store.skip_recurring_fire("nightly", FIRE)
        assert pauser.set_recurring_paused("nightly", True)
        store.save_recurring(schedule("nightly", cron="0 3 * * *"))
        [saved] = store.list_recurring()
        assert (saved.cron, saved.paused) == ("0 3 * * *", True), saved
        assert store.last_recurring_fire("nightly") == FIRE
        assert store.delete_recurring("nightly")
        store.save_recurring(schedule("nightly"))
        assert paused_ids(store) == {"nightly": False}, "a new schedule inherited a pause"

    @contract("recurring-pause", Level.ADVANCED)
    def test_pausing_an_unknown_schedule_answers_false_and_writes_nothing(
        self, store: JobStore
    ) -> None:
        """``set_recurring_paused`` of an id no schedule has answers ``False``; the saved
        schedules are unchanged and no schedule appears.

        On failure: the write must be an UPDATE of the named schedule (not an upsert),
        answering whether it matched a row.
        """
        pauser = pausing_store(store)
        store.save_recurring(schedule("nightly"))
        assert pauser.set_recurring_paused("weekly", True) is False
        assert pauser.set_recurring_paused("nightly-2", False) is False
        assert paused_ids(store) == {"nightly": False}
