"""The copyable store template in docs/ stays in step with the JobStore spec."""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

from ratchet.spi import JobStore

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


def test_template_methods_have_the_spec_signatures() -> None:
    """Every abstract method of the template has the spec's exact signature, so a new
    parameter of the spec (``start_now=``, ``count_attempt=``) cannot be forgotten."""
    sys.path.insert(0, str(TEMPLATE / "src"))
    try:
        template = importlib.import_module("ratchet_store_example.store").ExampleJobStore
        differ = {
            name: (str(inspect.signature(getattr(JobStore, name))), str(inspect.signature(method)))
            for name in sorted(JobStore.__abstractmethods__)
            if inspect.signature(method := getattr(template, name))
            != inspect.signature(getattr(JobStore, name))
        }
        assert differ == {}
    finally:
        sys.path.remove(str(TEMPLATE / "src"))
