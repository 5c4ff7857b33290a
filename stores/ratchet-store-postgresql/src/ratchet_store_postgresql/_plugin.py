"""Entry point of the ``postgresql://`` store. Import-light: psycopg loads only when chosen."""

from __future__ import annotations

from ratchet.plugins import JobStorePlugin, hookimpl


@hookimpl
def ratchet_job_stores() -> list[JobStorePlugin]:
    return [
        JobStorePlugin(
            name="postgresql",
            url_schemes=("postgresql", "postgresql+psycopg"),
            factory="ratchet_store_postgresql.store:PostgreSQLJobStore.from_url",
            package="ratchet-store-postgresql",
            schema="ratchet_store_postgresql.schema:schema_sql",
            tck_harness="ratchet_store_postgresql.harness:PostgreSQLStoreHarness",
            description=(
                "PostgreSQL 14+ (psycopg 3): a cluster of nodes on one database, "
                "SKIP LOCKED claims, transactional enqueue."
            ),
        )
    ]
