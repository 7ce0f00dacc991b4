"""A channel's export (JSON, Markdown, a zip with its files) and imports (Palaver's own export
back, and Slack's workspace export), with what a guest may and may not do (issue 25)."""

from __future__ import annotations

import io
import json
import threading
import time
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from palaver.errors import Invalid, UnsupportedMedia
from palaver.transfer import palaver_import
from palaver.transfer.model import ChannelFailure
from palaver.transfer.prepare import Directory, prepare
from palaver.transfer.slack_import import SlackExport, slack_emoji
from palaver.transfer.unpack import Unpacker
from tests.support import (
    Api,
    Guest,
    Server,
    Ws,
    files_under,
    history,
    new_agent,
    new_channel,
    post,
    sql,
    unique,
    wait_until,
)

IMPORT = "/api/channels/import"


def export(api: Api, channel_id: str, **params: Any) -> httpx.Response:
    return api.get(f"/api/channels/{channel_id}/export", params=params)


def export_json(api: Api, channel_id: str) -> dict[str, Any]:
    response = export(api, channel_id)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    return body


def import_file(
    api: Api, data: bytes, name: str = "export.zip", kind: str = "application/zip"
) -> httpx.Response:
    return api.post(IMPORT, files={"file": (name, data, kind)})


def imported(api: Api, data: bytes, name: str = "export.zip") -> dict[str, Any]:
    response = import_file(api, data, name)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def zipped(entries: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, value in entries.items():
            data = value if isinstance(value, bytes | str) else json.dumps(value)
            archive.writestr(name, data)
    return buffer.getvalue()


def everything(api: Api, channel_id: str) -> list[dict[str, Any]]:
    """History as a reader sees it: the main timeline, each thread's replies after its root."""
    found = []
    for message in history(api, channel_id, limit=200):
        found.append(message)
        if message["thread"] is not None:
            replies = history(api, channel_id, threadId=message["id"], limit=200)[1:]
            found.extend(replies)
    return found


def shape(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What a round trip keeps: all but the ids, threads by their root's position."""
    position = {m["id"]: i for i, m in enumerate(messages)}
    return [
        (
            m["content"],
            m["type"],
            m["userId"],
            m["agentId"],
            m["createdAt"],
            m["editedAt"],
            m["deleted"],
            position[m["threadId"]] if m["threadId"] else None,
            [(r["emoji"], r["userIds"]) for r in m["reactions"]],
            (m["thread"] or {}).get("replyCount"),
            (m["thread"] or {}).get("participantIds"),
            m["metadata"].get("importedAuthor"),
        )
        for m in messages
    ]


def channel_named(api: Api, name: str) -> list[dict[str, Any]]:
    return [c for c in api.ok("GET", "/api/channels")["channels"] if c["name"] == name]


def upload(api: Api, name: str, data: bytes) -> str:
    url: str = api.ok("POST", "/api/upload", files={"file": (name, data, "text/plain")})["url"]
    return url


@pytest.fixture
def room(server: Server, owner: Api) -> Iterator[tuple[dict[str, Any], Guest, dict[str, Any]]]:
    """A channel with an agent and a guest, and a history: a thread, reactions, an edit, a
    deletion, a deleted root kept for its reply, and an agent's reply."""
    agent = new_agent(owner)
    with Guest(server, owner) as guest:
        channel = new_channel(owner, agent_ids=[agent["id"]], member_ids=[guest.id])
        cid = channel["id"]
        first = post(owner, cid, "The first message of the channel")
        owner.ok("POST", f"/api/messages/{first}/reactions", json={"emoji": "👍"})
        guest.api.ok("POST", f"/api/messages/{first}/reactions", json={"emoji": "👍"})
        guest.api.ok("POST", f"/api/messages/{first}/reactions", json={"emoji": "🎉"})
        root = post(owner, cid, "A question for a thread")
        post(guest.api, cid, "A reply in the thread", threadId=root)
        post(owner, cid, "Another reply", threadId=root)
        edited = post(guest.api, cid, "Typo hre")
        guest.api.ok("PATCH", f"/api/messages/{edited}", json={"content": "Typo here"})
        gone = post(owner, cid, "This one goes")
        owner.ok("DELETE", f"/api/messages/{gone}")
        head = post(owner, cid, "A head deleted later")
        post(guest.api, cid, "The reply that keeps it", threadId=head)
        owner.ok("DELETE", f"/api/messages/{head}")
        post(owner, cid, f"@{agent['name']} say something")
        wait_until(
            lambda: any(m["agentId"] == agent["id"] for m in history(owner, cid)),
            timeout=20,
            what="the agent's reply",
        )
        yield channel, guest, agent


def test_the_json_export_is_the_channel_as_history_shows_it_threads_after_their_root(
    owner: Api, room: tuple[dict[str, Any], Guest, dict[str, Any]]
) -> None:
    channel, guest, agent = room
    response = export(owner, channel["id"])
    assert response.headers["content-disposition"].startswith("attachment; filename=")
    body = export_json(owner, channel["id"])
    assert (body["format"], body["version"]) == ("palaver.channel", 1)
    assert body["channel"]["id"] == channel["id"]
    assert body["channel"]["name"] == channel["name"]
    assert body["files"] == []
    people = {p["id"]: (p["kind"], p["name"]) for p in body["people"]}
    assert people[guest.id] == ("person", guest.user["name"])
    assert people[agent["id"]] == ("agent", agent["name"])
    assert body["messages"] == everything(owner, channel["id"])
    contents = [m["content"] for m in body["messages"]]
    assert "This one goes" not in contents
    assert contents[:4] == [
        "The first message of the channel",
        "A question for a thread",
        "A reply in the thread",
        "Another reply",
    ]
    tombstone = body["messages"][contents.index("Typo here") + 1]
    assert (tombstone["deleted"], tombstone["content"]) == (True, "")
    assert body["messages"][contents.index("Typo here")]["editedAt"] is not None
    first = body["messages"][0]
    assert [(r["emoji"], r["count"]) for r in first["reactions"]] == [("👍", 2), ("🎉", 1)]


def test_the_markdown_export_is_a_transcript_with_threads_indented(
    owner: Api, room: tuple[dict[str, Any], Guest, dict[str, Any]]
) -> None:
    channel, guest, agent = room
    response = export(owner, channel["id"], format="markdown")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/markdown; charset=utf-8"
    assert response.headers["content-disposition"].endswith(".md")
    text = response.text
    assert text.startswith(f"# #{channel['name'].replace('-', '-')}\n")
    assert "**Owner** ·" in text
    assert "The first message of the channel" in text
    assert f"*Reactions: 👍 Owner, {guest.user['name']} · 🎉 {guest.user['name']}*" in text
    assert f"> **{guest.user['name']}** ·" in text
    assert "> A reply in the thread" in text
    assert "*This message was deleted.*" in text
    assert "> The reply that keeps it" in text
    assert "Typo here" in text and "edited" in text
    assert f"**{agent['name']}** ·" in text
    assert "This one goes" not in text
    assert text.index("A question for a thread") < text.index("> A reply in the thread")
    assert text.index("> Another reply") < text.index("Typo here")


def test_an_export_with_uploads_is_a_zip_holding_the_document_and_the_files(
    owner: Api,
) -> None:
    channel = new_channel(owner)
    data = b"the bytes of the attachment " * 100
    url = upload(owner, "notes.txt", data)
    post(owner, channel["id"], f"The notes: {url}.")
    response = export(owner, channel["id"])
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/zip"
    assert response.headers["content-disposition"].endswith(".zip")
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        document = json.loads(archive.read("channel.json"))
        (entry,) = document["files"]
        assert entry["url"] == url
        assert archive.read(entry["path"]) == data
        assert entry["size"] == len(data)
        assert entry["path"] == "files/" + url.removeprefix("/uploads/")
    bare = export(owner, channel["id"], files="false")
    assert bare.headers["content-type"] == "application/json"
    assert bare.json()["files"] == [{**entry, "path": None}]
    transcript = export(owner, channel["id"], format="markdown")
    assert transcript.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(transcript.content)) as archive:
        text = archive.read("channel.md").decode()
        assert f"The notes: {entry['path']}." in text
        assert archive.read(entry["path"]) == data


def test_export_then_import_gives_the_same_messages_threads_reactions_and_files(
    server: Server, owner: Api, room: tuple[dict[str, Any], Guest, dict[str, Any]]
) -> None:
    channel, _, agent = room
    data = bytes(range(256)) * 40
    url = upload(owner, "chart.png", data)
    word = unique("zebra")
    post(owner, channel["id"], f"The chart {url} and the word {word}")
    before = everything(owner, channel["id"])
    response = export(owner, channel["id"])
    assert response.headers["content-type"] == "application/zip"
    with Ws(server, owner.token) as socket:
        report = imported(owner, response.content)
        (made,) = report["channels"]
        created = socket.expect("channel_created", id=made["id"])
    assert created["data"]["unreadCount"] == 0
    assert made["name"] == channel["name"] and made["id"] != channel["id"]
    assert made["agentIds"] == [agent["id"]]
    assert made["imported"] == report["imported"] == len(before)
    assert report["skipped"] == []
    after = everything(owner, made["id"])
    (attached,) = [m for m in after if word in m["content"]]
    new_url = attached["content"].split()[2]
    assert new_url != url and new_url.startswith("/uploads/")
    assert owner.get(new_url).content == data
    for message in before:
        message["content"] = message["content"].replace(url, new_url)
    assert shape(after) == shape(before)
    assert {m["id"] for m in after}.isdisjoint({m["id"] for m in before})
    listed = [c for c in owner.ok("GET", "/api/channels")["channels"] if c["id"] == made["id"]]
    assert listed[0]["unreadCount"] == 0
    found = owner.ok("GET", "/api/search", params={"q": word})["results"]
    assert {r["channel"]["id"] for r in found} == {channel["id"], made["id"]}
    time.sleep(0.5)
    assert len(everything(owner, made["id"])) == len(before), "an agent answered the import"


def test_an_imported_author_found_nowhere_is_kept_by_name_and_written_by_nobody(
    owner: Api,
) -> None:
    name = unique("Ada ")
    document = {
        "format": "palaver.channel",
        "version": 1,
        "channel": {"name": unique("old-"), "type": "group"},
        "people": [
            {"id": "user_gone", "kind": "person", "name": name},
            {"id": "user_owner_elsewhere", "kind": "person", "name": "Owner"},
        ],
        "files": [],
        "messages": [
            {
                "id": "m1",
                "userId": "user_gone",
                "content": "Written long ago",
                "createdAt": "2020-02-03T04:05:06.789Z",
                "reactions": [{"emoji": "👍", "userIds": ["user_owner_elsewhere", "user_gone"]}],
            },
            {
                "id": "m2",
                "userId": "user_owner_elsewhere",
                "content": "An answer",
                "createdAt": "2020-02-03T04:06:00.000Z",
                "threadId": "m1",
            },
        ],
    }
    report = imported(owner, json.dumps(document).encode(), "channel.json")
    (made,) = report["channels"]
    first, reply = everything(owner, made["id"])
    owner_id = owner.ok("GET", "/api/me")["user"]["id"]
    assert (first["userId"], first["agentId"]) == (None, None)
    assert first["metadata"]["importedAuthor"] == name
    assert first["createdAt"] == "2020-02-03T04:05:06.789Z"
    assert first["reactions"] == [{"emoji": "👍", "count": 1, "userIds": [owner_id]}]
    assert first["metadata"]["importedReactions"] == [{"emoji": "👍", "names": [name]}]
    assert reply["userId"] == owner_id and reply["threadId"] == first["id"]
    assert first["id"] < reply["id"]


def slack_export(guest_name: str, agent_name: str, stranger: str) -> dict[str, Any]:
    """A workspace export in Slack's documented layout."""
    users = [
        {"id": "U1", "name": "g", "real_name": guest_name, "profile": {"real_name": guest_name}},
        {"id": "U2", "name": "s", "profile": {"display_name": stranger, "real_name": "S"}},
        {"id": "U3", "name": "bot", "profile": {"real_name": agent_name}},
    ]
    channels = [
        {"id": "C1", "name": "general", "created": 1704153600, "members": ["U1", "U2"]},
        {"id": "C2", "name": "random", "created": 1704153600, "members": ["U1"]},
    ]
    general = [
        {
            "type": "message",
            "subtype": "channel_join",
            "user": "U2",
            "text": "<@U2> joined",
            "ts": "1704186000.000100",
        },
        {
            "type": "message",
            "user": "U1",
            "text": "Hello <@U2>, see <https://example.org|the site> &amp; more",
            "ts": "1704186060.000200",
            "thread_ts": "1704186060.000200",
            "reply_count": 1,
            "reactions": [
                {"name": "+1", "users": ["U1", "U2"], "count": 2},
                {"name": "partyparrot", "users": ["U2"], "count": 1},
            ],
        },
        {
            "type": "message",
            "user": "U2",
            "text": "A reply in the thread",
            "ts": "1704186120.000300",
            "thread_ts": "1704186060.000200",
            "reactions": [{"name": "tada", "users": ["U3"], "count": 1}],
        },
        {
            "type": "message",
            "user": "U3",
            "text": "",
            "ts": "1704186180.000400",
            "files": [
                {
                    "id": "F1",
                    "name": "report.pdf",
                    "title": "Report",
                    "url_private": "https://files.slack.com/files-pri/T1-F1/report.pdf",
                }
            ],
        },
        {"type": "message", "user": "U9", "text": "Who am I?", "ts": "1704186240.000500"},
    ]
    return {
        "users.json": users,
        "channels.json": channels,
        "general/2024-01-02.json": general,
        "random/2024-01-03.json": [
            {"type": "message", "user": "U2", "text": "Over here", "ts": "1704272400.000100"},
        ],
    }


def test_a_slack_export_imports_with_threads_reactions_and_a_report_of_what_it_left(
    server: Server, owner: Api
) -> None:
    agent = new_agent(owner)
    stranger = unique("Grace ")
    with Guest(server, owner) as guest:
        files = slack_export(guest.user["name"], agent["name"], stranger)
        files["channels.json"][0]["name"] = general = unique("general-")
        files["channels.json"][1]["name"] = random = unique("random-")
        files[f"{general}/2024-01-02.json"] = files.pop("general/2024-01-02.json")
        files[f"{random}/2024-01-03.json"] = files.pop("random/2024-01-03.json")
        report = imported(owner, zipped(files))
    assert [c["name"] for c in report["channels"]] == [general, random]
    assert report["imported"] == 5
    skipped = {s["what"]: s["why"] for s in report["skipped"]}
    assert "notice" in skipped[f"#{general}: 1 message(s) of subtype channel_join"]
    assert "url_private" in skipped[f"#{general}: file 'report.pdf' (message 1704186180.000400)"]
    assert (
        "custom emoji" in skipped[f"#{general}: reaction :partyparrot: (message 1704186060.000200)"]
    )
    assert "users.json" in skipped["user U9"]
    messages = everything(owner, report["channels"][0]["id"])
    root, reply, shared, lost = messages
    assert root["userId"] == guest.id
    assert root["content"] == f"Hello @{stranger}, see [the site](https://example.org) & more"
    assert root["createdAt"] == "2024-01-02T09:01:00.000Z"
    assert root["reactions"] == [{"emoji": "👍", "count": 1, "userIds": [guest.id]}]
    assert root["metadata"]["importedReactions"] == [{"emoji": "👍", "names": [stranger]}]
    assert root["thread"]["replyCount"] == 1
    assert reply["threadId"] == root["id"]
    assert reply["metadata"]["importedAuthor"] == stranger
    assert reply["reactions"] == [{"emoji": "🎉", "count": 1, "userIds": [agent["id"]]}]
    assert shared["agentId"] == agent["id"]
    assert shared["content"] == "📎 report.pdf"
    assert shared["metadata"]["importedFiles"][0]["name"] == "report.pdf"
    assert lost["metadata"]["importedAuthor"] == "U9"
    (elsewhere,) = everything(owner, report["channels"][1]["id"])
    assert elsewhere["content"] == "Over here"


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("+1", "👍"),
        ("thumbsup", "👍"),
        ("tada", "🎉"),
        ("wave::skin-tone-3", "👋🏼"),
        ("white_check_mark", "✅"),
        ("partyparrot", None),
        ("", None),
    ],
)
def test_slack_reaction_names_become_unicode_emoji(name: str, found: str | None) -> None:
    assert slack_emoji(name) == found


