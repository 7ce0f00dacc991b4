"""The `palaver` command."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import uvicorn
from pydantic import ValidationError

if TYPE_CHECKING:
    from palaver.config import Config


def _serve(args: argparse.Namespace) -> int:
    """What start-up makes (modules, classes, routes, the settings) lives as long as the
    process: the collector's passes over it while the app is imported free next to nothing
    and cost a tenth of the start. So collection is off until the app's lifespan turns it back
    on, once the node serves; it collects start-up's garbage a minute later (`app._refreeze`).
    """
    gc.disable()
    try:
        return _start(args)
    finally:
        gc.enable()  # a start that ended early (a test calls this in its own process)


def _start(args: argparse.Namespace) -> int:
    if not os.environ.get("OWNER_KEY", "").strip():
        print(
            "palaver: set OWNER_KEY to the owner's password to start the service.", file=sys.stderr
        )
        return 2
    from palaver.config import MIN_OWNER_KEY, Config

    if len(os.environ["OWNER_KEY"].strip()) < MIN_OWNER_KEY:
        print(
            f"palaver: OWNER_KEY is the owner's password and must be at least {MIN_OWNER_KEY} "
            "characters long; choose a longer one.",
            file=sys.stderr,
        )
        return 2

    overrides = {
        key: value
        for key, value in (("data_dir", args.data_dir), ("host", args.host), ("port", args.port))
        if value is not None
    }
    try:
        config = Config(**overrides)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        where += ": " if where else ""  # a check of several settings together names none
        print(f"palaver: invalid configuration: {where}{first['msg']}", file=sys.stderr)
        return 2
    from palaver.extras import missing_for_database, missing_for_redis

    missing = missing_for_database(config.database_url) or missing_for_redis(config.redis_url)
    if missing is not None:
        print(f"palaver: {missing}", file=sys.stderr)
        return 2
    if config.redis_url:
        from palaver.redis_client import unreachable

        problem = unreachable(config.redis_url)
        if problem is not None:
            print(f"palaver: {problem}", file=sys.stderr)
            return 2
    from palaver.tracing import TracingError, check

    try:
        check()
    except TracingError as exc:
        print(f"palaver: {exc}", file=sys.stderr)
        return 2
    if config.metrics_bind is not None:
        from palaver.metrics_server import unavailable

        problem = unavailable(*config.metrics_bind)
        if problem is not None:
            print(f"palaver: {problem}", file=sys.stderr)
            return 2
    # Imported only now: the app pulls in heavy SDKs, and a bad configuration answers at once.
    from palaver.app import create_app

    _log_to_stderr(config.log_level)
    if os.environ.get("PALAVER_DEBUG_BLOCKING") == "1":
        _fail_on_blocking_calls()
    server = _AnnouncingServer(uvicorn.Config(create_app(config), **uvicorn_options(config)))
    server.run()
    return 0 if server.started else 1


def _log_to_stderr(level_name: str) -> None:
    """Our lines with their time and source. Above DEBUG no line may quote what people wrote:
    httpx's request lines carry URLs with search terms (the web search tool) and uvicorn's
    access lines query strings (a memory search's `q`), so those are held back or cut."""
    level = logging.getLevelName(level_name.upper())
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if isinstance(level, int) and level > logging.DEBUG:
        logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("uvicorn.access").addFilter(_without_query_string)


def _without_query_string(record: logging.LogRecord) -> bool:
    """uvicorn's access line, its path cut at the query string."""
    if isinstance(record.args, tuple) and len(record.args) == 5:
        address, method, path, version, status = record.args
        if isinstance(path, str) and "?" in path:
            record.args = (address, method, path.partition("?")[0] + "?…", version, status)
    return True


WS_MAX_FRAME = 64 * 1024


def uvicorn_options(config: Config) -> dict[str, Any]:
    """How Palaver runs under uvicorn; the benchmarks' bare baselines run the same way."""
    return {
        "host": config.host,
        "port": config.port,
        "log_level": config.log_level,
        "proxy_headers": config.trust_proxy,
        "loop": "uvloop",
        "http": "httptools",
        "ws_ping_interval": None,
        # What a client sends over the socket is a few hundred bytes (auth, ping, subscribe);
        # uvicorn's default of 16 MiB would let one frame hold the loop while it is parsed.
        "ws_max_size": WS_MAX_FRAME,
        # A client that stopped reading keeps its socket open for as long as it likes;
        # without a limit, a graceful shutdown would wait for it forever.
        "timeout_graceful_shutdown": config.shutdown_grace_seconds,
    }


class _AnnouncingServer(uvicorn.Server):
    """Says where to open the service once it really listens, not before."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if not self.started or not self.servers or not self.servers[0].sockets:
            return
        host, port = self.servers[0].sockets[0].getsockname()[:2]
        if host in ("0.0.0.0", "::"):  # noqa: S104 - reading the bound address, not binding
            host = "127.0.0.1"
        shown = f"[{host}]" if ":" in host else host
        base = f"http://{shown}:{port}"
        print(
            f"Palaver is ready: open {base} in a browser and log in with OWNER_KEY "
            f"(a guest logs in with its guest key). API docs: {base}/api/docs",
            flush=True,
        )


def _reindex(args: argparse.Namespace) -> int:
    import asyncio

    from palaver.extras import missing_for_database

    raw = os.environ.get("DATABASE_URL")
    missing = missing_for_database(raw)
    if missing is not None:
        print(f"palaver: {missing}", file=sys.stderr)
        return 2
    from palaver.knowledge.reindex_command import reindex
    from palaver.store import migrate
    from palaver.store.urls import app_url

    data_dir = _data_dir(args.data_dir)
    url = app_url(raw) if raw else f"sqlite+aiosqlite:///{data_dir / 'palaver.db'}"
    if not raw and not (data_dir / "palaver.db").exists():
        print(f"palaver: there is no database in {data_dir}", file=sys.stderr)
        return 2
    migrate.upgrade(url)
    return asyncio.run(reindex(url, args.agent or []))


def _data_dir(given: Path | None) -> Path:
    return (given or Path(os.environ.get("PALAVER_DATA_DIR", "./data"))).resolve()


def _migrate_db(args: argparse.Namespace) -> int:
    from palaver.extras import POSTGRES_SYNC, missing_for_database

    missing = missing_for_database(args.to, "--to", POSTGRES_SYNC)
    if missing is not None:
        print(f"palaver: {missing}", file=sys.stderr)
        return 2
    from palaver.store.migrate_db_command import migrate_db_command

    return migrate_db_command(
        target=args.to,
        source=args.from_url or os.environ.get("DATABASE_URL"),
        data_dir=_data_dir(args.data_dir),
        quiet=args.quiet,
    )


def _backup(args: argparse.Namespace) -> int:
    from palaver.extras import POSTGRES_SYNC, missing_for_database

    raw = os.environ.get("DATABASE_URL") or None
    missing = missing_for_database(raw, "DATABASE_URL", POSTGRES_SYNC)
    if missing is not None:
        print(f"palaver: {missing}", file=sys.stderr)
        return 2
    if args.keep is not None and (args.dir is None or args.keep < 1):
        print("palaver: --keep takes a number of backups of 1 or more, with --dir", file=sys.stderr)
        return 2
    from palaver.store.backup_command import backup_command

    return backup_command(
        data_dir=_data_dir(args.data_dir),
        database_url=raw,
        out=args.out,
        into=args.dir,
        keep=args.keep,
        quiet=args.quiet,
    )


def _restore(args: argparse.Namespace) -> int:
    from palaver.extras import POSTGRES_SYNC, missing_for_database

    raw = os.environ.get("DATABASE_URL") or None
    missing = missing_for_database(raw, "DATABASE_URL", POSTGRES_SYNC)
    if missing is not None:
        print(f"palaver: {missing}", file=sys.stderr)
        return 2
    from palaver.store.backup_command import restore_command

    return restore_command(args.file, _data_dir(args.data_dir), raw, args.quiet)


def _fail_on_blocking_calls() -> None:
    """For the test suite: any blocking call on the event loop raises (and is logged)."""
    from blockbuster import BlockBuster

    BlockBuster().activate()


SERVE_ENVIRONMENT = """\
environment (OWNER_KEY is required; --data-dir, --host and --port win over their variables):
  OWNER_KEY                the owner's password, at least 12 characters; the owner logs in
                           with it in the browser
  PALAVER_DATA_DIR         where the SQLite database and uploads live (default ./data)
  PALAVER_HOST             address to listen on (default 127.0.0.1)
  PALAVER_PORT             port to listen on (default 8000)
  DATABASE_URL             postgresql://user:password@host/db to store in PostgreSQL (pip
                           install 'palaver[postgres]'); default: palaver.db in the data dir
  REDIS_URL                redis://host:port/db: several nodes share events and rate limits
                           through Redis (docs/SCALING.md)
  PALAVER_LOG_LEVEL        debug, info (default), warning or error
  PALAVER_TRUST_PROXY      1 behind a reverse proxy: trust its X-Forwarded-For and
                           X-Forwarded-Proto headers
  PALAVER_ALLOWED_HOSTS    host names requests may use besides localhost and --host,
                           comma-separated (* for any); set it when serving on 0.0.0.0
  PALAVER_ALLOWED_ORIGINS  other web origins allowed to open the WebSocket, comma-separated
  PALAVER_METRICS_ADDRESS  host:port where GET /metrics (Prometheus) is served, apart from
                           the public address (default: not served)

