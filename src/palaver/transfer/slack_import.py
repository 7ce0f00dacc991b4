"""Reading Slack's workspace export: a zip with `users.json`, `channels.json` (and
`groups.json`, `mpims.json`, `dms.json` where the export has them), and a folder per
conversation of `YYYY-MM-DD.json` files, each a list of messages (`ts`, `user`, `text`,
`thread_ts`, `reactions: [{name, users, count}]`, `files: [...]`, `subtype`).

Blocking (the zip): called on a worker thread, a channel at a time."""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import emoji as emoji_lib
import orjson

from palaver.emoji_rule import one_emoji
from palaver.errors import Invalid
from palaver.transfer.model import (
    Author,
    ChannelFailure,
    ImportedChannel,
    ImportedMessage,
    ImportedReaction,
)
from palaver.transfer.unpack import Unpacker

LISTS = ("channels.json", "groups.json", "mpims.json", "dms.json")
KEPT_SUBTYPES = frozenset({"thread_broadcast", "me_message", "bot_message", "file_share"})
"""Subtypes that are someone's message; every other subtype is a notice (joins, topics...)."""
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}\.json$")
_SKIN_TONES = {f"skin-tone-{n}": chr(0x1F3FB + n - 2) for n in range(2, 7)}
_ANGLED = re.compile(r"<([^<>]*)>")
NOTICE_WHY = "It is a notice of Slack's (a join, a topic, a setting), not someone's message."
FILES_WHY = (
    "Slack's export names files by a link that needs a Slack session (url_private); the file "
    "is not in the export and was not imported. The message keeps its name in "
    "metadata.importedFiles."
)


@dataclass(frozen=True)
class Conversation:
    name: str
    folder: str


