"""Security (issue #15, points 1 to 4): the allowlist checks the object actually called;
secrets are masked and control characters escaped wherever text leaves the process; the
embedded store's files are private."""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import ratchet
from conftest import FAST
from ratchet import JobStatus, Ratchet
from ratchet._logs import SafeRecordFilter
from ratchet._printable import printable
from ratchet._redact import redact
from ratchet._types import NewJob
from ratchet.cli import main
from ratchet.spi import ModuleAllowlistClassPolicy

ESC = "\x1b"

# -- 1. the allowlist checks the object that is called ------------------------------------

OUTSIDE = """
from pathlib import Path

def dangerous(marker):
    Path(marker).write_text("dangerous ran")
    return "dangerous ran"

class Gadget:
    def __init__(self, marker):
        Path(marker).write_text("Gadget ran")

class Base:
    @staticmethod
    def inherited(marker):
        Path(marker).write_text("inherited ran")
        return "inherited ran"
"""

HELPERS = """
import os
import subprocess
from pathlib import Path

from {outside} import Base, Gadget, dangerous

class Service:
    def __init__(self):
        pass

    @classmethod
    def build(cls, marker):
        Path(marker).write_text("built")
        return "built"

class Sub(Base):
    pass

def genuine(marker):
    Path(marker).write_text("genuine ran")
    return "genuine ran"
"""


