"""An imported channel made into rows: new ids (minted at the messages' own times), authors
found among this install's people and agents by name, or kept as imported names, threads and
reactions restored, links to the files it brought pointed at their new place."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

import orjson

from palaver.domain import Message
from palaver.store.channel_import import ImportRows, reaction_time
from palaver.store.uploads import referring_text, upload_paths
from palaver.transfer.export_format import IMPORTED_AUTHOR, IMPORTED_REACTIONS
from palaver.transfer.model import Author, IdsAt, ImportedChannel, ImportedMessage

MAX_DISTINCT_REACTIONS = 50
_UPLOAD_URL = re.compile(r"/uploads/(\d{4}-\d{2})/((?:[\w.\-]|%[0-9A-Fa-f]{2})+)")


@dataclass
class Directory:
    """This install's people and agents by name (ignoring case)."""

    people: dict[str, list[str]] = field(default_factory=dict)
    agents: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, people: Iterable[tuple[str, str]], agents: Iterable[tuple[str, str]]) -> Directory:
        found = cls()
        for user_id, name in people:
            found.people.setdefault(name.casefold(), []).append(user_id)
        for agent_id, name in agents:
            found.agents[name.casefold()] = agent_id
        return found

    def find(self, author: Author) -> tuple[str | None, str | None]:
        """(user id, agent id) of the one person or agent bearing a name of the author's, the
        kind the source says first; (None, None) for nobody, or for two people of that name."""
        for name in (author.name, *author.aliases):
            if not name:
                continue
            key = name.casefold()
            person = self.people.get(key, [])
            agent = self.agents.get(key)
            if author.kind == "agent" and agent is not None:
                return None, agent
            if len(person) == 1:
                return person[0], None
            if agent is not None:
                return None, agent
        return None, None

    def id_of(self, author: Author) -> str | None:
        user_id, agent_id = self.find(author)
        return user_id or agent_id


@dataclass
class Prepared:
    rows: ImportRows
    count: int


def prepare(
    channel: ImportedChannel,
    channel_id: str,
    directory: Directory,
    placed: dict[str, str],
    notes: list[tuple[str, str]],
) -> Prepared:
    """`placed`: each file brought along, from its path in the source to its new URL path."""
    started = {m.key: m.created_at for m in channel.messages if m.thread_key is None}
    # A reply never sorts before its thread's head, whatever times a source says.
    ordered = sorted(
        channel.messages,
        key=lambda m: max(m.created_at, started.get(m.thread_key or "", m.created_at)),
    )
    minted = IdsAt()
    new_ids = {m.key: minted.next("msg", m.created_at) for m in ordered}
    rows = ImportRows()
    roots: set[str] = set()
    for message in ordered:
        message_id = new_ids[message.key]
        thread_id = new_ids[message.thread_key] if message.thread_key is not None else None
        if thread_id is not None:
            roots.add(thread_id)
        rows.messages.append(_row(message, message_id, channel_id, thread_id, directory, placed))
        rows.reactions.extend(_reactions(message, message_id, rows.messages[-1], directory, notes))
    rows.thread_roots = sorted(roots)
    _references(rows, channel_id, placed)
    return Prepared(rows, len(rows.messages))


def _row(
    message: ImportedMessage,
    message_id: str,
    channel_id: str,
    thread_id: str | None,
    directory: Directory,
    placed: dict[str, str],
) -> dict[str, Any]:
    user_id, agent_id = directory.find(message.author)
    metadata = dict(message.metadata)
    if user_id is None and agent_id is None:
        metadata[IMPORTED_AUTHOR] = message.author.label
    content = relink(message.content, placed)
    if placed and metadata:
        metadata = orjson.loads(relink(orjson.dumps(metadata).decode(), placed))
    if message.deleted:
        content, metadata = "", {}
    return {
        "id": message_id,
        "channel_id": channel_id,
        "agent_id": agent_id,
        "user_id": user_id,
        "content": content,
        "type": message.type,
        "metadata": metadata,
        "created_at": message.created_at,
        "thread_id": thread_id,
        "edited_at": None if message.deleted else message.edited_at,
        "deleted_at": message.created_at if message.deleted else None,
        "reactions": None,
    }


def _reactions(
    message: ImportedMessage,
    message_id: str,
    row: dict[str, Any],
    directory: Directory,
    notes: list[tuple[str, str]],
) -> list[dict[str, Any]]:
    """The reaction rows of people and agents found here; the others' names go to
    `metadata.importedReactions`. The row's summary is set to match."""
    if message.deleted:
        return []
    summary: dict[str, list[str]] = {}
    by_name: dict[str, list[str]] = {}
    for reaction in message.reactions:
        if reaction.emoji not in summary and len(summary) >= MAX_DISTINCT_REACTIONS:
            notes.append(
                (
                    f"reaction {reaction.emoji} on message {message.key}",
                    f"A message holds at most {MAX_DISTINCT_REACTIONS} different emoji.",
                )
            )
            continue
        for author in reaction.authors:
            found = directory.id_of(author)
            if found is None:
                names = by_name.setdefault(reaction.emoji, [])
                if author.label not in names:
                    names.append(author.label)
                continue
            ids = summary.setdefault(reaction.emoji, [])
            if found not in ids:
                ids.append(found)
    summary = {emoji: ids for emoji, ids in summary.items() if ids}
    row["reactions"] = [{"emoji": e, "userIds": ids} for e, ids in summary.items()] or None
    if by_name:
        earlier = row["metadata"].get(IMPORTED_REACTIONS)
        kept = [e for e in earlier if isinstance(e, dict)] if isinstance(earlier, list) else []
        row["metadata"][IMPORTED_REACTIONS] = kept + [
            {"emoji": emoji, "names": names} for emoji, names in by_name.items()
        ]
    order = 0
    rows = []
    for emoji, ids in summary.items():
        for who in ids:
            rows.append(
                {
                    "message_id": message_id,
                    "user_id": who,
                    "emoji": emoji,
                    "created_at": reaction_time(message.created_at, order),
                }
            )
            order += 1
    return rows


def relink(text: str, placed: dict[str, str]) -> str:
    """Point each link to an upload the import brought at the upload's new place."""
    if not placed or "/uploads/" not in text:
        return text

    def moved(match: re.Match[str]) -> str:
        raw = match.group(2)
        stripped = raw.rstrip(".")
        target = placed.get(f"{match.group(1)}/{unquote(stripped)}")
        if target is None:
            return match.group(0)
        return target + raw[len(stripped) :]

    return _UPLOAD_URL.sub(moved, text)


def new_url(path: str) -> str:
    month, _, name = path.partition("/")
    return f"/uploads/{month}/{quote(name)}"


def _references(rows: ImportRows, channel_id: str, placed: dict[str, str]) -> None:
    """Each brought file is the channel's from its first message that names it, as a post
    would have recorded it: its members may read it."""
    if not placed:
        return
    wanted = {unquote(url.removeprefix("/uploads/")) for url in placed.values()}
    for row in rows.messages:
        text = referring_text(
            Message(
                id=row["id"],
                channel_id=channel_id,
                agent_id=None,
                user_id=None,
                content=row["content"],
                type=row["type"],
                metadata=row["metadata"],
            )
        )
        if "/uploads/" not in text:
            continue
        for path in sorted(upload_paths(text) & wanted):
            rows.references.append(
                {"path": path, "channel_id": channel_id, "message_id": row["id"]}
            )
            wanted.discard(path)
        if not wanted:
            return
