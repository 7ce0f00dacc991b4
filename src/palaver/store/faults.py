"""Which failures are the storage's faults rather than bugs: the database gone for a while
(a PostgreSQL restart: answered 503, try again) and a full disk (answered 507, nothing was
stored). docs/FAULTS.md says what the user sees and what is kept."""

from __future__ import annotations

import errno
import logging
import sqlite3
from enum import Enum
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout


class Fault(Enum):
    UNAVAILABLE = "unavailable"
    FULL = "insufficient_storage"


_UNAVAILABLE_STATES = frozenset({"57P01", "57P02", "57P03", "53300"})
"""admin_shutdown, crash_shutdown, cannot_connect_now (starting up or shutting down),
too_many_connections; and the whole class 08, connection exceptions."""
_FULL_STATES = frozenset({"53100"})
"""PostgreSQL's disk_full."""
_UNABLE_TO_CONNECT = "08001"
"""sqlclient_unable_to_establish_sqlconnection: what PostgreSQL's own client says then."""
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def fault_of(exc: BaseException) -> Fault | None:
    """The storage fault `exc` is, or None for any other failure."""
    if isinstance(exc, OSError):
        return Fault.FULL if exc.errno in _FULL_ERRNOS else None
    if isinstance(exc, PoolTimeout):
        return Fault.UNAVAILABLE
    if not isinstance(exc, DBAPIError):
        return None
    orig = exc.orig
    if isinstance(orig, sqlite3.Error):
        return Fault.FULL if orig.sqlite_errorcode == sqlite3.SQLITE_FULL else None
    state = getattr(orig, "sqlstate", None) or ""
    if state in _FULL_STATES:
        return Fault.FULL
    if exc.connection_invalidated or state in _UNAVAILABLE_STATES or state.startswith("08"):
        return Fault.UNAVAILABLE
    return None


def describe(exc: BaseException) -> str:
    """What the log may say of a fault: its kind and code, never the statement's parameters
    (a message's text) that SQLAlchemy's own text of the error carries."""
    if isinstance(exc, DBAPIError):
        orig = exc.orig
        code = getattr(orig, "sqlstate", None) or getattr(orig, "sqlite_errorname", None)
        return f"{type(orig).__name__} ({code})" if code else type(orig).__name__
    if isinstance(exc, OSError) and exc.errno is not None:
        return f"{type(exc).__name__} ({errno.errorcode.get(exc.errno, exc.errno)})"
    return type(exc).__name__


def report_unreachable(engine: Engine) -> None:
    """Make a refused connection a PostgreSQL error like the others. asyncpg lets the socket's
    own error out (FileNotFoundError for a Unix socket that is gone, ConnectionRefusedError,
    a reset) and SQLAlchemy passes it on as it is, so it could not be told from any other
    OSError; as the driver's OperationalError it is classified above and kept apart."""

    @event.listens_for(engine, "do_connect")
    def connect(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        try:
            return dialect.connect(*cargs, **cparams)
        except OSError as exc:
            error = dialect.loaded_dbapi.OperationalError(
                f"could not connect to the database: {exc.strerror or type(exc).__name__}"
            )
            error.sqlstate = _UNABLE_TO_CONNECT
            raise error from exc


def log_failure(logger: logging.Logger, exc: BaseException, what: str, *args: object) -> None:
    """Log a failure a loop survives: a storage fault as one warning line (it is expected
    while the database restarts or the disk is full, and its text may carry a message's),
    anything else with its traceback."""
    if fault_of(exc) is None:
        logger.error(what, *args, exc_info=exc)
    else:
        logger.warning(what + ": %s", *args, describe(exc))
