"""The two shapes of an export, written a message at a time: Palaver's JSON (its header, then
each message as the API gives it) and a Markdown transcript for people to read."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import unquote

import orjson

from palaver.domain import Channel, Message, iso

FORMAT = "palaver.channel"
VERSION = 1
IMPORTED_AUTHOR = "importedAuthor"
IMPORTED_REACTIONS = "importedReactions"
FILES_FOLDER = "files"
_UPLOAD_URL = re.compile(r"/uploads/(\d{4}-\d{2})/((?:[\w.\-]|%[0-9A-Fa-f]{2})+)")


@dataclass(frozen=True)
class Person:
    id: str
    kind: str
    """`person` or `agent`."""
    name: str | None
    """None where the reader may not know it (a guest, of someone outside its channels)."""

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "name": self.name}


@dataclass(frozen=True)
class ExportedFile:
    path: str
    """`<year-month>/<name>`, the name decoded, as the upload is stored."""
    size: int
    included: bool

    @property
    def member(self) -> str:
        return f"{FILES_FOLDER}/{self.path}"

    def as_json(self) -> dict[str, Any]:
        name = self.path.rpartition("/")[2]
        return {
            "url": f"/uploads/{self.path}",
            "name": name,
            "path": self.member if self.included else None,
            "size": self.size,
        }


def channel_json(channel: Channel) -> dict[str, Any]:
    return {
        "id": channel.id,
        "name": channel.name,
        "type": channel.type,
        "agentIds": list(channel.agent_ids),
        "memberIds": list(channel.member_ids),
        "createdAt": iso(channel.created_at),
        "updatedAt": iso(channel.updated_at),
    }


def json_head(
    channel: Channel, people: list[Person], files: list[ExportedFile], now: datetime
) -> bytes:
    """Everything before the messages, ending where the first message goes."""
    head = {
        "format": FORMAT,
        "version": VERSION,
        "exportedAt": iso(now),
        "channel": channel_json(channel),
        "people": [p.as_json() for p in people],
        "files": [f.as_json() for f in files],
    }
    return orjson.dumps(head)[:-1] + b',"messages":[\n'


def json_message(message: Message, first: bool) -> bytes:
    return (b"" if first else b",\n") + orjson.dumps(message.as_json())


JSON_TAIL = b"\n]}\n"


class Transcript:
    """Markdown: a heading, then each message with its author and time, a thread's replies
    quoted (indented) under their root, reactions under the text. In a zip, links to uploads
    point at the copies beside the transcript."""

    def __init__(self, people: Mapping[str, Person], files: Mapping[str, ExportedFile]) -> None:
        self.people = people
        self.files = {path: f for path, f in files.items() if f.included}

    def head(self, channel: Channel, now: datetime) -> str:
        sigil = "" if channel.type == "dm" else "#"
        lines = [f"# {sigil}{_inline(channel.name)}", "", f"Exported from Palaver on {_when(now)}."]
        agents = [self._name(a) for a in channel.agent_ids]
        members = [self._name(m) for m in channel.member_ids]
        if agents:
            lines.append(f"Agents: {', '.join(agents)}.")
        if members:
            lines.append(f"People: {', '.join(members)}.")
        return "\n".join(lines) + "\n"

    def message(self, message: Message) -> str:
        assert message.created_at is not None
        header = f"**{_inline(self.author(message))}** · {_when(message.created_at)}"
        if message.thread_id is not None:
            header += " · in the thread"
        if message.edited_at is not None:
            header += " · edited"
        if message.type in ("tool_call", "tool_result"):
            header += f" · {message.type.replace('_', ' ')}"
        body = self._body(message)
        reactions = self._reactions(message)
        lines = [header, "", body, *(["", reactions] if reactions else [])]
        if message.thread_id is not None:
            lines = [f"> {line}" if line else ">" for line in "\n".join(lines).split("\n")]
        return "\n" + "\n".join(lines) + "\n"

    def author(self, message: Message) -> str:
        who = message.user_id or message.agent_id
        if who is not None:
            return self._name(who)
        imported = message.metadata.get(IMPORTED_AUTHOR)
        return f"{imported} (imported)" if isinstance(imported, str) else "Unknown"

    def _name(self, who: str) -> str:
        person = self.people.get(who)
        return person.name if person is not None and person.name else who

    def _body(self, message: Message) -> str:
        if message.deleted:
            return "*This message was deleted.*"
        content = self._relink(message.content)
        if message.type in ("tool_call", "tool_result"):
            fence = "`" * max(3, _longest_backticks(content) + 1)
            return f"{fence}\n{content}\n{fence}"
        return content

    def _relink(self, text: str) -> str:
        if not self.files or "/uploads/" not in text:
            return text

        def local(match: re.Match[str]) -> str:
            raw = match.group(2)
            stripped = raw.rstrip(".")
            found = self.files.get(f"{match.group(1)}/{unquote(stripped)}")
            if found is None:
                return match.group(0)
            return found.member + raw[len(stripped) :]

        return _UPLOAD_URL.sub(local, text)

    def _reactions(self, message: Message) -> str:
        parts = [
            f"{r.emoji} {', '.join(_inline(self._name(u)) for u in r.user_ids)}"
            for r in message.reactions
        ]
        imported = message.metadata.get(IMPORTED_REACTIONS)
        if isinstance(imported, list):
            for entry in imported:
                if isinstance(entry, dict) and isinstance(entry.get("names"), list):
                    names = ", ".join(_inline(str(n)) for n in entry["names"])
                    parts.append(f"{entry.get('emoji', '?')} {names} (imported)")
        return f"*Reactions: {' · '.join(parts)}*" if parts else ""


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _inline(text: str) -> str:
    """A name on one line, its Markdown emphasis characters escaped."""
    return re.sub(r"([\\*_`\[\]#<>])", r"\\\1", " ".join(text.split()))


def _longest_backticks(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)
