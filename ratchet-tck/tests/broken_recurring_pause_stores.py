"""The mutation catalogue, pausing recurring schedules (``SupportsRecurringPause``).

Each store changes one statement (or one step) of the embedded store's
``set_recurring_paused``, ``save_recurring`` or ``list_recurring``, the way a store
author's one-line mistake would; ``test_kit_can_fail.py`` names the contract test that
must catch it.
"""

from __future__ import annotations

from broken_queue_stores import changed

from ratchet.stores.sqlite.store import SQLiteJobStore
from ratchet.stores.sqlite.testing import statements as sql


class RedeployUnpausesStore(SQLiteJobStore):
    """Resets the flag in the upsert of ``save_recurring``: every worker start (which saves
    its ``@app.recurring`` definitions) resumes the paused schedules."""

    statements = SQLiteJobStore.statements.replacing(
        save_recurring=changed(
            sql.SAVE_RECURRING, "source = excluded.source,", "source = excluded.source, paused = 0,"
        )
    )


class PauseEveryScheduleStore(SQLiteJobStore):
    """Forgets the schedule's id in the UPDATE: pausing one schedule pauses them all."""

    statements = SQLiteJobStore.statements.replacing(
        set_recurring_paused=changed(sql.SET_RECURRING_PAUSED, " WHERE id = :id", "") + "\n-- :id"
    )


class PauseAnswersTrueStore(SQLiteJobStore):
    """Answers ``True`` whatever the UPDATE matched: pausing a schedule that does not
    exist looks like it worked."""

    def set_recurring_paused(self, recurring_id: str, paused: bool) -> bool:
        super().set_recurring_paused(recurring_id, paused)
        return True


class PauseNeverReadBackStore(SQLiteJobStore):
    """Reads the schedules without the flag: a pause is written but no scheduler sees it."""

    statements = SQLiteJobStore.statements.replacing(
        select_recurring=changed(sql.SELECT_RECURRING, ", paused FROM", " FROM")
    )
