"""Entry point of the ``mysql://`` store. Import-light: PyMySQL loads only when chosen."""

from __future__ import annotations

from ratchet.plugins import JobStorePlugin, hookimpl


@hookimpl
def ratchet_job_stores() -> list[JobStorePlugin]:
    return [
        JobStorePlugin(
            name="mysql",
            url_schemes=("mysql", "mysql+pymysql"),
            factory="ratchet_store_mysql.store:MySQLJobStore.from_url",
            package="ratchet-store-mysql",
            schema="ratchet_store_mysql.schema:schema_sql",
            tck_harness="ratchet_store_mysql.harness:MySQLStoreHarness",
            description=(
                "MySQL 8.0.16+ / MariaDB 10.6+ (PyMySQL): a cluster of nodes on one "
                "database, SKIP LOCKED claims, transactional enqueue."
            ),
        )
    ]
