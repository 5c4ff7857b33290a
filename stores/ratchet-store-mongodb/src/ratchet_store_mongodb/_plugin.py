"""Entry point of the ``mongodb://`` store. Import-light: pymongo loads only when chosen."""

from __future__ import annotations

from ratchet.plugins import JobStorePlugin, hookimpl


@hookimpl
def ratchet_job_stores() -> list[JobStorePlugin]:
    return [
        JobStorePlugin(
            name="mongodb",
            url_schemes=("mongodb", "mongodb+srv"),
            factory="ratchet_store_mongodb.store:MongoDBJobStore.from_url",
            package="ratchet-store-mongodb",
            description=(
                "MongoDB 6+ or FerretDB 1.24 (pymongo): claims and outcomes fenced by "
                "unique inserts, collections and indexes created at start-up."
            ),
        )
    ]
