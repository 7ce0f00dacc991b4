"""Messages people can fix, thread and react to: edit (with versions), delete (erased),
reactions and threads, over the API and the socket (issue 22)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.support import Api, Guest, Server, Ws, history, new_channel, post, sql, unique


@pytest.fixture
def channel(owner: Api) -> str:
    return str(new_channel(owner)["id"])


def _me(api: Api) -> str:
    return str(api.ok("GET", "/api/me")["user"]["id"])


def _error(response: Any, status: int) -> str:
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert set(body) - {"field", "requestId"} == {"error"}, body
    return str(body["error"])


# -- edit ------------------------------------------------------------------------------------


def test_a_new_message_is_unedited_unthreaded_and_without_reactions(
    owner: Api, channel: str
) -> None:
    post(owner, channel, "fresh")
    [message] = history(owner, channel)
    assert message["editedAt"] is None and message["threadId"] is None
    assert message["reactions"] == [] and message["thread"] is None
    assert message["deleted"] is False


def test_the_author_edits_and_everyone_hears_the_whole_message(
    server: Server, owner: Api, channel: str
) -> None:
    message_id = post(owner, channel, "a typo in teh text")
    with Ws(server, owner.token) as ws:
        ws.subscribe(channel)
        body = owner.ok("PATCH", f"/api/messages/{message_id}", json={"content": "the text"})
        event = ws.expect("message_updated")
    edited = body["message"]
    assert edited["content"] == "the text" and edited["editedAt"] is not None
    assert event["data"] == edited
    assert history(owner, channel) == [edited]


def test_every_version_is_kept_oldest_first(owner: Api, channel: str) -> None:
    message_id = post(owner, channel, "one")
    owner.ok("PATCH", f"/api/messages/{message_id}", json={"content": "two"})
    third = owner.ok("PATCH", f"/api/messages/{message_id}", json={"content": "three"})
    versions = owner.ok("GET", f"/api/messages/{message_id}/versions")["versions"]
    assert [v["content"] for v in versions] == ["one", "two", "three"]
    assert versions[0]["editedAt"] is None
    assert versions[1]["editedAt"] < versions[2]["editedAt"] == third["message"]["editedAt"]


def test_nobody_edits_what_is_not_their_own_text(server: Server, owner: Api) -> None:
    with Guest(server, owner) as guest:
        channel = str(new_channel(owner, member_ids=[guest.id])["id"])
        owners = post(owner, channel, "the owner's")
        guests = post(guest.api, channel, "the guest's")
        change = {"content": "changed"}
        _error(guest.api.patch(f"/api/messages/{owners}", json=change), 403)
        _error(owner.patch(f"/api/messages/{guests}", json=change), 403)
        guest.api.ok("PATCH", f"/api/messages/{guests}", json=change)
        agent_reply = unique("msg_")
        sql(
            server,
            "INSERT INTO messages (id, channel_id, agent_id, user_id, content, type, metadata,"
            " created_at, reply_count) VALUES (?, ?, 'agent_x', NULL, 'an answer', 'text', '{}',"
            " '2026-01-01 00:00:00.000000', 0)",
            agent_reply,
            channel,
        )
        _error(owner.patch(f"/api/messages/{agent_reply}", json=change), 403)


def test_an_edit_with_bad_content_or_of_an_unknown_message_is_refused(
    owner: Api, channel: str
) -> None:
    message_id = post(owner, channel, "fine")
    assert "empty" in _error(
        owner.patch(f"/api/messages/{message_id}", json={"content": "   "}), 400
    )
    _error(owner.patch(f"/api/messages/{message_id}", json={}), 400)
    _error(owner.patch("/api/messages/msg_nope", json={"content": "x"}), 404)
    _error(owner.get("/api/messages/msg_nope/versions"), 404)
    assert history(owner, channel)[0]["content"] == "fine"


# -- delete ----------------------------------------------------------------------------------


def test_the_author_deletes_and_the_message_is_gone_everywhere(
    server: Server, owner: Api, channel: str
) -> None:
    keep = post(owner, channel, "keep")
    gone = post(owner, channel, "remove me")
    history(owner, channel)  # its JSON is cached now
    with Ws(server, owner.token) as ws:
        ws.subscribe(channel)
        assert owner.ok("DELETE", f"/api/messages/{gone}") == {"ok": True}
        event = ws.expect("message_deleted")
    assert event["data"] == {"id": gone, "channelId": channel, "threadId": None}
    assert [m["id"] for m in history(owner, channel)] == [keep]
    _error(owner.get(f"/api/messages/{gone}/versions"), 404)
    _error(owner.delete(f"/api/messages/{gone}"), 404)
    _error(owner.patch(f"/api/messages/{gone}", json={"content": "back"}), 404)
    _error(owner.post(f"/api/messages/{gone}/reactions", json={"emoji": "👍"}), 404)


def test_paging_before_a_deleted_message_still_works(owner: Api, channel: str) -> None:
    ids = [post(owner, channel, f"m{i}") for i in range(4)]
    owner.ok("DELETE", f"/api/messages/{ids[2]}")
    page = history(owner, channel, before=ids[2], limit=10)
    assert [m["id"] for m in page] == ids[:2]


def test_who_may_delete_what(server: Server, owner: Api) -> None:
    with Guest(server, owner) as guest, Guest(server, owner) as other:
        channel = str(new_channel(owner, member_ids=[guest.id, other.id])["id"])
        owners = post(owner, channel, "the owner's")
        guests = post(guest.api, channel, "the guest's")
        others = post(other.api, channel, "the other guest's")
        _error(guest.api.delete(f"/api/messages/{owners}"), 403)
        _error(guest.api.delete(f"/api/messages/{others}"), 403)
        guest.api.ok("DELETE", f"/api/messages/{guests}")
        owner.ok("DELETE", f"/api/messages/{others}")
        assert [m["id"] for m in history(owner, channel)] == [owners]


def test_a_deleted_message_leaves_no_trace_in_the_data_dir(
    server: Server, owner: Api, channel: str
) -> None:
    if server.database_url is not None:
        pytest.skip("about SQLite's files; PostgreSQL's equivalent is documented")
    secret = f"sk-live-{unique()}{unique()}"
    message_id = post(owner, channel, f"oops, my key is {secret}")
    assert owner.ok("GET", "/api/search", params={"q": secret})["results"]
    owner.ok("PATCH", f"/api/messages/{message_id}", json={"content": f"still {secret}"})
    owner.ok("PATCH", f"/api/messages/{message_id}", json={"content": "gone soon"})
    history(owner, channel)
    assert owner.ok("GET", "/api/search", params={"q": secret})["results"] == []
    # The search index holds words, not the text: the key's last word (its random part; the
    # end of it, should the index share the start with a neighbouring word) must go too.
    needles = (secret.encode(), secret.rsplit("-", 1)[-1][-12:].encode())

    def holders() -> list[str]:
        return [
            str(p)
            for p in server.data_dir.rglob("*")
            if p.is_file() and any(needle in p.read_bytes() for needle in needles)
        ]

    assert holders(), "the text was in a file of the data dir first"
    # Others keep posting meanwhile: the search index's merge goes on in steps between their
    # writes, and must still reach the deleted words.
    stop = threading.Event()

    def chatter() -> None:
        with server.login() as poster:
            while not stop.is_set():
                post(poster, channel, f"meanwhile {unique()}")

    posting = threading.Thread(target=chatter)
    posting.start()
    try:
        owner.ok("DELETE", f"/api/messages/{message_id}")
        deadline = time.monotonic() + 5
        while holders() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        stop.set()
        posting.join()
    assert holders() == []


# -- reactions -------------------------------------------------------------------------------


def test_reactions_are_idempotent_counted_and_keep_the_order_first_reacted(
    server: Server, owner: Api
) -> None:
    with Guest(server, owner) as guest:
        channel = str(new_channel(owner, member_ids=[guest.id])["id"])
        message_id = post(owner, channel, "ship it?")
        history(owner, channel)
        me = _me(owner)
        with Ws(server, owner.token) as ws:
            ws.subscribe(channel)
            path = f"/api/messages/{message_id}/reactions"
            assert owner.ok("POST", path, json={"emoji": "👍"}) == {"ok": True}
            added = ws.expect("reaction_added")
            owner.ok("POST", path, json={"emoji": "👍"})
            guest.api.ok("POST", path, json={"emoji": "🎉"})
            guest.api.ok("POST", path, json={"emoji": "👍"})
            assert added["data"] == {
                "messageId": message_id,
                "channelId": channel,
                "emoji": "👍",
                "userId": me,
            }
            [message] = history(owner, channel)
            assert message["reactions"] == [
                {"emoji": "👍", "count": 2, "userIds": [me, guest.id]},
                {"emoji": "🎉", "count": 1, "userIds": [guest.id]},
            ]
            owner.ok("DELETE", f"{path}/👍")
            removed = ws.expect("reaction_removed")
            assert removed["data"]["userId"] == me and removed["data"]["emoji"] == "👍"
            owner.ok("DELETE", f"{path}/👍")
        [message] = history(owner, channel)
        assert message["reactions"] == [
            {"emoji": "👍", "count": 1, "userIds": [guest.id]},
            {"emoji": "🎉", "count": 1, "userIds": [guest.id]},
        ]


def test_a_reaction_must_be_one_emoji(owner: Api, channel: str) -> None:
    message_id = post(owner, channel, "react to me")
    path = f"/api/messages/{message_id}/reactions"
    for bad in ("x", "👍👍", "", "ok 👍"):
        _error(owner.post(path, json={"emoji": bad}), 400)
    _error(owner.delete(f"{path}/nope"), 400)
    _error(owner.post("/api/messages/msg_nope/reactions", json={"emoji": "👍"}), 404)


def test_at_most_fifty_distinct_emoji_on_a_message(owner: Api, channel: str) -> None:
    message_id = post(owner, channel, "so many feelings")
    path = f"/api/messages/{message_id}/reactions"
    faces = [chr(0x1F600 + i) for i in range(51)]
    for face in faces[:50]:
        owner.ok("POST", path, json={"emoji": face})
    assert "50" in _error(owner.post(path, json={"emoji": faces[50]}), 400)
    owner.ok("POST", path, json={"emoji": faces[0]})
    assert len(history(owner, channel)[0]["reactions"]) == 50


# -- threads ---------------------------------------------------------------------------------


def test_replies_go_to_the_thread_not_the_channel(server: Server, owner: Api) -> None:
    with Guest(server, owner) as guest:
        channel = str(new_channel(owner, member_ids=[guest.id])["id"])
        root = post(owner, channel, "shall we?")
        history(owner, channel)
        with Ws(server, owner.token) as ws:
            ws.subscribe(channel)
            first = post(guest.api, channel, "yes", threadId=root)
            event = ws.expect("message", id=first)
            updated = ws.expect("message_updated")
            second = post(owner, channel, "nested", threadId=first)
        assert event["data"]["threadId"] == root
        assert updated["data"]["id"] == root and updated["data"]["thread"]["replyCount"] == 1
        after = post(owner, channel, "main again")
        timeline = history(owner, channel)
        assert [m["id"] for m in timeline] == [root, after]
        summary = timeline[0]["thread"]
        assert summary["replyCount"] == 2
        assert summary["participantIds"] == [guest.id, _me(owner)]
        thread = history(owner, channel, threadId=root)
        assert [m["id"] for m in thread] == [root, first, second]
        assert [m["threadId"] for m in thread] == [None, root, root]
        assert summary["lastReplyAt"] == thread[-1]["createdAt"]
        assert [m["id"] for m in history(owner, channel, threadId=root, limit=2)] == [
            first,
            second,
        ]
        assert [m["id"] for m in history(owner, channel, threadId=root, before=second)] == [
            root,
            first,
        ]


def test_a_thread_root_deleted_with_replies_stays_as_a_tombstone(owner: Api, channel: str) -> None:
    root = post(owner, channel, "root with secrets")
    reply = post(owner, channel, "a reply", threadId=root)
    owner.ok("DELETE", f"/api/messages/{root}")
    [tombstone] = history(owner, channel)
    assert tombstone["id"] == root and tombstone["deleted"] is True
    assert tombstone["content"] == "" and tombstone["userId"] == _me(owner)
    assert tombstone["thread"]["replyCount"] == 1
    assert [m["id"] for m in history(owner, channel, threadId=root)] == [root, reply]
    second = post(owner, channel, "a second reply", threadId=root)
    owner.ok("DELETE", f"/api/messages/{reply}")
    assert history(owner, channel)[0]["thread"]["replyCount"] == 1
    owner.ok("DELETE", f"/api/messages/{second}")
    assert history(owner, channel) == [], "a head without replies goes too"


def test_a_thread_cannot_hang_from_a_deleted_message_or_another_channel(
    owner: Api, channel: str
) -> None:
    elsewhere = post(owner, str(new_channel(owner)["id"]), "elsewhere")
    gone = post(owner, channel, "gone")
    owner.ok("DELETE", f"/api/messages/{gone}")
    body = {"channelId": channel, "content": "reply"}
    for thread_id in (elsewhere, gone, "msg_nope"):
        _error(owner.post("/api/messages", json={**body, "threadId": thread_id}), 400)
    _error(owner.get("/api/messages", params={"channelId": channel, "threadId": elsewhere}), 404)


# -- the guest boundary ----------------------------------------------------------------------


def test_a_hidden_message_is_404_whatever_the_verb(server: Server, owner: Api) -> None:
    with Guest(server, owner) as guest:
        hidden_channel = str(new_channel(owner)["id"])
        hidden = post(owner, hidden_channel, "not for guests")
        api = guest.api
        expected = _error(api.patch("/api/messages/msg_nope", json={"content": "x"}), 404)
        for response in (
            api.patch(f"/api/messages/{hidden}", json={"content": "x"}),
            api.delete(f"/api/messages/{hidden}"),
            api.get(f"/api/messages/{hidden}/versions"),
            api.post(f"/api/messages/{hidden}/reactions", json={"emoji": "👍"}),
            api.delete(f"/api/messages/{hidden}/reactions/👍"),
        ):
            assert _error(response, 404) == expected.replace("msg_nope", hidden)
        reply = {"channelId": hidden_channel, "content": "hi", "threadId": hidden}
        _error(api.post("/api/messages", json=reply), 404)
        params = {"channelId": hidden_channel, "threadId": hidden}
        _error(api.get("/api/messages", params=params), 404)
        [message] = history(owner, hidden_channel)
        assert message["content"] == "not for guests" and message["reactions"] == []


def test_an_upload_only_the_deleted_message_named_is_removed_from_disk(
    server: Server, owner: Api, channel: str
) -> None:
    def upload(name: str) -> str:
        files = {"file": (name, f"{unique()} secret".encode(), "text/plain")}
        return str(owner.ok("POST", "/api/upload", files=files)["url"])

    alone, shared = upload("only here.txt"), upload("shared.txt")
    gone = post(owner, channel, f"see {alone} and {shared}")
    post(owner, channel, f"also {shared}")
    on_disk = {
        url: server.data_dir / "uploads" / url.removeprefix("/uploads/") for url in (alone, shared)
    }
    assert all(path.exists() for path in on_disk.values()), on_disk
    owner.ok("DELETE", f"/api/messages/{gone}")
    assert not on_disk[alone].exists()
    assert owner.get(alone).status_code == 404
    assert on_disk[shared].exists() and owner.get(shared).status_code == 200


def test_a_guests_socket_hears_the_changes_of_its_channels_only(server: Server, owner: Api) -> None:
    with Guest(server, owner) as guest:
        shared = str(new_channel(owner, member_ids=[guest.id])["id"])
        hidden = str(new_channel(owner)["id"])
        secret = post(owner, hidden, "hidden")
        open_one = post(owner, shared, "shared")
        with Ws(server, guest.api.token) as ws:
            ws.subscribe(shared)
            ws.send({"type": "subscribe", "channelId": hidden})
            owner.ok("PATCH", f"/api/messages/{secret}", json={"content": "hidden, edited"})
            owner.ok("POST", f"/api/messages/{secret}/reactions", json={"emoji": "👀"})
            owner.ok("DELETE", f"/api/messages/{secret}")
            owner.ok("PATCH", f"/api/messages/{open_one}", json={"content": "shared, edited"})
            assert ws.expect("message_updated")["data"]["id"] == open_one
        assert all((e.get("data") or {}).get("channelId") in (None, shared) for e in ws.seen), (
            ws.seen
        )
