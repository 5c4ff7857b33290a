"""Checks a store package's own tests make of its plugin, its URLs and its errors.

Not contracts (the kit cannot know a store's URL grammar or its driver): each takes the
store-specific fact as an argument, so a package's test says what its store does in one
line and the check is written once. Every check raises AssertionError (or fails through
``pytest.raises``) with the offending value.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from importlib.metadata import entry_points
from urllib.parse import urlsplit

import pytest

from ratchet.errors import InvalidStoreURLError, StoreUnavailableError
from ratchet.plugins import PluginRegistry
from ratchet.spi import JobStore
from ratchet_tck.store.harness import StoreHarness

__all__ = [
    "assert_bad_url_is_explained",
    "assert_closed_store_refuses_calls",
    "assert_describe_hides_the_password",
    "assert_error_hides_the_password",
    "assert_plugin_is_registered_and_import_light",
    "assert_redacts_both_password_forms",
    "assert_store_offers",
    "assert_unreachable_server_is_unavailable",
    "ratchet_schema_show",
    "refusals",
]


def assert_store_offers(
    store: JobStore, capabilities: Iterable[type], *, hooks: Iterable[str], harness: str
) -> None:
    """``store`` has every capability Protocol in ``capabilities``; the plugin record for its
    URL names ``harness`` as ``tck_harness``, and that class overrides every hook in
    ``hooks`` (the kit reports a contract N/A, and still certifies, when one is missing)."""
    for capability in capabilities:
        assert isinstance(store, capability), capability.__name__
    plugin = PluginRegistry.load().store_plugin_for(store.describe())
    assert plugin.tck_harness == harness, "ratchet-tck certify finds the harness there"
    harness_class = _resolve(harness)
    for hook in hooks:
        assert getattr(harness_class, hook) is not getattr(StoreHarness, hook), hook


def _resolve(reference: str) -> type:
    from ratchet.spi import resolve_reference

    found: type = resolve_reference(reference)
    return found


def assert_plugin_is_registered_and_import_light(
    schemes: Iterable[str], *, name: str, package: str, driver: str
) -> None:
    """One plugin record, ``name`` of ``package``, serves every scheme in ``schemes``; and
    importing the module of the entry point ``name`` (group ``ratchet``) and calling its
    hook does not import the module ``driver``: the heavy one loads only when chosen."""
    registry = PluginRegistry.load()
    first, *others = [registry.store_plugin_for(f"{scheme}://u@h/db") for scheme in schemes]
    assert (first.name, first.package) == (name, package)
    for plugin in others:
        assert plugin is first, plugin
    [entry_point] = entry_points(group="ratchet", name=name)
    code = (
        f"import sys, {entry_point.value} as p; p.ratchet_job_stores(); "
        f"print({driver!r} in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", f"loading {entry_point.value} imported {driver}"


def ratchet_schema_show(name: str) -> str:
    """What ``ratchet schema show NAME`` prints (run as a command)."""
    out = subprocess.run(
        [sys.executable, "-m", "ratchet", "schema", "show", name],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


def refusals(refused: Mapping[str, Iterable[str]]) -> list[tuple[str, str]]:
    """``(url, message)`` pairs, in order, from ``{message: urls}``: the parameters of a
    test of :func:`assert_bad_url_is_explained`."""
    return [(url, message) for message, urls in refused.items() for url in urls]


def assert_bad_url_is_explained(
    parse: Callable[[str], object], url: str, message: str, *, password: str = "hunter2"
) -> None:
    """``parse(url)`` raises InvalidStoreURLError matching ``message``, without ``password``."""
    with pytest.raises(InvalidStoreURLError, match=message) as info:
        parse(url)
    assert password not in str(info.value)


def assert_redacts_both_password_forms(redact: Callable[[str], str], scheme: str) -> None:
    """``redact`` hides a password in the user part and in a ``password=`` parameter."""
    assert redact(f"{scheme}://u:secret@h/db") == f"{scheme}://u:***@h/db"
    assert redact(f"{scheme}://u@h/db?password=secret&x=1") == (
        f"{scheme}://u@h/db?password=***&x=1"
    )


def assert_describe_hides_the_password(store: JobStore, shown: str, *, password: str) -> None:
    """``store.describe()`` (used in logs and reports) is ``shown``, without ``password``;
    the store is closed afterwards."""
    try:
        assert store.describe() == shown
        assert password not in repr(store.describe())
    finally:
        store.close()


def assert_error_hides_the_password(error: BaseException, url: str) -> None:
    """``error``'s message shows neither ``user:password`` nor ``:password@`` of ``url``."""
    parts = urlsplit(url)
    if parts.password:
        for form in (f"{parts.username}:{parts.password}", f":{parts.password}@"):
            assert form not in str(error), "the password leaked into the error"


def assert_unreachable_server_is_unavailable(
    open_store: Callable[[str], object], url: str, shown: str
) -> None:
    """Opening a store on ``url``, where nothing listens, raises StoreUnavailableError whose
    message names the database as ``shown`` and not the password."""
    with pytest.raises(StoreUnavailableError) as info:
        open_store(url)
    password = urlsplit(url).password
    assert password is not None and password not in str(info.value)
    assert shown in str(info.value)


def assert_closed_store_refuses_calls(store: JobStore) -> None:
    """``close()`` is idempotent, and a call on a closed store raises, saying so."""
    store.close()
    store.close()
    with pytest.raises(Exception, match="closed"):
        store.count_jobs()