class SlackExport:
    def __init__(self, unpacker: Unpacker, prefix: str, max_chars: int) -> None:
        self._unpacker = unpacker
        self._prefix = prefix
        self._max_chars = max_chars
        self.users = self._users()
        self.missing_users: set[str] = set()
        """Authors the messages name whom `users.json` does not know."""

    @staticmethod
    def holds(names: set[str], prefix: str) -> bool:
        return any(f"{prefix}{name}" in names for name in LISTS)

    def _json(self, name: str) -> Any:
        data = self._unpacker.read(self._prefix + name)
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            raise ChannelFailure(f"{name} is not valid JSON.") from None

    def _users(self) -> dict[str, Author]:
        if f"{self._prefix}users.json" not in self._unpacker.names:
            return {}
        try:
            listed = self._json("users.json")
        except ChannelFailure as failure:
            raise Invalid(str(failure)) from None
        if not isinstance(listed, list):
            raise Invalid("users.json is not a list of users.")
        users: dict[str, Author] = {}
        for user in listed:
            if isinstance(user, dict) and isinstance(user.get("id"), str):
                users[user["id"]] = _user_author(user)
        return users

    def conversations(self) -> list[Conversation]:
        found: list[Conversation] = []
        for listing in LISTS:
            if f"{self._prefix}{listing}" not in self._unpacker.names:
                continue
            try:
                entries = self._json(listing)
            except ChannelFailure as failure:
                raise Invalid(str(failure)) from None
            if not isinstance(entries, list):
                raise Invalid(f"{listing} is not a list of conversations.")
            for entry in entries:
                if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
                    raise Invalid(f"Each conversation of {listing} must have an id.")
                found.append(self._conversation(listing, entry))
        return found

    def _conversation(self, listing: str, entry: dict[str, Any]) -> Conversation:
        name = entry.get("name")
        if listing == "dms.json" or not isinstance(name, str) or not name.strip():
            members = entry.get("members")
            listed = members if isinstance(members, list) else []
            who = [
                self.users.get(m, Author(None, source_id=m)).label
                for m in listed
                if isinstance(m, str)
            ]
            title = f"dm {', '.join(who)}" if who else f"dm {entry['id']}"
            return Conversation(title[:128], entry["id"])
        return Conversation(name.strip()[:128], name)

    def read(self, conversation: Conversation) -> ImportedChannel:
        """The conversation's messages in time order, or ChannelFailure if a day file of it is
        malformed (then none of it is imported)."""
        folder = f"{self._prefix}{conversation.folder}/"
        days = sorted(
            n for n in self._unpacker.names if n.startswith(folder) and _DAY.match(n[len(folder) :])
        )
        channel = ImportedChannel(name=conversation.name, type="group", messages=[])
        notices: Counter[str] = Counter()
        empty = 0
        seen: set[str] = set()
        for day in days:
            listed = self._json(day[len(self._prefix) :])
            if not isinstance(listed, list):
                raise ChannelFailure(f"{day} is not a list of messages.")
            for entry in listed:
                message = self._message(entry, day, channel, notices)
                if message is None:
                    continue
                if not message.content.strip() and not message.deleted:
                    empty += 1
                    continue
                if message.key in seen:
                    channel.notes.append((f"message {message.key}", "Its ts comes twice."))
                    continue
                seen.add(message.key)
                channel.messages.append(message)
        channel.messages.sort(key=lambda m: float(m.key))
        self._link_threads(channel)
        for subtype, count in sorted(notices.items()):
            channel.notes.append((f"{count} message(s) of subtype {subtype}", NOTICE_WHY))
        if empty:
            channel.notes.append((f"{empty} empty message(s)", "They hold no text and no file."))
        return channel

    def _message(
        self, entry: Any, day: str, channel: ImportedChannel, notices: Counter[str]
    ) -> ImportedMessage | None:
        if not isinstance(entry, dict):
            raise ChannelFailure(f"{day} holds something that is not a message.")
        ts = entry.get("ts")
        created = _ts(ts)
        if created is None:
            raise ChannelFailure(f"A message in {day} has no valid ts.")
        assert isinstance(ts, str)
        subtype = entry.get("subtype")
        if not isinstance(subtype, str | None):
            raise ChannelFailure(f"The message {ts} in {day} has a subtype that is not text.")
        deleted = subtype == "tombstone"
        if subtype is not None and subtype not in KEPT_SUBTYPES and not deleted:
            notices[subtype] += 1
            return None
        text = entry.get("text", "")
        if not isinstance(text, str):
            raise ChannelFailure(f"The message {ts} in {day} has a text that is not text.")
        metadata: dict[str, Any] = {}
        content = "" if deleted else self._text(text)
        files = entry.get("files")
        if isinstance(files, list) and files:
            names = [_file_name(f) for f in files]
            metadata["importedFiles"] = [
                {"name": n, **({"url": f["url_private"]} if _has_url(f) else {})}
                for n, f in zip(names, files, strict=True)
            ]
            for name in names:
                channel.notes.append((f"file '{name}' (message {ts})", FILES_WHY))
            if not content.strip() and not deleted:
                content = "\n".join(f"📎 {n}" for n in names)
        if len(content) > self._max_chars:
            channel.notes.append(
                (f"message {ts}", f"It is longer than {self._max_chars} characters.")
            )
            return None
        thread = entry.get("thread_ts")
        edited = entry.get("edited")
        return ImportedMessage(
            key=ts,
            thread_key=thread if isinstance(thread, str) and thread != ts else None,
            author=self._author(entry),
            content=content,
            type="text",
            metadata=metadata,
            created_at=created,
            edited_at=_ts(edited.get("ts")) if isinstance(edited, dict) else None,
            deleted=deleted,
            reactions=self._reactions(entry.get("reactions"), ts, channel),
        )

    def _author(self, entry: dict[str, Any]) -> Author:
        user = entry.get("user")
        if isinstance(user, str) and user in self.users:
            return self.users[user]
        profile = entry.get("user_profile")
        if entry.get("subtype") == "bot_message" or (user is None and "bot_id" in entry):
            bot = entry.get("bot_profile")
            name = entry.get("username") or (bot.get("name") if isinstance(bot, dict) else None)
            source = entry.get("bot_id")
            return Author(
                name if isinstance(name, str) else None,
                "agent",
                source if isinstance(source, str) else None,
            )
        if isinstance(user, str):
            self.missing_users.add(user)
            if isinstance(profile, dict):
                return _user_author({**profile, "id": user, "profile": profile})
            return Author(None, "person", user)
        return Author(None)

    def _reactions(self, raw: Any, ts: str, channel: ImportedChannel) -> list[ImportedReaction]:
        if not isinstance(raw, list):
            return []
        reactions = []
        for entry in raw:
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                continue
            found = slack_emoji(entry["name"])
            if found is None:
                channel.notes.append(
                    (
                        f"reaction :{entry['name']}: (message {ts})",
                        "It is a custom emoji of the Slack workspace, or none Unicode has.",
                    )
                )
                continue
            users = entry.get("users")
            authors = [
                self.users.get(u, Author(None, "person", u))
                for u in (users if isinstance(users, list) else [])
                if isinstance(u, str)
            ]
            reactions.append(ImportedReaction(found, authors))
        return reactions

    def _text(self, text: str) -> str:
        """Slack's markup made plain: `<@U…>` mentions become `@Name`, `<#C…|name>` channels
        `#name`, `<url|label>` links Markdown links, and `&amp;`, `&lt;`, `&gt;` characters."""

        def angled(match: re.Match[str]) -> str:
            inner = match.group(1)
            target, _, label = inner.partition("|")
            if target.startswith("@"):
                user = self.users.get(target[1:])
                return f"@{label or (user.label if user else target[1:])}"
            if target.startswith("#"):
                return f"#{label or target[1:]}"
            if target.startswith("!"):
                special = target[1:].split("^", 1)[0]
                return label or f"@{special}"
            return f"[{label}]({target})" if label else target

        return html.unescape(_ANGLED.sub(angled, text))

    @staticmethod
    def _link_threads(channel: ImportedChannel) -> None:
        """A reply whose thread's first message is not here goes on the main timeline."""
        roots = {m.key for m in channel.messages if m.thread_key is None}
        lost: set[str] = set()
        for message in channel.messages:
            if message.thread_key is not None and message.thread_key not in roots:
                lost.add(message.thread_key)
                message.thread_key = None
        for thread in sorted(lost):
            channel.notes.append(
                (
                    f"thread {thread}",
                    "Its first message is not in the export; its replies are on the main timeline.",
                )
            )
        heads = {m.thread_key for m in channel.messages if m.thread_key is not None}
        channel.messages = [m for m in channel.messages if not m.deleted or m.key in heads]


