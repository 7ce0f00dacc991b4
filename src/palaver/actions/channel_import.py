"""Importing channels: Palaver's own export (JSON, or the zip with its files) and Slack's
workspace export, told apart by their content. Each channel is written in one transaction
(a failure, or a crash, leaves nothing of it); its people hear `channel_created`, nothing is
broadcast per message, and no agent is handed anything."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import secrets
import time
import zipfile
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

import anyio
import orjson
from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from palaver.actions.channel_events import tell_people
from palaver.actions.uploads import safe_name
from palaver.domain import Channel
from palaver.errors import Invalid, UnsupportedMedia
from palaver.ids import new_id
from palaver.services import Services
from palaver.store import channel_import as store
from palaver.store import nodes as store_nodes
from palaver.store.audit import Actor
from palaver.store.tables.base import utcnow
from palaver.store.tables.core import agents, users
from palaver.transfer import palaver_import
from palaver.transfer.export_format import FORMAT
from palaver.transfer.model import ChannelFailure, ImportedChannel, Report
from palaver.transfer.prepare import Directory, new_url, prepare
from palaver.transfer.slack_import import SlackExport
from palaver.transfer.unpack import UNPACKED_FACTOR, Unpacker, common_prefix

log = logging.getLogger(__name__)

IMPORTS_FOLDER = "imports"
"""Under the data dir: uploads being received, and the journals of files being placed."""
KNOWN = (
    "The file must be Palaver's JSON export of a channel, the zip of one with its files, or "
    "Slack's workspace export (a zip with channels.json)."
)
_TAG = re.compile(r"-[0-9a-f]{8}(?=\.[^.]*$|$)")
LEFTOVER_SECONDS = 6 * 3600
"""Received files and this node's journals this old are what an import cut off left."""
JOURNAL = ".journal"
_locks: dict[str, asyncio.Lock] = {}


@dataclass
class Outcome:
    by: Actor
    """The owner importing: each channel's `channel.import` audit row names them."""
    report: Report = field(default_factory=Report)
    channels: list[dict[str, Any]] = field(default_factory=list)
    imported: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "channels": self.channels,
            "imported": self.imported,
            "skipped": self.report.as_json(),
        }


def imports_dir(svc: Services) -> Path:
    return svc.config.data_dir / IMPORTS_FOLDER


async def run(svc: Services, received: Path, by: Actor) -> dict[str, Any]:
    """Import the file; answers `{channels, imported, skipped}`. One import at a time per
    node: each holds a channel's rows in memory while it writes them."""
    lock = _locks.setdefault(svc.node_id, asyncio.Lock())
    try:
        async with lock:
            await clear_leftovers(svc, keep=received)
            outcome = await _import(svc, received, by)
            # Indexed now for search, as posts are in batches, rather than by the first search.
            await svc.db.index_search_backlog()
            return outcome.as_json()
    finally:
        await _unlink(received)


async def _import(svc: Services, received: Path, by: Actor) -> Outcome:
    kind = await anyio.to_thread.run_sync(_sniff, received)
    outcome = Outcome(by)
    limit = svc.settings.current.limits.maxUploadBytes
    if kind == "json":
        document = await anyio.to_thread.run_sync(_load_json, received.read_bytes)
        await _palaver(svc, document, None, outcome)
        return outcome
    try:
        archive = await anyio.to_thread.run_sync(zipfile.ZipFile, received)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        raise Invalid("The file starts as a zip but cannot be read as one.") from None
    try:
        unpacker = await anyio.to_thread.run_sync(Unpacker, archive, limit, limit * UNPACKED_FACTOR)
        names = unpacker.names
        prefix = "" if _at_root(names) else common_prefix(names)
        if f"{prefix}channel.json" in names:
            raw = await anyio.to_thread.run_sync(_read_document, unpacker, f"{prefix}channel.json")
            await _palaver(svc, raw, (unpacker, prefix), outcome)
        elif f"{prefix}channel.md" in names:
            raise UnsupportedMedia(
                "A Markdown transcript cannot be imported: export the channel as JSON "
                "(format=json) to bring it back."
            )
        elif SlackExport.holds(names, prefix):
            await _slack(svc, unpacker, prefix, outcome)
        else:
            raise UnsupportedMedia(f"The zip holds no export this server knows. {KNOWN}")
    finally:
        await anyio.to_thread.run_sync(archive.close)
    return outcome


def _at_root(names: set[str]) -> bool:
    return "channel.json" in names or "channel.md" in names or SlackExport.holds(names, "")


def _sniff(path: Path) -> Literal["zip", "json"]:
    with path.open("rb") as handle:
        head = handle.read(64)
    if not head:
        raise Invalid("The file is empty.")
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith((b"{", b"[")):
        return "json"
    raise UnsupportedMedia(f"The file is neither JSON nor a zip. {KNOWN}")


