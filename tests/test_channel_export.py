"""A channel's export (JSON, Markdown, a zip with its files) and its import back, and what a
guest may and may not do with them (issue 25)."""

from __future__ import annotations

import io
import json
import time
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest

from tests.channel_files import (
    IMPORT,
    channel_named,
    everything,
    export,
    export_json,
    import_file,
    imported,
    shape,
    upload,
)
from tests.support import (
    Api,
    Guest,
    Server,
    Ws,
    history,
    new_agent,
    new_channel,
    post,
    unique,
    wait_until,
)


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


def test_bad_requests_to_import_and_export_are_400(owner: Api) -> None:
    channel = new_channel(owner)
    response = export(owner, channel["id"], format="xml")
    assert response.status_code == 400 and "format" in response.json()["error"]
    response = owner.post(IMPORT, files={"other": ("x.json", b"{}", "application/json")})
    assert response.status_code == 400
    assert response.json() == {"error": "The form has no 'file' file."}
    response = owner.post(IMPORT, json={"file": "no"})
    assert response.status_code == 400
