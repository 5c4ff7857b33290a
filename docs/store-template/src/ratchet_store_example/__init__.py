"""A Ratchet job store for Example DB."""

from ratchet_store_example.store import ExampleJobStore

__all__ = ["ExampleJobStore"]