def test_a_broken_channel_is_not_imported_at_all_and_the_others_are(owner: Api) -> None:
    first, second = unique("fine-"), unique("broken-")
    files = {
        "users.json": [{"id": "U1", "name": "someone"}],
        "channels.json": [{"id": "C1", "name": first}, {"id": "C2", "name": second}],
        f"{first}/2024-01-02.json": [
            {"type": "message", "user": "U1", "text": "fine", "ts": "1704186000.000100"}
        ],
        f"{second}/2024-01-02.json": [
            {"type": "message", "user": "U1", "text": "kept?", "ts": "1704186000.000100"}
        ],
        f"{second}/2024-01-03.json": '[{"type": "message", "text": ',
    }
    report = imported(owner, zipped(files))
    assert [c["name"] for c in report["channels"]] == [first]
    (failure,) = [s for s in report["skipped"] if s["what"] == f"channel '{second}'"]
    assert "2024-01-03.json is not valid JSON" in failure["why"]
    assert channel_named(owner, first) and not channel_named(owner, second)


def test_an_invalid_message_in_the_middle_leaves_nothing_of_its_channel(owner: Api) -> None:
    name, word = unique("half-"), unique("walrus")
    good = {
        "id": "a",
        "userId": None,
        "content": f"first {word}",
        "createdAt": "2021-01-01T00:00:00Z",
    }
    document = {
        "format": "palaver.channel",
        "version": 1,
        "channel": {"name": name, "type": "group"},
        "people": [],
        "files": [],
        "messages": [
            good,
            {**good, "id": "b", "content": "second"},
            {**good, "id": "c", "type": "poem"},
            {**good, "id": "d", "content": "fourth"},
        ],
    }
    report = imported(owner, json.dumps(document).encode(), "c.json")
    assert report["channels"] == [] and report["imported"] == 0
    (failure,) = report["skipped"]
    assert failure["what"] == f"channel '{name}'"
    assert failure["why"].startswith("Message 3: its type must be one of")
    assert not channel_named(owner, name)
    assert owner.ok("GET", "/api/search", params={"q": word})["results"] == []


