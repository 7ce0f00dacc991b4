"""What an import reads from any format, before it meets this install's people and database."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from ulid import ULID

AuthorKind = Literal["person", "agent"]

MAX_REPORTED = 200
"""Entries a report lists one by one; beyond them it says how many more there were."""


class ChannelFailure(Exception):
    """The channel cannot be imported as a whole (a message of it is malformed): nothing of it
    is written, and the report says why."""


@dataclass(frozen=True)
class Author:
    """Someone as the source names them: mapped to a person or an agent of this install by
    `name`, else kept as an imported name."""

    name: str | None
    kind: AuthorKind | None = None
    source_id: str | None = None
    """The source's own id (a Palaver or Slack user id): said when there is no name."""
    aliases: tuple[str, ...] = ()
    """Other names to try, in order, when `name` matches nobody (a Slack user's real name
    after their display name)."""

    @property
    def label(self) -> str:
        return self.name or self.source_id or "unknown"


@dataclass
class ImportedReaction:
    emoji: str
    authors: list[Author]


@dataclass
class ImportedMessage:
    key: str
    """The source's id of the message (a Palaver id, a Slack `ts`): what threads point at."""
    thread_key: str | None
    author: Author
    content: str
    type: str
    metadata: dict[str, Any]
    created_at: datetime
    edited_at: datetime | None = None
    deleted: bool = False
    """A thread's head that was deleted: kept empty, as a tombstone, for its replies."""
    reactions: list[ImportedReaction] = field(default_factory=list)


@dataclass(frozen=True)
class ImportedFile:
    url_path: str
    """`<year-month>/<name>` as the source's messages name it."""
    member: str | None
    """Where the bytes are in the import's zip; None when they were not included."""
    size: int


@dataclass
class ImportedChannel:
    name: str
    type: Literal["dm", "group"]
    messages: list[ImportedMessage]
    agents: list[Author] = field(default_factory=list)
    files: list[ImportedFile] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)
    """What the reading left out of this channel, as (what, why)."""


@dataclass
class Report:
    """The answer's `skipped`: one entry per thing left out, up to `MAX_REPORTED`."""

    entries: list[dict[str, str]] = field(default_factory=list)
    more: int = 0

    def skip(self, what: str, why: str) -> None:
        if len(self.entries) < MAX_REPORTED:
            self.entries.append({"what": what, "why": why})
        else:
            self.more += 1

    def as_json(self) -> list[dict[str, str]]:
        if not self.more:
            return list(self.entries)
        return [
            *self.entries,
            {
                "what": f"{self.more} more",
                "why": f"The report lists the first {MAX_REPORTED} things skipped.",
            },
        ]


class IdsAt:
    """Message ids minted at the messages' own times, so that id order (what paging and read
    markers go by) is time order, for history imported as for history posted. Strictly
    increasing when called in time order, within the same millisecond too."""

    def __init__(self) -> None:
        self._ms = -1
        self._rand = 0

    def next(self, prefix: str, when: datetime) -> str:
        ms = max(int(when.timestamp() * 1000), 0)
        if ms <= self._ms:
            ms, self._rand = self._ms, self._rand + 1
        else:
            self._rand = int.from_bytes(os.urandom(10)) >> 1
        self._ms = ms
        return f"{prefix}_{ULID.from_bytes(ms.to_bytes(6, 'big') + self._rand.to_bytes(10, 'big'))}"
