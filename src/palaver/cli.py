"""The `palaver` command."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

import uvicorn
from pydantic import ValidationError


def _serve(args: argparse.Namespace) -> int:
    if not os.environ.get("OWNER_KEY", "").strip():
        print(
            "palaver: set OWNER_KEY to the owner's password to start the service.", file=sys.stderr
        )
        return 2
    from palaver.config import Config

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
    # Imported only now: the app pulls in heavy SDKs, and a bad configuration answers at once.
    from palaver.app import create_app

    logging.basicConfig(
        level=config.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if os.environ.get("PALAVER_DEBUG_BLOCKING") == "1":
        _fail_on_blocking_calls()
    uvicorn.run(
        create_app(config),
        host=config.host,
        port=config.port,
        log_level=config.log_level,
        proxy_headers=config.trust_proxy,
        ws_ping_interval=None,
        # A client that stopped reading keeps its socket open for as long as it likes; without
        # a limit, a graceful shutdown would wait for it forever.
        timeout_graceful_shutdown=config.shutdown_grace_seconds,
    )
    return 0


def _reindex(args: argparse.Namespace) -> int:
    import asyncio

    from palaver.knowledge.reindex_command import reindex
    from palaver.store import migrate

    data_dir = (args.data_dir or Path(os.environ.get("PALAVER_DATA_DIR", "./data"))).resolve()
    url = os.environ.get("DATABASE_URL") or f"sqlite+aiosqlite:///{data_dir / 'palaver.db'}"
    if url.startswith("sqlite") and not (data_dir / "palaver.db").exists():
        print(f"palaver: there is no database in {data_dir}", file=sys.stderr)
        return 2
    migrate.upgrade(url)
    return asyncio.run(reindex(url, args.agent or []))


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
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    return _reindex(args)