def test_a_channel_whose_second_file_is_damaged_leaves_neither_file_behind(
    server: Server, owner: Api
) -> None:
    name = unique("damaged-")
    files = [
        {"url": "/uploads/2024-01/a-0123abcd.txt", "path": "files/a.txt", "size": 5},
        {"url": "/uploads/2024-01/b-0123abcd.txt", "path": "files/b.txt", "size": 3},
    ]
    message = {
        "id": "m",
        "content": "see /uploads/2024-01/a-0123abcd.txt and /uploads/2024-01/b-0123abcd.txt",
        "createdAt": "2024-01-05T10:00:00Z",
    }
    document = {
        "format": "palaver.channel",
        "version": 1,
        "channel": {"name": name, "type": "group"},
        "files": files,
        "messages": [message],
    }
    archive = zipped(
        {"channel.json": document, "files/a.txt": b"first", "files/b.txt": b"more than three"}
    )
    uploads = server.data_dir / "uploads"
    before = files_under(uploads)
    report = imported(owner, archive)
    assert report["channels"] == []
    (failure,) = report["skipped"]
    assert "files/b.txt holds more than the 3 bytes it states" in failure["why"]
    assert files_under(uploads) == before
    assert not channel_named(owner, name)


def test_a_guest_exports_what_it_reads_of_its_channels_and_nothing_else(
    server: Server, owner: Api
) -> None:
    with Guest(server, owner) as guest, Guest(server, owner) as other:
        shared = new_channel(owner, member_ids=[guest.id, other.id])
        hidden = new_channel(owner)
        secret = upload(owner, "secret.txt", b"the owner's secret")
        post(owner, hidden["id"], f"only here: {secret}")
        mine = upload(guest.api, "mine.txt", b"the guest's own file")
        post(guest.api, shared["id"], f"mine {mine} and a link I should not share {secret}")
        post(other.api, shared["id"], "I was here")
        post(guest.api, shared["id"], '{"tool": "record"}', type="tool_call")
        owner.ok("PUT", f"/api/channels/{shared['id']}", json={"memberIds": [guest.id]})

        response = export(guest.api, shared["id"])
        assert response.headers["content-type"] == "application/zip"
        with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
            document = json.loads(archive.read("channel.json"))
            assert [f["url"] for f in document["files"]] == [mine]
            assert not any("secret" in n for n in archive.namelist())
        assert document["messages"] == everything(guest.api, shared["id"])
        assert any(m["type"] == "tool_call" for m in document["messages"])
        names = {p["id"]: p["name"] for p in document["people"]}
        assert names[guest.id] == guest.user["name"]
        assert names[other.id] is None, "a guest learned the name of someone it cannot see"
        owners = json.loads(
            zipfile.ZipFile(io.BytesIO(export(owner, shared["id"]).content)).read("channel.json")
        )
        assert {f["url"] for f in owners["files"]} == {mine, secret}
        assert {p["id"]: p["name"] for p in owners["people"]}[other.id] == other.user["name"]

        for channel_id in (hidden["id"], "ch_nothing"):
            response = export(guest.api, channel_id)
            missing = guest.api.get(f"/api/channels/{channel_id}")
            assert response.status_code == missing.status_code == 404
            assert (
                response.json()
                == missing.json()
                == {"error": f"No channel has the id '{channel_id}'."}
            )
        markdown = export(guest.api, hidden["id"], format="markdown")
        assert markdown.status_code == 404


