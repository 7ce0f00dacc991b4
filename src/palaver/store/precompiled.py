"""Core statements of the hot paths, compiled once per dialect and sent as the driver's SQL.

`Connection.execute` of a Core statement builds an execution context around its compiled form
for every call (parameters checked against the compiled binds, types' processors looked up,
a result set up for the statement's kind): on SQLite that cost a post more CPU than SQLite's
own work, insert, full-text index and unread counts together (docs/NOTES.md, "Hot paths and
caches"). `Precompiled` keeps the statement's text and the order and processors of its binds
per dialect, and sends the values through `exec_driver_sql`, which still fires the engine's
events (the debug hooks' statement counts, the traces' SQL spans). The statement stays one
Core definition for SQLite and PostgreSQL.

Only statements whose binds are all plain named `bindparam`s (no expanding `IN` lists, no
literal binds) and whose results, if any, need no type processing (ids, counts) are taken.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, CursorResult, Dialect
from sqlalchemy.sql import ClauseElement


@dataclass(frozen=True)
class _Plan:
    sql: str
    binds: tuple[tuple[str, Callable[[Any], Any] | None], ...]
    """Each bind given at `execute`: its name and its type's processor, in the SQL's order."""
    constants: dict[int, tuple[str, Any]]
    """The values of the statement's own literals (`unread_count + 1`), by their place,
    processed already."""
    positional: bool


class Precompiled:
    def __init__(self, statement: ClauseElement) -> None:
        self.statement = statement
        self._plans: dict[Dialect, _Plan] = {}

    def execute(self, conn: Connection, values: Mapping[str, Any]) -> CursorResult[Any]:
        plan = self._plans.get(conn.dialect)
        if plan is None:
            plan = self._plans[conn.dialect] = self._plan(conn.dialect)
        bound = [
            (name, values[name] if process is None else process(values[name]))
            for name, process in plan.binds
        ]
        for place, (name, value) in plan.constants.items():
            bound.insert(place, (name, value))
        if plan.positional:
            return conn.exec_driver_sql(plan.sql, tuple(value for _, value in bound))
        return conn.exec_driver_sql(plan.sql, dict(bound))

    def _plan(self, dialect: Dialect) -> _Plan:
        compiled: Any = self.statement.compile(dialect=dialect)
        binds = compiled.binds
        for bind in binds.values():
            if bind.expanding or bind.literal_execute:
                raise ValueError(f"{bind.key}: only plain binds can be precompiled")
        names = compiled.positiontup if compiled.positional else list(binds)
        given: list[tuple[str, Callable[[Any], Any] | None]] = []
        constants: dict[int, tuple[str, Any]] = {}
        for place, name in enumerate(names):
            bind = binds[name]
            # The dialect's own form of the type: a TypeDecorator's bare `bind_processor` would
            # skip its implementation's (SQLite's text form of a time).
            process = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if bind.required:
                given.append((name, process))
            else:
                value = bind.effective_value
                constants[place] = (name, value if process is None else process(value))
        return _Plan(compiled.string, tuple(given), constants, compiled.positional)
