"""Core statements of the hot paths, compiled once per dialect and sent as the driver's SQL.

`Connection.execute` of a Core statement builds an execution context around its compiled form
for every call (parameters checked against the compiled binds, types' processors looked up,
a result set up for the statement's kind): on SQLite that cost a post more CPU than SQLite's
own work, insert, full-text index and unread counts together (docs/NOTES.md, "Hot paths and
caches"). `Precompiled` keeps the statement's text and the order and processors of its binds
per dialect, and sends the values through `exec_driver_sql`, which still fires the engine's
events (the debug hooks' statement counts, the traces' SQL spans). The statement stays one
Core definition for SQLite and PostgreSQL.

On SQLite's own driver, when nothing listens to the engine's statements and it logs none, the
values go straight to a driver cursor: `exec_driver_sql` still set up an execution context and
a result for each statement, some 6 µs, a third of a post's two statements' cost beside SQLite's
own work. A driver error is wrapped as `exec_driver_sql` wraps it (an `IntegrityError` stays
one).

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

from sqlalchemy import Connection, Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import ClauseElement


@dataclass(frozen=True)
class _Plan:
    sql: str
    binds: tuple[tuple[str, Callable[[Any], Any] | None], ...]
    """Each bind given at `execute`: its name and its type's processor, in the SQL's order."""
    constants: tuple[tuple[int, str, Any], ...]
    """The statement's own literals (`unread_count + 1`): place, name and processed value."""
    positional: bool
    direct: bool
    """Whether the dialect's driver is SQLite's own, whose cursor can be used directly."""


class Precompiled:
    def __init__(self, statement: ClauseElement) -> None:
        self.statement = statement
        self._plans: weakref.WeakKeyDictionary[Dialect, _Plan] = weakref.WeakKeyDictionary()

    def run(self, conn: Connection, values: Mapping[str, Any]) -> None:
        """Execute a statement whose result is not wanted (an insert, an update)."""
        plan, params = self._bound(conn, values)
        if plan.direct and _unobserved(conn):
            _direct(conn, plan.sql, params).close()
        else:
            conn.exec_driver_sql(plan.sql, params)

    def column(self, conn: Connection, values: Mapping[str, Any]) -> list[Any]:
        """The first column of every row the statement answers."""
        plan, params = self._bound(conn, values)
        if plan.direct and _unobserved(conn):
            cursor = _direct(conn, plan.sql, params)
            try:
                return [row[0] for row in cursor.fetchall()]
            finally:
                cursor.close()
        return list(conn.exec_driver_sql(plan.sql, params).scalars().all())

    def _bound(self, conn: Connection, values: Mapping[str, Any]) -> tuple[_Plan, Any]:
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
            return plan, tuple(value for _, value in bound)
        return plan, dict(bound)

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
        direct = dialect.name == "sqlite" and dialect.driver == "pysqlite"
        return _Plan(compiled.string, tuple(given), tuple(constants), compiled.positional, direct)


def _unobserved(conn: Connection) -> bool:
    """Whether `exec_driver_sql` would do nothing but execute: no listener on the connection's,
    the engine's or the dialect's events (`do_execute`, `handle_error`), no statement logging,
    a transaction already begun (no autobegin to run)."""
    watched = conn._has_events or conn.engine._has_events or conn.dialect._has_events
    return not (watched or conn._echo) and conn.in_transaction()


def _direct(conn: Connection, sql: str, params: Any) -> Any:
    """A driver cursor that has executed `sql`."""
    raw = conn.connection.dbapi_connection
    assert raw is not None
    cursor = raw.cursor()
    try:
        cursor.execute(sql, params)
    except Exception as exc:
        cursor.close()
        dbapi = conn.dialect.loaded_dbapi
        if not isinstance(exc, dbapi.Error):
            raise
        raise DBAPIError.instance(
            sql,
            params,
            exc,
            dbapi.Error,
            hide_parameters=conn.engine.hide_parameters,
            dialect=conn.dialect,
        ) from exc
    return cursor