def test_a_guest_may_not_import(server: Server, owner: Api) -> None:
    name = unique("by-guest-")
    document = {
        "format": "palaver.channel",
        "version": 1,
        "channel": {"name": name, "type": "group"},
        "messages": [],
    }
    with Guest(server, owner) as guest:
        response = import_file(guest.api, json.dumps(document).encode(), "c.json")
        assert response.status_code == 403
        assert response.json() == {"error": "Only the owner may do that."}
    assert not channel_named(owner, name)


def test_an_empty_export_imports_as_an_empty_channel(owner: Api) -> None:
    channel = new_channel(owner)
    body = export_json(owner, channel["id"])
    assert body["messages"] == []
    report = imported(owner, json.dumps(body).encode(), "c.json")
    assert report["imported"] == 0 and report["channels"][0]["name"] == channel["name"]


@pytest.mark.parametrize(
    ("data", "status", "words"),
    [
        (b"", 400, "empty"),
        (b"hello, this is text", 415, "neither JSON nor a zip"),
        (b'{"format": "palaver.channel", "version": 1,', 400, "not valid JSON"),
        (b'{"hello": "world"}', 415, "not a Palaver channel export"),
        (b"[1, 2, 3]", 415, "not a Palaver channel export"),
        (b'{"format": "palaver.channel", "version": 2}', 415, "version 2"),
        (b'{"format": "palaver.channel", "version": 1}', 400, "no 'channel'"),
        (b'{"format": "palaver.channel", "version": 1, "channel": []}', 400, "no 'channel'"),
        (
            b'{"format": "palaver.channel", "version": 1, "channel": {"name": "x", "type": "dm"}}',
            400,
            "no 'messages'",
        ),
        (b"PK\x03\x04 but nothing of a zip after", 400, "cannot be read as one"),
        (zipped({"notes.txt": "hello"}), 415, "no export this server knows"),
        (zipped({"channel.md": "# a transcript"}), 415, "Markdown transcript"),
        (zipped({"channel.json": "{"}), 400, "not valid JSON"),
        (zipped({"channels.json": {"a": 1}}), 400, "channels.json is not a list"),
    ],
)
def test_a_file_of_no_known_format_or_malformed_is_refused_with_why(
    owner: Api, data: bytes, status: int, words: str
) -> None:
    before = len(owner.ok("GET", "/api/channels")["channels"])
    response = import_file(owner, data, "upload.bin", "application/octet-stream")
    assert response.status_code == status, response.text
    assert words in response.json()["error"]
    assert len(owner.ok("GET", "/api/channels")["channels"]) == before


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
"""Any JSON value, small."""
IDS = st.sampled_from(["a", "b", "user_x", "agent_y"]) | JSON
TIMES = st.sampled_from(["2020-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00", "9999-12-31"]) | JSON
PALAVER_MESSAGE = st.fixed_dictionaries(
    {},
    optional={
        "id": IDS,
        "type": st.sampled_from(["text", "tool_call"]) | JSON,
        "content": st.just("hi") | JSON,
        "deleted": JSON,
        "metadata": JSON,
        "threadId": IDS,
        "createdAt": TIMES,
        "editedAt": TIMES,
        "userId": IDS,
        "agentId": IDS,
        "reactions": st.lists(
            st.fixed_dictionaries(
                {}, optional={"emoji": st.sampled_from(["👍", "x"]) | JSON, "userIds": JSON}
            )
            | JSON,
            max_size=2,
        )
        | JSON,
    },
)