def _load_json(read: Any) -> Any:
    try:
        return orjson.loads(read())
    except orjson.JSONDecodeError as exc:
        raise Invalid(f"The file is not valid JSON: {exc}.") from None


def _read_document(unpacker: Unpacker, name: str) -> Any:
    try:
        data = unpacker.read(name)
    except ChannelFailure as failure:
        raise Invalid(str(failure)) from None
    return _load_json(lambda: data)


async def _palaver(
    svc: Services, document: Any, unpacked: tuple[Unpacker, str] | None, outcome: Outcome
) -> None:
    if not palaver_import.is_palaver(document):
        raise UnsupportedMedia(
            f"The JSON is not a Palaver channel export (its 'format' must be '{FORMAT}'). {KNOWN}"
        )
    max_chars = svc.settings.current.limits.maxMessageChars
    channel_field = document.get("channel")
    name = channel_field.get("name") if isinstance(channel_field, dict) else None
    try:
        channel = await anyio.to_thread.run_sync(palaver_import.read, document, max_chars)
    except ChannelFailure as failure:
        _failed(outcome, str(name), str(failure))
        return
    await _write(svc, channel, unpacked, await _directory(svc), outcome)


async def _slack(svc: Services, unpacker: Unpacker, prefix: str, outcome: Outcome) -> None:
    max_chars = svc.settings.current.limits.maxMessageChars
    export = await anyio.to_thread.run_sync(SlackExport, unpacker, prefix, max_chars)
    conversations = await anyio.to_thread.run_sync(export.conversations)
    if not conversations:
        raise Invalid("The Slack export lists no channels.")
    directory = await _directory(svc)
    for conversation in conversations:
        try:
            channel = await anyio.to_thread.run_sync(export.read, conversation)
        except ChannelFailure as failure:
            _failed(outcome, conversation.name, str(failure))
            continue
        if not channel.messages:
            outcome.report.skip(f"channel '{channel.name}'", "It has no messages to import.")
            continue
        await _write(svc, channel, None, directory, outcome)
    for user in sorted(export.missing_users):
        outcome.report.skip(
            f"user {user}",
            "users.json does not list them: their messages and reactions are kept under the "
            "name their messages carry, or this id.",
        )


def _failed(outcome: Outcome, name: str, why: str) -> None:
    outcome.report.skip(f"channel '{name}'", f"{why} Nothing of the channel was imported.")


async def _directory(svc: Services) -> Directory:
    async with svc.db.read() as conn:
        people = [(r.id, r.name) for r in await conn.execute(select(users.c.id, users.c.name))]
        bots = [(r.id, r.name) for r in await conn.execute(select(agents.c.id, agents.c.name))]
    return Directory.of(people, bots)


async def _write(
    svc: Services,
    imported: ImportedChannel,
    unpacked: tuple[Unpacker, str] | None,
    directory: Directory,
    outcome: Outcome,
) -> None:
    now = utcnow()
    notes = list(imported.notes)
    found = (directory.find(a)[1] for a in imported.agents)
    agent_ids = list(dict.fromkeys(a for a in found if a is not None))
    kind = imported.type
    if kind == "dm" and len(agent_ids) != 1:
        kind = "group"
        notes.append(("its dm type", "Its agent is not here by that name: it is a group now."))
    channel = Channel(
        id=new_id("ch"),
        name=imported.name,
        type=kind,
        agent_ids=agent_ids,
        member_ids=[svc.owner_id],
        created_at=now,
        updated_at=now,
    )
    journal = imports_dir(svc) / f"{svc.node_id}.{secrets.token_hex(8)}{JOURNAL}"
    # The journal goes once the outcome is known: committed, or refused and its files removed.
    # On anything else (a cancelled wait may still commit, the process killed) it stays for
    # `clear_leftovers`, which removes only the files that have no upload record.
    try:
        placed, uploads = await _place_files(svc, imported, unpacked, journal, notes)
        prepared = await anyio.to_thread.run_sync(
            prepare, imported, channel.id, directory, placed, notes
        )
        prepared.rows.uploads = [
            {"path": path, "user_id": svc.owner_id, "created_at": now} for path in uploads
        ]
        # A unit: on SQLite it runs on the writer's thread, not on the event loop.
        marker = await svc.db.write_unit(
            partial(store.write, channel=channel, rows=prepared.rows, by=outcome.by)
        )
    except (ChannelFailure, SQLAlchemyError) as failure:
        if isinstance(failure, SQLAlchemyError):
            log.exception("the import of channel %r failed to be written", imported.name)
        await _remove_placed(svc, journal)
        await _unlink(journal)
        why = (
            str(failure)
            if isinstance(failure, ChannelFailure)
            else "The database refused it (the server's log says why)."
        )
        _failed(outcome, imported.name, why)
        return
    await _unlink(journal)
    await tell_people(svc, None, channel, marker)
    for what, why in notes:
        outcome.report.skip(f"#{imported.name}: {what}", why)
    outcome.channels.append({**channel.as_json(), "imported": prepared.count})
    outcome.imported += prepared.count


