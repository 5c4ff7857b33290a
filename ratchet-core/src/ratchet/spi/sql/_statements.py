"""Named SQL statements kept in ``.sql`` files.

A store's static SQL lives in a ``.sql`` file of its package, one statement per block::

    -- name: complete_job
    -- Fenced by id, RUNNING and claim_seq: a stale worker changes nothing.
    UPDATE ratchet_job SET status = 'SUCCEEDED', ...
    WHERE id = :id AND status = 'RUNNING' AND claim_seq = :claim_seq;

A block starts at a ``-- name: <identifier>`` line and runs to the next one; the comment
lines right under the name are its documentation (kept out of the statement), one trailing
``;`` is dropped, and comment lines after a statement (section headings) belong to none.
Placeholders are the driver's own (``:id`` for sqlite3, ``%(id)s`` for psycopg and
PyMySQL). Pieces generated in Python (the per-priority unions of a claim) are
passed as ``fragments`` and fill ``{{name}}`` markers when the file is loaded, so every
statement is complete text after loading; ``{ids}`` is left for an IN list filled at run
time (:meth:`ratchet.spi.sql.SQLSession.execute_in`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from importlib.resources import files

__all__ = ["Statements"]

_NAME = re.compile(r"^--\s*name:\s*([A-Za-z_][A-Za-z0-9_]*)\s*$")
_FRAGMENT = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}")


class Statements(Mapping[str, str]):
    """The statements of one ``.sql`` file, by name. Immutable once loaded."""

    def __init__(self, statements: Mapping[str, str], *, source: str) -> None:
        self._statements = dict(statements)
        self.source = source

    @classmethod
    def parse(
        cls, text: str, *, source: str, fragments: Mapping[str, str] | None = None
    ) -> Statements:
        """Statements from the text of a ``.sql`` file. ValueError naming ``source`` and
        the line for text before the first name, a name used twice, an empty statement,
        a ``{{fragment}}`` not given, or a fragment no statement uses."""
        given = dict(fragments or {})
        used: set[str] = set()
        blocks: dict[str, list[str]] = {}
        current: list[str] | None = None
        in_doc = False
        for number, line in enumerate(text.splitlines(), 1):
            named = _NAME.match(line.strip())
            if named:
                name = named.group(1)
                if name in blocks:
                    raise ValueError(f"{source}:{number}: statement {name!r} is defined twice.")
                current = blocks[name] = []
                in_doc = True
                continue
            stripped = line.strip()
            if current is None:
                if stripped and not stripped.startswith("--"):
                    raise ValueError(
                        f"{source}:{number}: SQL before the first '-- name: ...' line."
                    )
                continue
            if in_doc and stripped.startswith("--"):
                continue  # the statement's documentation
            in_doc = False
            current.append(line)
        statements: dict[str, str] = {}
        for name, lines in blocks.items():
            while lines and (not lines[-1].strip() or lines[-1].strip().startswith("--")):
                lines.pop()  # comments after a statement belong to what follows
            body = "\n".join(lines).strip()
            if body.endswith(";"):
                body = body[:-1].rstrip()
            if not body:
                raise ValueError(f"{source}: statement {name!r} is empty.")

            def fill(match: re.Match[str], name: str = name) -> str:
                fragment = match.group(1)
                if fragment not in given:
                    raise ValueError(
                        f"{source}: statement {name!r} uses {{{{{fragment}}}}}, which the "
                        "store does not supply."
                    )
                used.add(fragment)
                return given[fragment]

            statements[name] = _FRAGMENT.sub(fill, body)
        unused = sorted(set(given) - used)
        if unused:
            raise ValueError(f"{source}: fragments {unused} are used by no statement.")
        return cls(statements, source=source)

    @classmethod
    def load(
        cls, package: str, filename: str, *, fragments: Mapping[str, str] | None = None
    ) -> Statements:
        """The statements of ``filename`` shipped inside ``package`` (read with
        importlib.resources, so it works from a wheel or a zip)."""
        text = files(package).joinpath(filename).read_text(encoding="utf-8")
        return cls.parse(text, source=f"{package}/{filename}", fragments=fragments)

    def replacing(self, **texts: str) -> Statements:
        """A copy with the statements named in ``texts`` replaced (each must exist): how a
        test store breaks one guard, or a backend variant changes one statement."""
        unknown = sorted(set(texts) - set(self._statements))
        if unknown:
            raise KeyError(f"No statements {unknown} in {self.source} to replace.")
        return Statements({**self._statements, **texts}, source=self.source)

    def __getitem__(self, name: str) -> str:
        try:
            return self._statements[name]
        except KeyError:
            raise KeyError(
                f"No statement {name!r} in {self.source}; it has {sorted(self._statements)}."
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._statements)

    def __len__(self) -> int:
        return len(self._statements)