@settings(max_examples=300)
@given(
    channel=st.fixed_dictionaries(
        {},
        optional={
            "name": st.just("a") | JSON,
            "type": st.sampled_from(["dm", "group"]) | JSON,
            "agentIds": st.lists(IDS, max_size=2) | JSON,
        },
    )
    | JSON,
    people=st.lists(
        st.fixed_dictionaries(
            {}, optional={"id": IDS, "kind": st.sampled_from(["person", "agent"]), "name": JSON}
        )
        | JSON,
        max_size=2,
    )
    | JSON,
    files=st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "url": st.just("/uploads/2024-01/a.txt") | JSON,
                "path": JSON,
                "size": st.integers(-1, 10) | JSON,
            },
        )
        | JSON,
        max_size=2,
    )
    | JSON,
    messages=st.lists(PALAVER_MESSAGE | JSON, max_size=4) | JSON,
)
def test_any_palaver_document_is_read_or_refused_with_a_reason_never_a_crash(
    channel: Any, people: Any, files: Any, messages: Any
) -> None:
    document = {
        "format": "palaver.channel",
        "version": 1,
        "channel": channel,
        "people": people,
        "files": files,
        "messages": messages,
    }
    try:
        found = palaver_import.read(document, 1000)
    except (Invalid, UnsupportedMedia, ChannelFailure) as refused:
        assert str(refused)
        return
    prepare(found, "ch_x", Directory.of([("user_x", "a")], [("agent_y", "b")]), {}, [])


