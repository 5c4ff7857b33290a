"""The copyable store template in docs/ stays in step with the JobStore spec."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

TEMPLATE = Path(__file__).parents[2] / "docs" / "store-template"


def test_template_implements_every_spec_method_and_registers() -> None:
    sys.path.insert(0, str(TEMPLATE / "src"))
    try:
        store_module = importlib.import_module("ratchet_store_example.store")
        plugin_module = importlib.import_module("ratchet_store_example._plugin")
        store = store_module.ExampleJobStore.from_url("example://localhost/db")  # no TypeError
        [record] = plugin_module.ratchet_job_stores()
        assert record.url_schemes == ("example",)
        assert record.factory == "ratchet_store_example.store:ExampleJobStore.from_url"
        assert store.describe() == "example://…"
    finally:
        sys.path.remove(str(TEMPLATE / "src"))