def slack_emoji(name: str) -> str | None:
    """The Unicode emoji of a Slack reaction name (`+1`, `tada`, `wave::skin-tone-3`), or None
    for a custom one."""
    base, _, tone = name.partition("::")
    found: str = emoji_lib.emojize(f":{base}:", language="alias")
    if found == f":{base}:":
        return None
    if tone in _SKIN_TONES:
        found = found.replace("\ufe0f", "") + _SKIN_TONES[tone]
        if not one_emoji(found):
            found = emoji_lib.emojize(f":{base}:", language="alias")
    return found if one_emoji(found) else None


def _ts(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    if not 0 <= seconds < 32503680000:  # before the year 3000
        return None
    return datetime.fromtimestamp(seconds, UTC)


def _user_author(user: dict[str, Any]) -> Author:
    profile = user.get("profile") if isinstance(user.get("profile"), dict) else {}
    assert isinstance(profile, dict)
    names = [
        profile.get("display_name"),
        profile.get("real_name"),
        user.get("real_name"),
        user.get("name"),
    ]
    kept = [n.strip() for n in names if isinstance(n, str) and n.strip()]
    return Author(
        kept[0] if kept else None,
        "agent" if user.get("is_bot") else "person",
        user["id"],
        tuple(dict.fromkeys(kept[1:])),
    )


def _file_name(file: Any) -> str:
    if isinstance(file, dict):
        for key in ("name", "title", "id"):
            if isinstance(file.get(key), str) and file[key]:
                return str(file[key])
    return "file"


def _has_url(file: Any) -> bool:
    return isinstance(file, dict) and isinstance(file.get("url_private"), str)
