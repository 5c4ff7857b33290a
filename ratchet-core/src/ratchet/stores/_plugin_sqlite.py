"""Entry point of the built-in ``sqlite://`` store. Import-light: no SQLite code loads here."""

from __future__ import annotations

from ratchet.plugins import JobStorePlugin, hookimpl


@hookimpl
def ratchet_job_stores() -> list[JobStorePlugin]:
    return [
        JobStorePlugin(
            name="sqlite",
            url_schemes=("sqlite",),
            factory="ratchet.stores.sqlite.store:SQLiteJobStore.from_url",
            package="ratchet-core",
            schema="ratchet.stores.sqlite.store:schema_sql",
            # The conformance kit's own module: core does not depend on ratchet-tck.
            tck_harness="ratchet_tck.store.sqlite_harness:SQLiteStoreHarness",
            description="Embedded SQLite file: persistent, safe for several processes on one host.",
        )
    ]