SLACK_MESSAGE = st.fixed_dictionaries(
    {"ts": st.sampled_from(["1704186000.000100", "1704186001.5"]) | JSON},
    optional={
        "type": JSON,
        "subtype": st.sampled_from(["bot_message", "tombstone", "channel_join"]) | JSON,
        "user": st.sampled_from(["U1", "U2"]) | JSON,
        "text": st.sampled_from(["<@U1> <#C1|c> <http://x|y> &amp;", "<!here>"]) | JSON,
        "thread_ts": st.sampled_from(["1704186000.000100"]) | JSON,
        "reactions": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "name": st.sampled_from(["+1", "wave::skin-tone-9"]) | JSON,
                    "users": JSON,
                },
            )
            | JSON,
            max_size=2,
        )
        | JSON,
        "files": st.lists(
            st.fixed_dictionaries({}, optional={"name": JSON, "url_private": JSON}) | JSON,
            max_size=2,
        )
        | JSON,
        "edited": st.fixed_dictionaries({}, optional={"ts": JSON}) | JSON,
        "user_profile": JSON,
        "bot_id": JSON,
        "bot_profile": JSON,
        "username": JSON,
    },
)


@settings(max_examples=300)
@given(
    entries=st.lists(SLACK_MESSAGE | JSON, max_size=4) | JSON,
    users=st.lists(
        st.fixed_dictionaries(
            {"id": st.just("U1") | JSON}, optional={"profile": JSON, "name": JSON, "is_bot": JSON}
        )
        | JSON,
        max_size=2,
    )
    | JSON,
    channels=st.just([{"id": "C1", "name": "c"}])
    | st.lists(
        st.fixed_dictionaries({"id": JSON}, optional={"name": JSON, "members": JSON}) | JSON,
        max_size=2,
    )
    | JSON,
)
def test_any_slack_channel_is_read_or_refused_with_a_reason_never_a_crash(
    entries: Any, users: Any, channels: Any
) -> None:
    files = {
        "users.json": users,
        "dms.json": channels,
        "channels.json": channels,
        "c/2024-01-02.json": entries,
    }
    archive = zipfile.ZipFile(io.BytesIO(zipped(files)))
    try:
        export = SlackExport(Unpacker(archive, 10**6, 10**7), "", 1000)
        for conversation in export.conversations():
            try:
                found = export.read(conversation)
            except ChannelFailure as refused:
                assert str(refused)
                continue
            prepare(found, "ch_x", Directory.of([("user_x", "a")], []), {}, [])
    except Invalid as refused:
        assert str(refused)


