"""Following a document through its ingest: `Prefer: respond-async` answers once the file is
recorded, `status`/`progress` in the list and `ingest_progress` events on the owner's sockets
(never a guest's) follow the embedding, a failure leaves no chunk and says why, and a stop in
the middle leaves the document `failed`, not `indexing` forever."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support import (
    Api,
    Guest,
    Server,
    Ws,
    free_port,
    new_agent,
    sql,
    unique,
    wait_until,
)

NOTES = b"# Orchard notes\n\nThe cider press is cleaned every Sunday.\n\nBees sit by the fence.\n"
ASYNC = {"Prefer": "respond-async"}


def upload(
    api: Api, agent_id: str, data: bytes, headers: dict[str, str] | None = None
) -> httpx.Response:
    return api.post(
        "/api/rag/upload",
        files={"file": ("notes.md", data, "text/markdown")},
        data={"agentId": agent_id},
        headers=headers or {},
    )


def listed(api: Api, agent_id: str, document_id: str) -> dict[str, Any]:
    documents = api.ok("GET", "/api/rag/documents", params={"agentId": agent_id})["documents"]
    found: dict[str, Any] = next(d for d in documents if d["id"] == document_id)
    return found


def unique_notes() -> bytes:
    return NOTES + unique("marker ").encode()


def test_respond_async_answers_202_while_indexing_and_events_follow_to_ready(
    server: Server, owner: Api
) -> None:
    agent = new_agent(owner)["id"]
    with Ws(server, owner.token) as ws:
        response = upload(owner, agent, unique_notes(), ASYNC)
        assert response.status_code == 202, response.text
        assert response.headers["preference-applied"] == "respond-async"
        document = response.json()["document"]
        assert document["status"] == "indexing" and document["error"] is None
        assert document["progress"] == {"done": 0, "total": document["chunks"]}
        done = ws.expect("ingest_progress", documentId=document["id"], status="ready", timeout=60)
        assert done["data"] == {
            "documentId": document["id"],
            "agentId": agent,
            "done": document["chunks"],
            "total": document["chunks"],
            "status": "ready",
        }
    ready = listed(owner, agent, document["id"])
    assert ready["status"] == "ready"
    assert ready["progress"] == {"done": ready["chunks"], "total": ready["chunks"]}


def test_upload_without_the_preference_still_answers_when_indexed(owner: Api) -> None:
    agent = new_agent(owner)["id"]
    response = upload(owner, agent, unique_notes())
    assert response.status_code == 200, response.text
    assert "preference-applied" not in response.headers
    assert response.json()["document"]["status"] == "ready"


def test_a_failed_ingest_keeps_no_chunk_and_says_why(server: Server, owner: Api) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    owner.ok(
        "PUT", "/api/settings", json={"providers": {"deademb": {"type": "openai", "baseUrl": dead}}}
    )
    # Put back the embedding found, not another: a model the shared server has not loaded yet
    # makes the next test's upload wait for it (seconds on a busy machine).
    found = owner.ok("GET", "/api/settings")["settings"]["embedding"]
    owner.ok("PUT", "/api/settings", json={"embedding": {"provider": "deademb", "model": "e"}})
    try:
        agent = new_agent(owner)["id"]
        with Ws(server, owner.token) as ws:
            response = upload(owner, agent, unique_notes(), ASYNC)
            assert response.status_code == 202, response.text
            document = response.json()["document"]
            ws.expect("ingest_progress", documentId=document["id"], status="failed", timeout=60)
    finally:
        owner.ok("PUT", "/api/settings", json={"embedding": found})
        owner.ok("PUT", "/api/settings", json={"providers": {"deademb": None}})
    failed = listed(owner, agent, document["id"])
    assert failed["status"] == "failed"
    assert failed["error"].startswith("Indexing failed:")
    assert sql(server, "SELECT count(*) FROM chunks WHERE document_id = ?", document["id"]) == [
        (0,)
    ]
    again = upload(owner, agent, unique_notes())
    assert again.status_code == 200 and again.json()["duplicate"] is False


def test_a_stop_during_indexing_leaves_the_document_failed(fresh_server: Server) -> None:
    fresh_server.start()
    with fresh_server.login() as owner:
        agent = new_agent(owner)["id"]
        document = upload(owner, agent, unique_notes(), ASYNC).json()["document"]
        wait_until(
            lambda: listed(owner, agent, document["id"])["status"] == "ready",
            timeout=120,
            what="indexing",
        )
    fresh_server.stop()
    sql(fresh_server, "UPDATE documents SET status = 'indexing' WHERE id = ?", document["id"])
    fresh_server.start()
    with fresh_server.login() as owner:
        interrupted = listed(owner, agent, document["id"])
    assert interrupted["status"] == "failed"
    assert "interrupted" in interrupted["error"] and "upload" in interrupted["error"]


def test_guests_get_no_ingest_paths_and_no_ingest_events(server: Server, owner: Api) -> None:
    agent = new_agent(owner)["id"]
    with Guest(server, owner) as guest, Ws(server, guest.api.token) as guest_ws:
        refused = upload(guest.api, agent, unique_notes(), ASYNC)
        assert refused.status_code == 403
        listing = guest.api.get("/api/rag/documents", params={"agentId": agent})
        assert listing.status_code == 403
        with Ws(server, owner.token) as ws:
            document = upload(owner, agent, unique_notes(), ASYNC).json()["document"]
            ws.expect("ingest_progress", documentId=document["id"], status="ready", timeout=60)
        guest_ws.send({"type": "ping"})
        guest_ws.expect("pong")
        assert not [e for e in guest_ws.seen if e["type"] == "ingest_progress"]
