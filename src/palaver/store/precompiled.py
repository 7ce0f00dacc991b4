"""Core statements of the hot paths, compiled once per dialect and sent as the driver's SQL.

`Connection.execute` of a Core statement builds an execution context around its compiled form
for every call (parameters checked against the compiled binds, types' processors looked up,
a result set up for the statement's kind): on SQLite that cost a post more CPU than SQLite's
own work, insert, full-text index and unread counts together (docs/NOTES.md, "Hot paths and
caches"). `Precompiled` keeps the statement's text and the order and processors of its binds
per dialect, and sends the values through `exec_driver_sql`, which still fires the engine's
events (the debug hooks' statement counts, the traces' SQL spans). The statement stays one
Core definition for SQLite and PostgreSQL.

Taken: statements whose values are all given as plain named `bindparam`s (besides the
statement's own literals, such as `unread_count + 1`), with no column filled by a Python-side
default, and whose results, if any, need no type processing (ids, counts). An expanding `IN`
list, a bind with a default or a callable, or a column default is refused when first run.
"""

from __future__ import annotations

import weakref
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
    constants: tuple[tuple[int, str, Any], ...]
    """The statement's own literals (`unread_count + 1`): place, name and processed value."""
    positional: bool


class Precompiled:
    def __init__(self, statement: ClauseElement) -> None:
        self.statement = statement
        self._plans: weakref.WeakKeyDictionary[Dialect, _Plan] = weakref.WeakKeyDictionary()

    def execute(self, conn: Connection, values: Mapping[str, Any]) -> CursorResult[Any]:
        plan = self._plans.get(conn.dialect)
        if plan is None:
            plan = self._plans[conn.dialect] = self._plan(conn.dialect)
        bound = [
            (name, values[name] if process is None else process(values[name]))
            for name, process in plan.binds
        ]
        for place, name, value in plan.constants:
            bound.insert(place, (name, value))
        if plan.positional:
            return conn.exec_driver_sql(plan.sql, tuple(value for _, value in bound))
        return conn.exec_driver_sql(plan.sql, dict(bound))

    def _plan(self, dialect: Dialect) -> _Plan:
        compiled: Any = self.statement.compile(dialect=dialect)
        if compiled.insert_prefetch or compiled.update_prefetch:
            raise ValueError("a column filled by a Python-side default cannot be precompiled")
        binds = compiled.binds
        for bind in binds.values():
            if bind.expanding or bind.literal_execute or bind.callable is not None:
                raise ValueError(f"{bind.key}: only plain binds can be precompiled")
            if not (bind.required or bind.unique):
                raise ValueError(f"{bind.key}: a bind with a default cannot be precompiled")
        names = compiled.positiontup if compiled.positional else list(binds)
        given: list[tuple[str, Callable[[Any], Any] | None]] = []
        constants: list[tuple[int, str, Any]] = []
        for place, name in enumerate(names):
            bind = binds[name]
            # The dialect's own form of the type: a TypeDecorator's bare `bind_processor` would
            # skip its implementation's (SQLite's text form of a time).
            process = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if bind.required:
                given.append((name, process))
            else:
                value = bind.effective_value
                constants.append((place, name, value if process is None else process(value)))
        return _Plan(compiled.string, tuple(given), tuple(constants), compiled.positional)