async def _place_files(
    svc: Services,
    imported: ImportedChannel,
    unpacked: tuple[Unpacker, str] | None,
    journal: Path,
    notes: list[tuple[str, str]],
) -> tuple[dict[str, str], list[str]]:
    """Copy the files the channel brought into the uploads, each under a new name, writing
    each new path to `journal` first (so that a crash's leftovers can be told and removed);
    answers {source path: new URL path} and the new paths."""
    limit = svc.settings.current.limits.maxUploadBytes
    placed: dict[str, str] = {}
    paths: list[str] = []
    for file in {f.url_path: f for f in imported.files}.values():
        member = f"{unpacked[1]}{file.member}" if unpacked and file.member else None
        if unpacked is None or member is None or member not in unpacked[0].names:
            why = "The export holds no copy of it (export with files, as a zip, to bring it)."
            notes.append((f"file {file.url_path}", why))
            continue
        if file.size > limit:
            notes.append((f"file {file.url_path}", f"It is larger than {limit} bytes."))
            continue
        path = await anyio.to_thread.run_sync(
            _place, unpacked[0], member, file.size, file.url_path, svc.config.uploads_dir, journal
        )
        placed[file.url_path] = new_url(path)
        paths.append(path)
    return placed, paths


def _place(
    unpacker: Unpacker, member: str, size: int, source: str, uploads_dir: Path, journal: Path
) -> str:
    month = utcnow().strftime("%Y-%m")
    folder = uploads_dir / month
    folder.mkdir(parents=True, exist_ok=True)
    temp = folder / f".part-{secrets.token_hex(8)}"
    # Listed before it exists: a process killed while copying leaves no file unlisted.
    with journal.open("a") as listed:
        listed.write(f"{month}/{temp.name}\n")
    try:
        with temp.open("wb") as out:
            unpacker.copy(member, out, size)
        original = _TAG.sub("", source.rsplit("/", 1)[-1])
        for _ in range(8):
            name = safe_name(original)
            try:
                os.link(temp, folder / name)
            except FileExistsError:
                continue
            with journal.open("a") as listed:
                listed.write(f"{month}/{name}\n")
            return f"{month}/{name}"
        raise RuntimeError("no free name for an imported file after 8 tries")
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()


async def _remove_placed(svc: Services, journal: Path) -> None:
    """After a failure: the files this channel's import placed (none has a record)."""
    await anyio.to_thread.run_sync(_remove_journaled, svc.config.uploads_dir, journal, set())


def _remove_journaled(uploads_dir: Path, journal: Path, recorded: set[str]) -> None:
    """Remove the files a journal lists that have no upload record."""
    try:
        listed = journal.read_text().split()
    except FileNotFoundError:
        return
    for path in listed:
        if path not in recorded and "/" in path and ".." not in path:
            with contextlib.suppress(FileNotFoundError):
                (uploads_dir / path).unlink()


async def clear_leftovers(svc: Services, keep: Path | None = None, alone: bool = False) -> None:
    """What an import cut off by a crash left: received files, and placed files whose channel
    never committed (listed in a journal, without an upload record). Run at the start and
    before each import. At the start of a node that is `alone` (no Redis: nobody else uses the
    data dir), all of it. Otherwise a journal of a node gone from the registry (a node killed,
    once swept) at once, and a received file or a journal of a live node (a write whose wait
    was cancelled may still commit) only once older than any import lasts, as another node
    sharing the data dir may be importing now."""
    folder = imports_dir(svc)
    listing = await anyio.to_thread.run_sync(_listing, folder)
    if not listing:
        return
    live = await svc.db.read_unit(store_nodes.registered) - {svc.node_id}
    now = time.time()
    for path, modified in listing:
        if path == keep:
            continue
        journal = path.name.endswith(JOURNAL)
        owner = path.name.split(".", 1)[0]
        # (An older version's journal names no node: only its age tells.)
        gone = owner.startswith("node_") and owner != svc.node_id and owner not in live
        if not (alone or (journal and gone)) and now - modified <= LEFTOVER_SECONDS:
            continue
        if journal:
            listed = (await anyio.to_thread.run_sync(path.read_text)).split()
            recorded = await svc.db.read_unit(partial(store.recorded_uploads, paths=listed))
            await anyio.to_thread.run_sync(
                _remove_journaled, svc.config.uploads_dir, path, recorded
            )
        await _unlink(path)


def _listing(folder: Path) -> list[tuple[Path, float]]:
    """The files in `folder`, each with when it was last written."""
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.iterdir()):
        with contextlib.suppress(FileNotFoundError):
            found.append((path, path.stat().st_mtime))
    return found


async def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        await anyio.Path(path).unlink()
