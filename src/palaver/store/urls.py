"""Database URLs as people and tools write them, turned into the drivers this project uses.

`DATABASE_URL` is a plain `postgresql://user:pw@host:port/db` (or the Unix-socket form
`postgresql://postgres:@/postgres?host=/path/to/socket-dir`) or `sqlite:///path`; which driver
talks to it is the project's business: asyncpg or aiosqlite for the app, psycopg or pysqlite
for the migrations, which run on a plain synchronous connection.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote, unquote

from sqlalchemy import URL, make_url

_ASYNC = {"postgresql": "postgresql+asyncpg", "sqlite": "sqlite+aiosqlite"}
_SYNC = {"postgresql": "postgresql+psycopg", "sqlite": "sqlite+pysqlite"}
_BACKENDS = {"postgres": "postgresql", "postgresql": "postgresql", "sqlite": "sqlite"}


def app_url(raw: str) -> str:
    """The URL for the app's async engine, whatever driver suffix `raw` named."""
    return _with_driver(raw, _ASYNC).render_as_string(hide_password=False)


def sync_url(raw: str) -> str:
    """The URL for a synchronous engine (Alembic's), whatever driver suffix `raw` named."""
    return _with_driver(raw, _SYNC).render_as_string(hide_password=False)


def shown(raw: str) -> str:
    """The URL fit for a log line or an error message: never the password."""
    try:
        return _parse(raw).render_as_string(hide_password=True)
    except ValueError:
        return "(an unreadable database URL)"


def backend(raw: str) -> str:
    """`postgresql` or `sqlite`."""
    return _parse(raw).get_backend_name()


def asyncpg_connect_args(url: str) -> dict[str, str]:
    """What asyncpg needs besides `url` to connect without touching the file system on the
    event loop: without a password it looks for a password file on every connection, so when
    there is none to find, it is told the password is empty."""
    parsed = make_url(url)
    if parsed.password or os.environ.get("PGPASSWORD"):
        return {}
    passfile = os.environ.get("PGPASSFILE") or Path.home() / ".pgpass"
    return {} if Path(passfile).exists() else {"password": ""}


def _with_driver(raw: str, drivers: dict[str, str]) -> URL:
    url = _parse(raw)
    return url.set(drivername=drivers[url.get_backend_name()])


def _parse(raw: str) -> URL:
    """Parse `raw`, reading its user and password up to the last `@`, so that a password
    written with a raw `@`, `:`, `/` or `?` in it still means itself; an encoded one
    (`%40`) is read as tools encode it."""
    scheme, sep, rest = raw.strip().partition("://")
    name = _BACKENDS.get(scheme.partition("+")[0].lower())
    if not sep or name is None:
        raise ValueError("a database URL starts with postgresql:// or sqlite://")
    if name == "postgresql":
        rest = _encoded_credentials(rest)
    return make_url(f"{name}://{rest}")


def _encoded_credentials(rest: str) -> str:
    userinfo, at, hostpart = rest.rpartition("@")
    if not at:
        return rest
    user, colon, password = userinfo.partition(":")
    encoded = quote(unquote(user), safe="")
    if colon:
        encoded += ":" + quote(unquote(password), safe="")
    return f"{encoded}@{hostpart}"
