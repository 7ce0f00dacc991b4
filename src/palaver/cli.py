"""The `palaver` command."""

from __future__ import annotations

import argparse
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
        print(f"palaver: invalid configuration: {where}: {first['msg']}", file=sys.stderr)
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
    # Imported only now: the app pulls in heavy SDKs, and a bad configuration answers at once.
    from palaver.app import create_app

    logging.basicConfig(
        level=config.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if os.environ.get("PALAVER_DEBUG_BLOCKING") == "1":
        _fail_on_blocking_calls()
    server = _AnnouncingServer(uvicorn.Config(create_app(config), **uvicorn_options(config)))
    server.run()
    return 0 if server.started else 1


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


def _fail_on_blocking_calls() -> None:
    """For the test suite: any blocking call on the event loop raises (and is logged)."""
    from blockbuster import BlockBuster

    BlockBuster().activate()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="palaver", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the HTTP and WebSocket service")
    serve.add_argument("--data-dir", type=Path, default=None)
    serve.add_argument("--host", default=None)
    serve.add_argument("--port", type=int, default=None)
    again = commands.add_parser(
        "reindex", help="re-embed agents' memories and documents after an embedding change"
    )
    again.add_argument("--data-dir", type=Path, default=None)
    again.add_argument("--agent", action="append", help="an agent id (repeatable; default all)")
    move = commands.add_parser(
        "migrate-db",
        help="copy this installation's SQLite database into an empty PostgreSQL database",
    )
    move.add_argument("--to", required=True, metavar="URL", help="postgresql://user:pw@host/db")
    move.add_argument(
        "--from",
        dest="from_url",
        metavar="URL",
        help="sqlite:///path/palaver.db (default: DATABASE_URL, else the data dir's database)",
    )
    move.add_argument("--data-dir", type=Path, default=None)
    move.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "migrate-db":
        return _migrate_db(args)
    return _reindex(args)
