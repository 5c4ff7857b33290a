"""Entry point module: import-light, names the store by string so it loads only when chosen."""

from __future__ import annotations

from ratchet.plugins import JobStorePlugin, hookimpl


@hookimpl
def ratchet_job_stores() -> list[JobStorePlugin]:
    return [
        JobStorePlugin(
            name="example",
            url_schemes=("example",),
            factory="ratchet_store_example.store:ExampleJobStore.from_url",
            package="ratchet-store-example",
            description="Example DB",
        )
    ]
