"""Checks and fixtures a coordinator package's own tests share: its server setting, its
plugin record, its selection by configuration, and a start while the server is down.

Not contracts of :class:`~ratchet_tck.ClusterCoordinatorSuite` (they go through
``Ratchet()`` and the plugin's settings, which the suite does not know): each takes the
coordinator's own facts (its plugin name, its class, its variables) as arguments, so a
package says them in one place and the check is written once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from ratchet import Ratchet, RatchetOptions
from ratchet.errors import ConfigurationError
from ratchet.plugins import PluginRegistry
from ratchet.spi import ClusterCoordinator
from ratchet_tck.coordinator._base import CoordinatorHarness, RecordingListener
from ratchet_tck.coordinator.services import SERVICES_SCRIPT_VARIABLE
from ratchet_tck.relay import TcpRelay

__all__ = [
    "assert_a_url_of_another_scheme_is_refused",
    "assert_available_only_when_configured",
    "assert_coordinator_plugin",
    "assert_factory_names_its_missing_setting",
    "assert_loading_plugins_does_not_import",
    "assert_ready_means_subscribed",
    "assert_selected_by_configuration",
    "assert_starts_without_waiting_for_a_server_that_is_down",
    "assert_unreachable_server_never_blocks",
    "hand_services_script",
    "harness_fixture",
    "refused_settings",
    "relayed_url",
    "server_fixture",
]


def server_fixture(variable: str, advice: str) -> Any:
    """A fixture returning the variable ``variable`` (a server's URL or members), skipping
    the test with ``variable is not set: advice`` when it is unset or blank."""

    @pytest.fixture
    def server() -> str:
        value = os.environ.get(variable, "").strip()
        if not value:
            pytest.skip(f"{variable} is not set: {advice}")
        return value

    return server


def harness_fixture(harness_class: Callable[[str], CoordinatorHarness], server: str) -> Any:
    """The ``coordinator_harness`` fixture of a suite class: ``harness_class`` built with
    the value of the fixture named ``server``, closed after the test."""

    @pytest.fixture
    def coordinator_harness(self: object, request: pytest.FixtureRequest) -> Iterator[Any]:
        harness = harness_class(request.getfixturevalue(server))
        yield harness
        harness.close()

    return coordinator_harness


def hand_services_script(named: str, default: Path) -> None:
    """Hand the harnesses the script that may restart servers, as ``ratchet-tck certify
    --services-script`` does (``RATCHET_TCK_SERVICES_SCRIPT``): ``named`` when given
    (``none`` forbids restarts), else ``default`` unless the variable is set already. Call
    it in ``conftest.py``, before the test modules import the harness."""
    if named.strip():
        os.environ[SERVICES_SCRIPT_VARIABLE] = named.strip()
    else:
        os.environ.setdefault(SERVICES_SCRIPT_VARIABLE, str(default))


def refused_settings(refused: Mapping[str, Iterable[str]]) -> list[tuple[str, str]]:
    """``(variable, value)`` pairs, in order, from ``{variable: values}``: the parameters of
    a test that each value of a variable is refused."""
    return [(variable, value) for variable, values in refused.items() for value in values]


def assert_available_only_when_configured(
    availability: Callable[[RatchetOptions, Any], str | None],
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    *,
    blank: str | None = None,
) -> None:
    """``availability`` (the plugin's check) says ``variable is not set`` while it is unset
    (or ``blank``), and nothing once it holds ``value``."""
    not_set = f"{variable} is not set"
    monkeypatch.delenv(variable, raising=False)
    assert availability(RatchetOptions.from_env(), None) == not_set
    if blank is not None:
        monkeypatch.setenv(variable, blank)
        assert availability(RatchetOptions.from_env(), None) == not_set
    monkeypatch.setenv(variable, value)
    assert availability(RatchetOptions.from_env(), None) is None


def assert_factory_names_its_missing_setting(
    factory: Callable[[RatchetOptions, Any, str], object],
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
) -> None:
    """Without ``variable``, the plugin ``factory`` raises ConfigurationError saying so."""
    monkeypatch.delenv(variable, raising=False)
    with pytest.raises(ConfigurationError, match=f"{variable} is not set"):
        factory(RatchetOptions.from_env(), None, "node-a")


def assert_coordinator_plugin(name: str, *, rank: int, package: str, tck_harness: str) -> None:
    """The coordinator plugin ``name`` is registered (entry point group ``ratchet``) with
    this rank, package and kit harness."""
    plugins = {c.name: c for c in PluginRegistry.load().coordinator_plugins()}
    plugin = plugins[name]
    assert (plugin.rank, plugin.package, plugin.tck_harness) == (rank, package, tck_harness)


def assert_loading_plugins_does_not_import(client: str, *, registered: str | None = None) -> None:
    """Loading every plugin (as ``Ratchet()`` and ``ratchet plugins`` do, in a fresh
    interpreter) registers the coordinator ``registered`` without importing the module
    ``client``: the entry point is import-light."""
    code = (
        "import json, sys\n"
        "from ratchet.plugins import PluginRegistry\n"
        "names = [c.name for c in PluginRegistry.load().coordinator_plugins()]\n"
        f"print(json.dumps({{'registered': {registered!r} in names, "
        f"'imported': {client!r} in sys.modules}}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found == {"registered": registered is not None, "imported": False}, found


def assert_selected_by_configuration(
    monkeypatch: pytest.MonkeyPatch,
    coordinator_class: type[ClusterCoordinator],
    environment: Mapping[str, str],
    check: Callable[[Any], object] = lambda coordinator: None,
) -> None:
    """With ``environment`` set and no ``RATCHET_COORDINATOR``, ``Ratchet()`` picks a
    ``coordinator_class``, which connects in the background (ready within 10 s); ``check``
    then looks at it."""
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("RATCHET_COORDINATOR", raising=False)
    app = Ratchet("memory://")
    try:
        assert isinstance(app.coordinator, coordinator_class), app.coordinator
        coordinator: Any = app.coordinator  # a broadcast coordinator: wait_until_ready
        assert coordinator.wait_until_ready(10)  # connects in the background
        check(coordinator)
    finally:
        app.close()


def assert_ready_means_subscribed(
    create: Callable[[str], ClusterCoordinator], *, rounds: int = 5
) -> None:
    """A coordinator from ``create(node_id)`` is subscribed when it is returned: a hint sent
    right after never goes missing, in each of ``rounds`` rounds with a new receiver."""
    sender = create("sender")
    try:
        for round_ in range(rounds):
            receiver = create(f"receiver-{round_}")
            listener = RecordingListener()
            receiver.register_wakeup_listener(listener)
            try:
                sender.notify_new_work(3, "sender", None)
                assert listener.wait_for(1, 5), f"round {round_}: the first hint was lost"
            finally:
                receiver.close()
    finally:
        sender.close()


def assert_unreachable_server_never_blocks(
    open_coordinator: Callable[[], Any], *, notifies: int, within: float
) -> Any:
    """A coordinator from ``open_coordinator()`` (on a port nobody listens on, with a short
    connect timeout) is returned not ready, treats each of ``notifies`` hints as a counted
    transport failure (nothing sent, no error), and closes (twice, idempotently), all
    within ``within`` seconds. Returns the closed coordinator for further checks."""
    started = time.monotonic()
    coordinator = open_coordinator()
    try:
        assert not coordinator.ready
        for _ in range(notifies):
            coordinator.notify_new_work(2, "node-a", None)
        metrics = coordinator.metrics()
        assert (metrics.sent, metrics.transport_failures) == (0, notifies)
    finally:
        coordinator.close()
    coordinator.close()
    assert time.monotonic() - started < within
    return coordinator


def relayed_url(url: str, relay: TcpRelay) -> str:
    """``url`` pointed at ``relay`` on 127.0.0.1 (user and password, path and query kept)."""
    parts = urlsplit(url)
    userinfo, at, _hostport = parts.netloc.rpartition("@")
    return parts._replace(netloc=f"{userinfo}{at}127.0.0.1:{relay.port}").geturl()


def assert_starts_without_waiting_for_a_server_that_is_down(
    monkeypatch: pytest.MonkeyPatch,
    harness: CoordinatorHarness,
    url_variable: str,
    settings: Mapping[str, str] | None = None,
) -> None:
    """``Ratchet()`` configured as the harness's worker process is (its
    :meth:`~ratchet_tck.CoordinatorHarness.worker_process`, plus ``settings``), but with the
    server URL in ``url_variable`` pointed at a relay that refuses connections, returns at
    once with a coordinator that says it is not ready; once the relay lets the server
    through, the coordinator gets ready in the background (within 30 s) and delivers a hint
    from a coordinator of the harness (within 10 s)."""
    worker = harness.worker_process()
    server_url = worker.environment[url_variable]
    parts = urlsplit(server_url)
    assert parts.port is not None, f"{url_variable}={server_url!r} names no port to relay"
    late = TcpRelay((parts.hostname or "127.0.0.1", parts.port), listening=False)
    try:
        environment = {**worker.environment, **(settings or {})}
        environment[url_variable] = relayed_url(server_url, late)
        monkeypatch.setenv("RATCHET_COORDINATOR", worker.coordinator)
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        app = Ratchet("memory://")
        try:
            coordinator: Any = app.coordinator  # a broadcast coordinator: ready, wait_until_ready
            assert type(coordinator).__name__ == worker.coordinator_class, coordinator
            assert not coordinator.ready
            listener = RecordingListener()
            coordinator.register_wakeup_listener(listener)
            late.restore()
            assert coordinator.wait_until_ready(30), "never ready once the server was up"
            harness.create("sender").notify_new_work(3, "sender", None)
            assert listener.wait_for_hint_from("sender", 10), "the hint never arrived"
        finally:
            app.close()
    finally:
        late.close()


def assert_a_url_of_another_scheme_is_refused(
    monkeypatch: pytest.MonkeyPatch, plugin: str, variable: str, url: str
) -> None:
    """``Ratchet()`` with the coordinator ``plugin`` and ``variable`` set to ``url`` (of a
    scheme the coordinator does not take, with the password ``s3cret``) raises
    ConfigurationError naming the scheme, without the password."""
    scheme = urlsplit(url).scheme
    monkeypatch.setenv("RATCHET_COORDINATOR", plugin)
    monkeypatch.setenv(variable, url)
    with pytest.raises(ConfigurationError, match=f"scheme {scheme!r}") as raised:
        Ratchet("memory://")
    assert "s3cret" not in str(raised.value)