The README's "Environment" section lists the rest (time-outs, queue sizes, clustering).
What the owner changes at run time (model providers and their keys, limits, web search) is
set in the browser's settings page or with PUT /api/settings, not here."""

OVERVIEW = """\
start:
  OWNER_KEY=change-me-to-a-long-secret palaver serve
  then open http://127.0.0.1:8000 and log in with that OWNER_KEY

environment: OWNER_KEY (required by serve), PALAVER_DATA_DIR, PALAVER_HOST, PALAVER_PORT,
DATABASE_URL, REDIS_URL, PALAVER_LOG_LEVEL and more: see "palaver serve --help"."""

STORAGE_ENVIRONMENT = """\
environment:
  PALAVER_DATA_DIR  the data dir, as --data-dir (default ./data)
  DATABASE_URL      the database, if not the data dir's palaver.db"""


def main(argv: list[str] | None = None) -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="palaver",
        description="Palaver: a chat server where people and AI agents talk in channels.",
        epilog=OVERVIEW,
        formatter_class=raw,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="run the chat service (HTTP, WebSocket and the web page)",
        description="Run the chat service: the web page, the HTTP API and the WebSocket, on one\n"
        "port. The database is created, or brought up to date, at start.",
        epilog=SERVE_ENVIRONMENT,
        formatter_class=raw,
    )
    serve.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="where the SQLite database and uploads live (default: PALAVER_DATA_DIR, else ./data)",
    )
    serve.add_argument(
        "--host",
        default=None,
        help="address to listen on (default: PALAVER_HOST, else 127.0.0.1; 0.0.0.0 for all)",
    )
    serve.add_argument(
        "--port",
        type=int,
        default=None,
        help="port to listen on (default: PALAVER_PORT, else 8000; 0 for any free one)",
    )
    again = commands.add_parser(
        "reindex",
        help="re-embed agents' memories and documents after an embedding change",
        description="Re-embed agents' memories and documents with the embedding model the\n"
        "settings name, after that setting changed, with the service stopped (a running\n"
        "service does the same with POST /api/agents/{id}/reindex).",
        epilog=STORAGE_ENVIRONMENT,
        formatter_class=raw,
    )
    again.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="the installation's data dir (default: PALAVER_DATA_DIR, else ./data)",
    )
    again.add_argument(
        "--agent",
        action="append",
        metavar="ID",
        help="only this agent (repeatable; default: every agent)",
    )
    move = commands.add_parser(
        "migrate-db",
        help="copy this installation's SQLite database into an empty PostgreSQL database",
        description="Copy this installation's SQLite database into an empty PostgreSQL database,\n"
        "table by table, checking every table's rows and checksum. Exit status: 0 copied and\n"
        "verified, 1 a table differs or the copy failed (and was rolled back), 2 refused\n"
        "before copying anything.",
        epilog=STORAGE_ENVIRONMENT,
        formatter_class=raw,
    )
    move.add_argument(
        "--to",
        required=True,
        metavar="URL",
        help="the empty PostgreSQL database: postgresql://user:password@host/db",
    )
    move.add_argument(
        "--from",
        dest="from_url",
        metavar="URL",
        help="sqlite:///path/palaver.db (default: DATABASE_URL, else the data dir's database)",
    )
    move.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="the installation's data dir (default: PALAVER_DATA_DIR, else ./data)",
    )
    move.add_argument("--quiet", action="store_true", help="no progress bar")
    save = commands.add_parser(
        "backup",
        help="write a consistent snapshot of the database and the uploads into one file",
        description="Write one consistent snapshot of a running installation into one file: the\n"
        "database (read in one snapshot while the nodes keep writing) and the uploads, with a\n"
        "manifest of row counts, checksums and sha256s (docs/BACKUP.md). The file appears only\n"
        "once complete (it is written as FILE.partial). Exit status: 0 written, 1 failed\n"
        "(nothing left behind), 2 refused before starting.",
        epilog=STORAGE_ENVIRONMENT,
        formatter_class=raw,
    )
    where = save.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=Path, metavar="FILE", help="the backup file to write")
    where.add_argument(
        "--dir",
        type=Path,
        metavar="DIR",
        help="write palaver-YYYYMMDD-HHMMSS.zip (UTC) into DIR, for scheduled backups",
    )
    save.add_argument(
        "--keep",
        type=int,
        metavar="N",
        help="with --dir: keep the N newest backups there and remove older ones",
    )
    save.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="the installation's data dir (default: PALAVER_DATA_DIR, else ./data)",
    )
    save.add_argument("--quiet", action="store_true", help="no progress bar")
    back = commands.add_parser(
        "restore",
        help="restore a backup into an empty data dir or an empty database",
        description="Restore a backup of `palaver backup` into an empty data dir (and, with\n"
        "DATABASE_URL, an empty database: SQLite and PostgreSQL backups restore into either),\n"
        "checking every part before writing and every table after. Exit status: 0 restored\n"
        "and verified, 1 a damaged backup or a failed restore (the target is left as empty as\n"
        "it was), 2 refused before writing anything.",
        epilog=STORAGE_ENVIRONMENT,
        formatter_class=raw,
    )
    back.add_argument("file", type=Path, metavar="FILE", help="the backup file")
    back.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="the empty data dir to restore into (default: PALAVER_DATA_DIR, else ./data)",
    )
    back.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "migrate-db":
        return _migrate_db(args)
    if args.command == "backup":
        return _backup(args)
    if args.command == "restore":
        return _restore(args)
    return _reindex(args)
