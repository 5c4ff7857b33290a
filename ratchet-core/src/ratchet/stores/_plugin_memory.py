"""Entry point of the built-in ``memory://`` store. Import-light: no SQLite code loads here."""

from __future__ import annotations

from ratchet.plugins import JobStorePlugin, hookimpl


@hookimpl
def ratchet_job_stores() -> list[JobStorePlugin]:
    return [
        JobStorePlugin(
            name="memory",
            url_schemes=("memory",),
            factory="ratchet.stores.sqlite.store:SQLiteJobStore.from_memory_url",
            package="ratchet-core",
            schema="ratchet.stores.sqlite.store:schema_sql",
            description="In-memory, one process, nothing persisted; for tests.",
        )
    ]