def test_bad_requests_to_import_and_export_are_400(owner: Api) -> None:
    channel = new_channel(owner)
    response = export(owner, channel["id"], format="xml")
    assert response.status_code == 400 and "format" in response.json()["error"]
    response = owner.post(IMPORT, files={"other": ("x.json", b"{}", "application/json")})
    assert response.status_code == 400
    assert response.json() == {"error": "The form has no 'file' file."}
    response = owner.post(IMPORT, json={"file": "no"})
    assert response.status_code == 400


def test_an_import_larger_than_the_upload_limit_is_413_and_so_is_a_zip_that_unpacks_huge(
    owner: Api,
) -> None:
    limits = owner.ok("GET", "/api/settings")["settings"]["limits"]
    owner.ok("PUT", "/api/settings", json={"limits": {"maxUploadBytes": 4000}})
    try:
        response = import_file(owner, b"{" + b" " * 5000 + b"}", "big.json")
        assert response.status_code == 413, response.text
        assert "limit" in response.json()["error"]
        bomb = zipped({"channel.json": b" " * 3_000_000})
        assert len(bomb) < 4000
        response = import_file(owner, bomb)
        assert response.status_code == 413, response.text
        assert "unpacks to" in response.json()["error"]
    finally:
        owner.ok("PUT", "/api/settings", json={"limits": limits})


