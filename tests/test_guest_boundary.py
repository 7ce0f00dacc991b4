"""What a guest can reach over HTTP: the agents of its channels without their SOUL.md, the
uploads shared with it, and nothing of a channel it is not in, not even through an error."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Any

import httpx
import pytest

from palaver.store import migrate
from tests.support import Api, Guest, Server, new_agent, new_channel, post, sql, token_hash, unique

LIST_ITEM = {"id", "name", "avatar", "description", "model", "tools", "status"}
BOUNDARY = "guest-boundary"


def upload(api: Api, filename: str, data: bytes) -> str:
    response = api.post("/api/upload", files={"file": (filename, data, "text/plain")})
    assert response.status_code == 200, response.text
    url: str = response.json()["url"]
    return url


def same_404(response: httpx.Response, missing: httpx.Response) -> None:
    assert response.status_code == missing.status_code == 404
    assert response.json() == missing.json()


def test_a_guest_sees_only_the_agents_of_its_channels_and_never_a_soul(
    server: Server, owner: Api
) -> None:
    seen = new_agent(owner, soul="# Seen\nThe owner's private instructions.")
    hidden = new_agent(owner, soul="# Hidden")
    with Guest(server, owner) as guest:
        assert guest.api.ok("GET", "/api/agents") == {"agents": []}
        new_channel(owner, agent_ids=[seen["id"]], member_ids=[guest.id])
        new_channel(owner, agent_ids=[hidden["id"]])
        (listed,) = guest.api.ok("GET", "/api/agents")["agents"]
        assert listed == {k: seen[k] for k in LIST_ITEM}
        assert guest.api.ok("GET", f"/api/agents/{seen['id']}") == {"agent": listed}
        for agent_id in (hidden["id"], "agent_x"):
            response = guest.api.get(f"/api/agents/{agent_id}")
            assert response.status_code == 404
            assert response.json() == {"error": f"No agent has the id '{agent_id}'."}
    everyone = {a["id"] for a in owner.ok("GET", "/api/agents")["agents"]}
    assert {seen["id"], hidden["id"]} <= everyone
    detail = owner.ok("GET", f"/api/agents/{seen['id']}")["agent"]
    assert detail["soul"] == "# Seen\nThe owner's private instructions."


def test_cancelling_a_reply_in_a_channel_the_guest_is_not_in_answers_as_an_unknown_reply(
    server: Server, owner: Api
) -> None:
    agent = new_agent(owner)
    hidden = new_channel(owner, agent_ids=[agent["id"]])
    stored = post(owner, hidden["id"], "a message of a channel the guest is not in")
    streaming = f"msg_{unique('draft')}"
    sql(
        server,
        "INSERT INTO reply_drafts (message_id, channel_id, agent_id, content, metadata, "
        "started_at, updated_at) VALUES (?, ?, ?, '', '{}', "
        "'2024-05-01 12:00:00.000000', '2024-05-01 12:00:00.000000')",
        streaming,
        hidden["id"],
        agent["id"],
    )
    try:
        with Guest(server, owner) as guest:
            for message_id in (stored, streaming):
                response = guest.api.post(f"/api/messages/{message_id}/cancel")
                missing = guest.api.post(f"/api/messages/{message_id}x/cancel")
                assert response.status_code == missing.status_code == 404
                assert response.json() == {"error": f"No reply has the id '{message_id}'."}
                assert hidden["id"] not in response.text
        assert owner.post(f"/api/messages/{stored}/cancel").status_code == 409
    finally:
        sql(server, "DELETE FROM reply_drafts WHERE message_id = ?", streaming)


def test_an_upload_is_readable_by_the_owner_its_uploader_and_channels_that_carry_its_url(
    server: Server, owner: Api
) -> None:
    with Guest(server, owner) as alice, Guest(server, owner) as bob, Guest(server, owner) as eve:
        mine = upload(owner, "owner-notes.txt", b"the owner's file")
        hers = upload(alice.api, "café.txt", b"alice's file")
        assert "%C3%A9" in hers, "the URL as the service answers it, percent-encoded"
        missing = alice.api.get(mine.rsplit("-", 1)[0] + "-00000000.txt")
        same_404(alice.api.get(mine), missing)
        assert alice.api.get(hers).content == b"alice's file"
        for other in (bob, eve):
            same_404(other.api.get(hers), missing)

        together = new_channel(owner, member_ids=[alice.id, bob.id])
        post(alice.api, together["id"], f"Here it is: {hers}.")
        assert bob.api.get(hers).content == b"alice's file"
        same_404(eve.api.get(hers), missing)
        same_404(bob.api.get(mine), missing)

        post(owner, together["id"], "an image", type="image", metadata={"url": mine})
        assert bob.api.get(mine).content == b"the owner's file"
        same_404(eve.api.get(mine), missing)
        assert owner.get(hers).content == b"alice's file"

        elsewhere = new_channel(owner, member_ids=[eve.id])
        post(owner, elsewhere["id"], f"see {server.base_url}{hers}")
        assert eve.api.get(hers).content == b"alice's file"


def test_a_guest_cannot_share_an_upload_it_may_no_longer_read(server: Server, owner: Api) -> None:
    with Guest(server, owner) as alice, Guest(server, owner) as bob:
        secret = upload(owner, "plans.txt", b"the owner's plans")
        missing = bob.api.get(secret.rsplit("-", 1)[0] + "-00000000.txt")
        inner = new_channel(owner, member_ids=[alice.id])
        post(owner, inner["id"], f"the plans: {secret}")
        assert alice.api.get(secret).content == b"the owner's plans"
        owner.ok("PUT", f"/api/channels/{inner['id']}", json={"memberIds": []})
        same_404(alice.api.get(secret), missing)
        outer = new_channel(owner, member_ids=[alice.id, bob.id])
        post(alice.api, outer["id"], f"look what I kept: {secret}")
        same_404(bob.api.get(secret), missing)
        same_404(alice.api.get(secret), missing)
        made_up = "/uploads/2024-01/nothing-here-00000000.txt"
        post(alice.api, outer["id"], f"and {made_up}")
        assert sql(
            server, "SELECT count(*) FROM upload_references WHERE path LIKE '2024-01/%'"
        ) == [(0,)]


def _fill_0004(path: Any, guest_key: str, url: str) -> None:
    stamp = "2024-05-01 12:00:00.000000"
    with closing(sqlite3.connect(path)) as db, db:
        db.execute(
            "INSERT INTO users VALUES ('user_01GUEST', 'Gus', 'guest', ?, ?)",
            (token_hash(guest_key), stamp),
        )
        db.execute(
            "INSERT INTO channels VALUES ('ch_01OLD', 'archive', 'group', ?, ?)", (stamp,) * 2
        )
        db.execute("INSERT INTO channel_members VALUES ('ch_01OLD', 'user_01GUEST', 0)")
        db.execute(
            "INSERT INTO messages VALUES ('msg_01OLD', 'ch_01OLD', NULL, NULL, ?, 'text', '{}', ?)",
            (f"the minutes: {url}", stamp),
        )


@pytest.mark.sqlite_only
def test_uploads_linked_before_the_upgrade_stay_readable_by_the_channels_members(
    fresh_server: Server,
) -> None:
    guest_key = "pvg_" + "k" * 43
    url = "/uploads/2024-05/minutes-0123abcd.txt"
    fresh_server.data_dir.mkdir(parents=True)
    migrate.upgrade(f"sqlite+aiosqlite:///{fresh_server.db_path}", "0004_chains")
    _fill_0004(fresh_server.db_path, guest_key, url)
    folder = fresh_server.data_dir / "uploads" / "2024-05"
    folder.mkdir(parents=True)
    (folder / "minutes-0123abcd.txt").write_bytes(b"old minutes")
    (folder / "other-0123abcd.txt").write_bytes(b"never linked")
    fresh_server.start()
    with fresh_server.login(guest_key) as guest:
        assert guest.get(url).content == b"old minutes"
        assert guest.get("/uploads/2024-05/other-0123abcd.txt").status_code == 404


def test_the_model_and_tool_catalogues_with_their_errors_are_the_owners(
    server: Server, owner: Api
) -> None:
    """A provider's or MCP server's error names its address or command: owner settings."""
    unreachable = {"type": "openai", "baseUrl": "http://user:secret@127.0.0.1:9/v1"}
    owner.ok("PUT", "/api/settings", json={"providers": {"hidden": unreachable}})
    try:
        assert "hidden" in owner.ok("GET", "/api/models")["errors"]
        with Guest(server, owner) as guest:
            for path in ("/api/models", "/api/tools"):
                response = guest.api.get(path)
                assert response.status_code == 403, response.text
                assert "secret" not in response.text and "127.0.0.1" not in response.text
    finally:
        owner.ok("PUT", "/api/settings", json={"providers": {"hidden": None}})
    assert owner.ok("GET", "/api/tools")["tools"]