@pytest.fixture
def helpers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An allowed module ``helpers`` (unique name) importing ``os``, ``subprocess`` and
    the functions and classes of a module that is not allowed."""
    suffix = uuid.uuid4().hex[:8]
    outside, name = f"sec_outside_{suffix}", f"sec_helpers_{suffix}"
    (tmp_path / f"{outside}.py").write_text(OUTSIDE)
    (tmp_path / f"{name}.py").write_text(HELPERS.format(outside=outside))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for module in (name, outside):
        sys.modules.pop(module, None)


def run_stored_job(app: Ratchet, target: str, args: list[object], kwargs: dict[str, object]) -> str:
    """Store a job as any producer could (no registration), run the worker, return its id."""
    job_id = uuid.uuid4().hex
    app.store.enqueue(
        NewJob(
            id=job_id,
            name=target,
            target=target,
            args_json=json.dumps(args),
            kwargs_json=json.dumps(kwargs),
            max_retries=0,
        )
    )
    app.run_until_idle(timeout=30)
    return job_id


@pytest.mark.parametrize(
    ("attribute", "why"),
    [
        ("os.system", "through the module os"),
        ("subprocess.run", "through the module subprocess"),
        ("dangerous", "a function re-exported from a module that is not allowed"),
        ("Gadget", "a class from a module that is not allowed"),
        ("Sub.inherited", "an allowed class's method inherited from a foreign class"),
    ],
)
def test_an_allowed_module_does_not_lend_its_imports(
    helpers: str, tmp_path: Path, attribute: str, why: str
) -> None:
    """Look at ratchet._engine.targets: every object the qualname reaches is checked (not
    a module; defined inside the allowlist) before it is called."""
    marker = tmp_path / "marker"
    args: list[object] = [str(marker)]
    if attribute == "os.system":
        args = [f"touch {marker}"]
    elif attribute == "subprocess.run":
        args = [["touch", str(marker)]]
    app = Ratchet("memory://", allowed_modules=helpers, **FAST)
    try:
        job_id = run_stored_job(app, f"{helpers}:{attribute}", args, {})
        job = app.get_job(job_id)
    finally:
        app.close()
    assert job is not None
    assert job.status is JobStatus.FAILED, why
    assert "TargetNotAllowedError" in (job.last_error or ""), job.last_error
    assert not marker.exists(), f"{attribute} ({why}) was called"


@pytest.mark.parametrize(
    "walk",
    ["Service.__init__.__globals__.update", "genuine.__globals__.update", "Service.__dict__.get"],
)
def test_attribute_walks_out_of_an_allowed_class_are_refused(helpers: str, walk: str) -> None:
    """A walk through a function's __globals__ (or a class's __dict__) reaches a builtin
    whose definition cannot be named: refused before it is called."""
    app = Ratchet("memory://", allowed_modules=helpers, **FAST)
    try:
        job_id = run_stored_job(app, f"{helpers}:{walk}", [], {"PWNED": True})
        job = app.get_job(job_id)
    finally:
        app.close()
    assert job is not None and job.status is JobStatus.FAILED
    assert "TargetNotAllowedError" in (job.last_error or "")
    assert not hasattr(sys.modules[helpers], "PWNED"), "the module's globals were rewritten"


@pytest.mark.parametrize(
    ("attribute", "result"), [("genuine", "genuine ran"), ("Service.build", "built")]
)
def test_functions_defined_in_an_allowed_module_still_run(
    helpers: str, tmp_path: Path, attribute: str, result: str
) -> None:
    marker = tmp_path / "marker"
    app = Ratchet("memory://", allowed_modules=helpers, **FAST)
    try:
        job_id = run_stored_job(app, f"{helpers}:{attribute}", [str(marker)], {})
        job = app.get_job(job_id)
    finally:
        app.close()
    assert job is not None and job.status is JobStatus.SUCCEEDED, job and job.last_error
    assert job.result == result and marker.exists()


def test_the_allowlist_policy_checks_definitions() -> None:
    policy = ModuleAllowlistClassPolicy(["helpers", "billing"])
    assert policy.is_allowed("helpers:os.system")  # the string alone looks allowed …
    assert not policy.is_allowed_definition("posix:system")  # … the object is not
    assert policy.is_allowed_definition("billing.tasks:Invoice.send")
    assert not policy.is_allowed_definition("billingx:run")


def test_a_class_policy_without_a_definition_check_is_refused_at_construction() -> None:
    class StringOnly:
        def is_allowed(self, target: str) -> bool:
            return True

    with pytest.raises(TypeError, match="has no is_allowed_definition"):
        Ratchet("memory://", class_policy=StringOnly(), **FAST)  # type: ignore[arg-type]


# -- 2. secrets are masked wherever text leaves the process --------------------------------

REDACTIONS = [
    ("postgresql://u:pa/ss@h/db", "postgresql://u:***@h/db"),
    ("mysql://root:p@ss@x/db", "mysql://root:***@x/db"),
    ("redis://:s3cret@cache:6379/0", "redis://:***@cache:6379/0"),
    ("postgresql://app:s3cret@db/x", "postgresql://app:***@db/x"),
    ("PGPASSWORD=hunter2 psql -h db", "PGPASSWORD=*** psql -h db"),
    ("password=hunter2 at the start", "password=*** at the start"),
    (
        "env: DB_PASSWORD=abc MYSQL_ROOT_PASSWORD='x y' ok",
        "env: DB_PASSWORD=*** MYSQL_ROOT_PASSWORD=*** ok",
    ),
    (
        "host=db passwd=a pwd=b secret=c token=d api_key=e",
        "host=db passwd=*** pwd=*** secret=*** token=*** api_key=***",
    ),
    ("https://x/cb?code=1&token=abc&state=2", "https://x/cb?code=1&token=***&state=2"),
    ("call(password='hunter2', user='bob')", "call(password=***, user='bob')"),
    ("{'password': 'hunter2', 'n': 1}", "{'password': '***', 'n': 1}"),
    ('{"api_key": "k-123", "n": 1}', '{"api_key": "***", "n": 1}'),
    ("mail alice.b+x@example.co.uk please", "mail ***@example.co.uk please"),
    ("mysql://me@corp.com:pw@host/db", "mysql://***@corp.com:***@host/db"),
    # left alone: no secret in them
    ("stomp://guest@broker:61613", "stomp://guest@broker:61613"),
    ("http://example.com:8080/path", "http://example.com:8080/path"),
    ("if token == expected:", "if token == expected:"),
    (
        "mongodb://db/x?authSource=admin&password=s3cret&tls=true",
        "mongodb://db/x?authSource=admin&password=***&tls=true",
    ),
]


@pytest.mark.parametrize(("text", "masked"), REDACTIONS)
def test_redact(text: str, masked: str) -> None:
    assert redact(text) == masked
    assert redact(masked) == masked  # idempotent


def test_the_job_logger_masks_secrets_and_escapes_controls(
    app: Ratchet, caplog: pytest.LogCaptureFixture
) -> None:
    """Look at ratchet._logs: the job logger must come from get_logger (SafeRecordFilter)."""

    @app.job
    def chatty() -> None:
        logger = ratchet.current_job().logger
        logger.warning("connecting to %s", "postgresql://u:pa/ss@h/db")
        logger.warning("PGPASSWORD=hunter2 psql; notify %s", "alice@example.com")
        logger.warning("mysql://root:p@ss@x/db")
        logger.warning("value: %s", f"{ESC}[2J\nINFO ratchet.worker: all jobs SUCCEEDED")
        try:
            raise RuntimeError("login failed, password=hunter2")
        except RuntimeError:
            logger.exception("it broke")

    chatty.enqueue()
    with caplog.at_level(logging.INFO, logger="ratchet"):
        app.run_until_idle(timeout=30)
    records = [r for r in caplog.records if r.name.startswith("ratchet.job.")]
    assert len(records) == 5
    text = caplog.text
    for secret in ("pa/ss", "hunter2", "p@ss", "alice@"):
        assert secret not in text
    assert ESC not in text
    assert "\\x1b[2J\\nINFO ratchet.worker" in text  # shown, on the same line


def test_engine_logs_and_stored_errors_mask_secrets_and_escape_controls(
    app: Ratchet, caplog: pytest.LogCaptureFixture
) -> None:
    @app.job(max_retries=0)
    def leaky() -> None:
        raise RuntimeError(f"PGPASSWORD=hunter2 failed for postgresql://u:pa/ss@h/db {ESC}[2J")

    job_id = leaky.enqueue()
    with caplog.at_level(logging.INFO, logger="ratchet"):
        app.run_until_idle(timeout=30)
    job = app.get_job(job_id)
    assert job is not None and job.status is JobStatus.FAILED
    stored = job.last_error or ""
    assert "hunter2" not in stored and "pa/ss" not in stored and "PGPASSWORD=***" in stored
    dead_letter = [r.getMessage() for r in caplog.records if "dead-letter" in r.getMessage()]
    assert dead_letter, caplog.text
    for line in dead_letter:
        assert "hunter2" not in line and "pa/ss" not in line and ESC not in line


def test_every_ratchet_logger_is_taken_from_get_logger() -> None:
    """A logger's filter does not apply to its children, so a module that creates a
    ``ratchet.*`` logger with logging.getLogger logs unmasked: use ratchet._logs.get_logger
    (plugins: ratchet.spi.get_logger)."""
    root = Path(__file__).resolve().parents[2]
    sources = [
        path
        for folder in ("ratchet-core/src", "ratchet-tck/src", "stores", "coordinators")
        for path in (root / folder).rglob("*.py")
        if "/tests/" not in path.as_posix() and path.name != "_logs.py"
    ]
    assert len(sources) > 20
    offenders = []
    for path in sources:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"logging\.getLogger\(", line) and ".setLevel(" not in line:
                offenders.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_the_filter_formats_templates_and_arguments_safely() -> None:
    record = logging.LogRecord(
        "ratchet.job.x", logging.INFO, __file__, 1, "tries %d, %s: %r", (3, "a\nb", "c\x1b"), None
    )
    SafeRecordFilter().filter(record)
    assert record.getMessage() == "tries 3, a\\nb: 'c\\x1b'"
    mapping = logging.LogRecord(
        "ratchet",
        logging.INFO,
        __file__,
        1,
        "%(user)s password=%(pw)s",
        ({"user": "u", "pw": "x"},),
        None,
    )
    SafeRecordFilter().filter(mapping)
    assert mapping.getMessage() == "u password=***"


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RATCHET_STORE_URL", f"sqlite:///{tmp_path / 'ratchet.db'}")
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("sec_")]:
        sys.modules.pop(name, None)


def test_the_cli_masks_secrets_when_app_fails_to_import(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "sec_badapp.py").write_text(
        textwrap.dedent("""
        raise RuntimeError(
            "cannot reach postgresql://admin:hunter2@db/x nor postgresql://u:pa/ss@db/y "
            "(PGPASSWORD=s3cret) \\x1b[2J"
        )
        """)
    )
    for argv in (["worker", "sec_badapp:app"], ["jobs", "list", "--app", "sec_badapp:app"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "does not import" in err
        for secret in ("hunter2", "pa/ss", "s3cret"):
            assert secret not in err
        assert ESC not in err and "\\x1b[2J" in err


def test_the_plugins_report_masks_store_errors(
    in_tmp: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ratchet.plugins import PluginRegistry

    if not PluginRegistry.load().coordinator_plugins():
        pytest.skip("the report opens the store only when a coordinator plugin is installed")

    def unreachable(self: PluginRegistry, url: str, **options: object) -> object:
        raise RuntimeError(f"connection to {url} failed; PGPASSWORD=hunter2 was rejected")

    monkeypatch.setattr(PluginRegistry, "create_store", unreachable)
    assert main(["plugins", "--store", "postgresql://u:pa/ss@db/x"]) == 0
    out = capsys.readouterr().out
    assert "could not be opened" in out
    assert "pa/ss" not in out and "hunter2" not in out


# -- 3. control characters are shown, not obeyed ------------------------------------------


def test_printable() -> None:
    assert printable(f"a{ESC}[2Jb\r\u202egnp.exe\u2066") == "a\\x1b[2Jb\\r\\u202egnp.exe\\u2066"
    assert printable("line 1\nline 2\tx", multiline=True) == "line 1\nline 2\tx"
    assert printable("line 1\nline 2\tx") == "line 1\\nline 2\\tx"
    assert printable("\x9b31m\x00\x7f\ud800") == "\\x9b31m\\x00\\x7f\\ud800"
    assert printable("café ☃ \\x1b") == "café ☃ \\x1b"  # text and backslashes untouched


def test_jobs_list_and_show_escape_controls_in_errors_keys_and_tags(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Look at ratchet.cli._output: table cells, fields and the error block go through
    shown(), and every command prints through echo()."""
    app = Ratchet(os.environ["RATCHET_STORE_URL"], **FAST)
    evil = f"{ESC}[2J{ESC}[Hall jobs SUCCEEDED\u202e"

    @app.job(name=f"nasty{ESC}[31m", max_retries=0)
    def nasty(arg: str) -> None:
        raise RuntimeError(f"{evil} {arg}\nsecond line")

    job_id = uuid.uuid4().hex
    app.store.enqueue(
        NewJob(
            id=job_id,
            name=nasty.definition.name,
            target=nasty.definition.target,
            args_json=json.dumps([f"arg{ESC}[2J"]),
            kwargs_json="{}",
            max_retries=0,
            business_key=f"key{ESC}[2J",
            idempotency_key=f"idem{ESC}]0;title\x07",
            tags=(f"tag{ESC}[2j",),
        )
    )
    app.run_until_idle(timeout=30)
    job = app.get_job(job_id)
    app.close()
    assert job is not None and job.status is JobStatus.FAILED
    assert ESC in (job.last_error or "")  # the stored text is raw …

    for argv in (["jobs", "list"], ["dlq", "list"], ["jobs", "show", job_id]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert ESC not in out and "\u202e" not in out and "\x07" not in out, argv
        assert "\\x1b[2J" in out, argv  # … and shown escaped
    assert main(["jobs", "show", job_id]) == 0
    shown = capsys.readouterr().out
    assert "key\\x1b[2J" in shown and "tag\\x1b[2j" in shown and "idem\\x1b]0;title\\x07" in shown
    assert "arg\\x1b[2J\nsecond line" in shown  # the error block keeps its newlines


# -- 4. the embedded store's files are private ---------------------------------------------


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def _modes(database: Path) -> dict[str, int]:
    return {
        suffix: stat.S_IMODE(os.stat(f"{database}{suffix}").st_mode)
        for suffix in ("", "-wal", "-shm")
    }


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_a_new_sqlite_database_and_its_wal_are_owner_only(tmp_path: Path, umask_022: None) -> None:
    """Look at ratchet.stores.sqlite._database.create_owner_only."""
    database = tmp_path / "private.db"
    app = Ratchet(f"sqlite:///{database}", **FAST)
    try:
        app.job(name="noop")(lambda: None).enqueue()
        assert _modes(database) == {"": 0o600, "-wal": 0o600, "-shm": 0o600}
    finally:
        app.close()


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_an_existing_database_keeps_its_mode(tmp_path: Path, umask_022: None) -> None:
    database = tmp_path / "shared.db"
    database.touch()
    database.chmod(0o660)  # shared with a group on purpose
    app = Ratchet(f"sqlite:///{database}", **FAST)
    try:
        app.job(name="noop")(lambda: None).enqueue()
        assert _modes(database) == {"": 0o660, "-wal": 0o660, "-shm": 0o660}
    finally:
        app.close()