LONG_AGO = datetime(2022, 1, 1, tzinfo=UTC)


def big_export(name: str, count: int) -> bytes:
    messages = [
        {
            "id": f"m{i}",
            "userId": None,
            "content": f"message {i} of a long history, with some words to index {i * 7}",
            "createdAt": (LONG_AGO + timedelta(milliseconds=i)).isoformat(),
            "metadata": {"importedAuthor": "Someone"},
        }
        for i in range(count)
    ]
    document = {
        "format": "palaver.channel",
        "version": 1,
        "channel": {"name": name, "type": "group"},
        "people": [],
        "files": [],
        "messages": messages,
    }
    return json.dumps(document).encode()


@pytest.mark.sqlite_only
def test_a_server_killed_during_an_import_has_imported_nothing_after_its_restart(
    fresh_server: Server,
) -> None:
    """The import's transaction is cut: the write-ahead log shows it writing, then `kill -9`."""
    fresh_server.start()
    name = unique("killed-")
    data = big_export(name, 60_000)
    with fresh_server.login() as owner:
        owner.ok("PUT", "/api/settings", json={"limits": {"maxUploadBytes": 64 * 1024 * 1024}})
        wal = fresh_server.db_path.with_name("palaver.db-wal")
        start = wal.stat().st_size if wal.exists() else 0
        answered: list[int] = []

        def send() -> None:
            try:
                answered.append(import_file(owner, data, "big.json").status_code)
            except httpx.HTTPError:
                answered.append(0)

        sender = threading.Thread(target=send)
        sender.start()
        wait_until(
            lambda: (wal.exists() and wal.stat().st_size > start + 4_000_000) or bool(answered),
            timeout=120,
            what="the import's transaction writing",
        )
        assert not answered, "the import finished before it could be cut"
        fresh_server.kill()
        sender.join(30)
    fresh_server.start()
    with fresh_server.login() as owner:
        assert not channel_named(owner, name)
    assert sql(fresh_server, "SELECT count(*) FROM channels WHERE name = ?", name) == [(0,)]
    assert sql(fresh_server, "SELECT count(*) FROM messages WHERE content LIKE 'message %'") == [
        (0,)
    ]
