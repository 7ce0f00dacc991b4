"""Reading Palaver's own export (`format: palaver.channel`) back: one channel, its messages
with their threads and reactions, and where its files are in the zip, if it came in one.

What makes the whole document unreadable (its header, its lists) is `Invalid`; what is wrong
with one message is a `ChannelFailure`: the channel is then not imported at all."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import unquote

import orjson

from palaver.domain import MESSAGE_TYPES
from palaver.emoji_rule import one_emoji
from palaver.errors import Invalid, UnsupportedMedia
from palaver.transfer.export_format import FORMAT, IMPORTED_AUTHOR, VERSION
from palaver.transfer.model import (
    Author,
    AuthorKind,
    ChannelFailure,
    ImportedChannel,
    ImportedFile,
    ImportedMessage,
    ImportedReaction,
)

MAX_METADATA_BYTES = 16 * 1024
FUTURE_SLACK = timedelta(days=1)
"""How far ahead of this server's clock a message's time may be (clocks differ)."""
_UPLOAD_URL = re.compile(r"^/uploads/(\d{4}-\d{2})/((?:[\w.\-]|%[0-9A-Fa-f]{2})+)$")
DROPPED_METADATA = ("mentions", IMPORTED_AUTHOR)
"""`mentions` names ids of the install that exported; `importedAuthor` is set again when the
author is not found here."""


def is_palaver(document: Any) -> bool:
    return isinstance(document, dict) and document.get("format") == FORMAT


def read(document: dict[str, Any], max_chars: int) -> ImportedChannel:
    version = document.get("version")
    if version != VERSION:
        raise UnsupportedMedia(
            f"This is a Palaver export of version {version!r}; this server reads version {VERSION}."
        )
    channel = document.get("channel")
    if not isinstance(channel, dict):
        raise Invalid("The export has no 'channel' object.")
    name = channel.get("name")
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > 128:
        raise Invalid("The export's channel must have a name of 1 to 128 characters.")
    kind = channel.get("type")
    if kind not in ("dm", "group"):
        raise Invalid("The export's channel type must be 'dm' or 'group'.")
    people = _people(document.get("people", []))
    raw_messages = document.get("messages")
    if not isinstance(raw_messages, list):
        raise Invalid("The export has no 'messages' list.")
    agent_ids = channel.get("agentIds", [])
    if not isinstance(agent_ids, list) or not all(isinstance(a, str) for a in agent_ids):
        raise Invalid("The export's channel 'agentIds' must be a list of ids.")
    imported = ImportedChannel(
        name=name.strip(),
        type=kind,
        messages=[],
        agents=[people.get(a, Author(None, "agent", a)) for a in agent_ids],
        files=_files(document.get("files", [])),
    )
    imported.messages = _messages(raw_messages, people, max_chars, imported)
    return imported


def _people(raw: Any) -> dict[str, Author]:
    if not isinstance(raw, list):
        raise Invalid("The export's 'people' must be a list.")
    people: dict[str, Author] = {}
    for entry in raw:
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("id"), str)
            or entry.get("kind") not in ("person", "agent")
            or not isinstance(entry.get("name"), str | None)
        ):
            raise Invalid("Each of the export's 'people' must be {id, kind, name}.")
        kind: AuthorKind = entry["kind"]
        people[entry["id"]] = Author(entry.get("name"), kind, entry["id"])
    return people


def _files(raw: Any) -> list[ImportedFile]:
    if not isinstance(raw, list):
        raise Invalid("The export's 'files' must be a list.")
    files = []
    for entry in raw:
        url = entry.get("url") if isinstance(entry, dict) else None
        match = _UPLOAD_URL.match(url) if isinstance(url, str) else None
        member = entry.get("path") if isinstance(entry, dict) else None
        size = entry.get("size") if isinstance(entry, dict) else None
        if (
            match is None
            or not isinstance(member, str | None)
            or not isinstance(size, int)
            or isinstance(size, bool)
            or size < 0
        ):
            raise Invalid("Each of the export's 'files' must be {url: '/uploads/...', path, size}.")
        path = f"{match.group(1)}/{unquote(match.group(2))}"
        files.append(ImportedFile(path, member, size))
    return files


def _messages(
    raw: list[Any], people: dict[str, Author], max_chars: int, channel: ImportedChannel
) -> list[ImportedMessage]:
    roots: set[str] = set()
    seen: set[str] = set()
    found: list[ImportedMessage] = []
    for number, entry in enumerate(raw, start=1):
        try:
            message = _message(entry, people, max_chars, channel)
        except ChannelFailure as failure:
            raise ChannelFailure(f"Message {number}: {failure}") from None
        if message.key in seen:
            raise ChannelFailure(f"Message {number}: the id '{message.key}' comes twice.")
        seen.add(message.key)
        if message.thread_key is None:
            roots.add(message.key)
        found.append(message)
    heads = {m.thread_key for m in found if m.thread_key is not None}
    for number, message in enumerate(found, start=1):
        if message.thread_key is not None and message.thread_key not in roots:
            raise ChannelFailure(
                f"Message {number}: its threadId '{message.thread_key}' is not a message of the "
                "main timeline in this export."
            )
    kept = []
    for message in found:
        if message.deleted and message.key not in heads:
            channel.notes.append(
                (f"deleted message {message.key}", "A deleted message heads no thread here.")
            )
            continue
        kept.append(message)
    return kept


def _message(
    entry: Any, people: dict[str, Author], max_chars: int, channel: ImportedChannel
) -> ImportedMessage:
    if not isinstance(entry, dict):
        raise ChannelFailure("it is not an object.")
    key = entry.get("id")
    if not isinstance(key, str) or not key:
        raise ChannelFailure("it has no id.")
    kind = entry.get("type", "text")
    if kind not in MESSAGE_TYPES:
        raise ChannelFailure(f"its type must be one of {', '.join(MESSAGE_TYPES)}.")
    deleted = entry.get("deleted", False)
    if not isinstance(deleted, bool):
        raise ChannelFailure("'deleted' must be true or false.")
    content = entry.get("content")
    if not isinstance(content, str):
        raise ChannelFailure("its content must be text.")
    if not deleted and not content.strip():
        raise ChannelFailure("its content is empty.")
    if len(content) > max_chars:
        raise ChannelFailure(f"its content is longer than {max_chars} characters.")
    metadata = entry.get("metadata", {})
    if not isinstance(metadata, dict):
        raise ChannelFailure("its metadata must be an object.")
    if len(orjson.dumps(metadata)) > MAX_METADATA_BYTES:
        raise ChannelFailure("its metadata is larger than 16 KiB.")
    thread = entry.get("threadId")
    if not isinstance(thread, str | None) or thread == "":
        raise ChannelFailure("its threadId must be an id or null.")
    created = _time(entry.get("createdAt"), "createdAt")
    if created is None:
        raise ChannelFailure("it has no createdAt.")
    edited = _time(entry.get("editedAt"), "editedAt")
    return ImportedMessage(
        key=key,
        thread_key=thread,
        author=_author(entry, metadata, people),
        content="" if deleted else content,
        type=kind,
        metadata={k: v for k, v in metadata.items() if k not in DROPPED_METADATA},
        created_at=created,
        edited_at=edited,
        deleted=deleted,
        reactions=_reactions(entry.get("reactions", []), people, key, channel),
    )


def _time(value: Any, field: str) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
        if moment is not None:
            moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (ValueError, OverflowError):
        moment = None
    if moment is None:
        raise ChannelFailure(f"its {field} is not an ISO 8601 time.")
    if moment > datetime.now(UTC) + FUTURE_SLACK:
        raise ChannelFailure(f"its {field} is in the future.")
    return moment


def _author(entry: dict[str, Any], metadata: dict[str, Any], people: dict[str, Author]) -> Author:
    for field, kind in (("userId", "person"), ("agentId", "agent")):
        who = entry.get(field)
        if who is None:
            continue
        if not isinstance(who, str):
            raise ChannelFailure(f"its {field} must be an id or null.")
        known = people.get(who)
        return known if known is not None else Author(None, kind, who)  # type: ignore[arg-type]
    imported = metadata.get(IMPORTED_AUTHOR)
    return Author(imported if isinstance(imported, str) else None)


def _reactions(
    raw: Any, people: dict[str, Author], key: str, channel: ImportedChannel
) -> list[ImportedReaction]:
    if not isinstance(raw, list):
        raise ChannelFailure("its reactions must be a list.")
    reactions = []
    for entry in raw:
        emoji = entry.get("emoji") if isinstance(entry, dict) else None
        user_ids = entry.get("userIds") if isinstance(entry, dict) else None
        if not isinstance(emoji, str) or not isinstance(user_ids, list):
            raise ChannelFailure("each reaction must be {emoji, userIds}.")
        if not all(isinstance(u, str) for u in user_ids):
            raise ChannelFailure("a reaction's userIds must be ids.")
        if not one_emoji(emoji):
            channel.notes.append((f"reaction {emoji!r} on message {key}", "It is not one emoji."))
            continue
        authors = [people.get(u, Author(None, None, u)) for u in user_ids]
        reactions.append(ImportedReaction(emoji, authors))
    return reactions
