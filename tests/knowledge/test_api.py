"""The knowledge base and memories over HTTP, on a real server with the real local embedding
model: uploads of real files, hybrid queries re-scored by the agent's model (a fake), document
and memory management, what deleting an agent removes, and re-indexing after an embedding change
(over the API with progress events, and with `palaver reindex` on a stopped server's data).

The memory texts were measured against BASE with the model (see tests/test_memory.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import Reply, text
from tests.fakes.server import RecordedRequest
from tests.knowledge.helpers import graded_passages, is_grading, make_pdf
from tests.memory_texts import ALSO_RELATED, BASE, DISTANT, DUPLICATE, RELATED
from tests.support import Api, Server, Ws, free_port, new_agent, sql

GRADER = "kbgrader"
"""The provider id under which the fake model that re-scores passages is configured."""

DOCUMENT_FIELDS = {
    "id",
    "agentId",
    "name",
    "kind",
    "bytes",
    "pages",
    "chunks",
    "visibility",
    "createdAt",
    "status",
    "error",
    "progress",
}
RESULT_FIELDS = {
    "chunkId",
    "documentId",
    "documentName",
    "content",
    "headingPath",
    "page",
    "score",
    "textRank",
    "vectorRank",
}

ORCHARD_PAGES = [
    "The cider press is cleaned with hot water every Sunday after pressing.",
    "",
    "The beehives sit along the south fence; the keeper inspects them every April.",
]
BIKE_GUIDE = """# Bicycle care

A short guide to keeping a bicycle safe.

## Brakes

Squeeze the brake lever and check that the pads touch the rim evenly.

## Chain

Oil the chain every 300 kilometres and wipe off the extra oil with a rag.
"""
TENANCY = (
    "The tenant pays the rent on the first day of each month by bank transfer.\n\n"
    "Pets are allowed with the landlord's written consent.\n"
)

MEMORY_FIELDS = {
    "id",
    "agentId",
    "type",
    "content",
    "channelId",
    "sourceMessageId",
    "version",
    "createdAt",
    "updatedAt",
}
FACTS = [
    ("The owner's cat is called Miso.", "semantic"),
    ("Deploys go out on Tuesdays, after the stand-up meeting.", "procedural"),
    ("The owner moved to Lisbon in March.", "episodic"),
]
LOCAL = ("local/all-MiniLM-L6-v2-int8", 384)
"""The vector space of the default local embedder."""


def local_space(owner: Api) -> tuple[str, int]:
    """The local vector space the server embeds with now: the module's server is shared, and
    other tests choose the float or the int8 model."""
    return (f"local/{owner.ok('GET', '/api/settings')['settings']['embedding']['model']}", 384)


@pytest.fixture(scope="module")
def grader(owner: Api) -> Iterator[FakeOpenAI]:
    """A fake model configured as provider `kbgrader`; tests set its `responder`."""
    with FakeOpenAI() as fake:
        provider = {"type": "openai", "baseUrl": fake.base_url, "apiKey": "sk-test-grader"}
        owner.ok("PUT", "/api/settings", json={"providers": {GRADER: provider}})
        yield fake
        owner.ok("PUT", "/api/settings", json={"providers": {GRADER: None}})


@pytest.fixture
def agent(owner: Api, grader: FakeOpenAI) -> Iterator[dict[str, Any]]:
    """A new agent whose language model is the grader fake."""
    yield new_agent(owner, model=f"{GRADER}/grader")
    grader.responder = None
    grader.reset()


def upload(
    api: Api, agent_id: str | None, name: str, data: bytes, content_type: str = "text/plain"
) -> httpx.Response:
    form = {"agentId": agent_id} if agent_id is not None else {}
    return api.post("/api/rag/upload", files={"file": (name, data, content_type)}, data=form)


def uploaded(api: Api, agent_id: str, name: str, data: bytes) -> dict[str, Any]:
    response = upload(api, agent_id, name, data)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert set(body) == {"document", "duplicate"}
    assert set(body["document"]) == DOCUMENT_FIELDS
    return body


def query(api: Api, agent_id: str, text: str, top_k: int = 5) -> dict[str, Any]:
    return api.ok(
        "POST", "/api/rag/query", json={"agentId": agent_id, "query": text, "topK": top_k}
    )


def spaces(server: Server, agent_id: str) -> dict[tuple[str, int], int]:
    """How many of the agent's vectors each embedder made."""
    rows = sql(
        server,
        "SELECT embedder, dim, count(*) FROM vectors WHERE agent_id = ? GROUP BY embedder, dim",
        agent_id,
    )
    return {(embedder, dim): count for embedder, dim, count in rows}


def grading_requests(fake: FakeOpenAI) -> list[RecordedRequest]:
    return [r for r in fake.model_requests if is_grading(r)]


# Uploads.


def test_a_pdf_is_indexed_with_its_page_numbers(owner: Api, agent: dict[str, Any]) -> None:
    pdf = make_pdf(ORCHARD_PAGES)
    body = uploaded(owner, agent["id"], "orchard.pdf", pdf)
    document = body["document"]
    assert body["duplicate"] is False
    assert document["agentId"] == agent["id"]
    assert (document["name"], document["kind"], document["bytes"]) == (
        "orchard.pdf",
        "pdf",
        len(pdf),
    )
    assert (document["pages"], document["chunks"]) == (3, 2)
    assert document["id"].startswith("doc_") and document["createdAt"].endswith("Z")
    found = query(owner, agent["id"], "When are the beehives inspected?", top_k=1)["results"]
    assert len(found) == 1 and set(found[0]) >= RESULT_FIELDS
    assert found[0]["page"] == 3 and "beehives" in found[0]["content"]
    assert (found[0]["documentId"], found[0]["documentName"]) == (document["id"], "orchard.pdf")


def test_markdown_is_chunked_by_its_headings(owner: Api, agent: dict[str, Any]) -> None:
    document = uploaded(owner, agent["id"], "bikes.md", BIKE_GUIDE.encode())["document"]
    assert (document["kind"], document["pages"], document["chunks"]) == ("markdown", None, 3)
    best = query(owner, agent["id"], "How often should I oil the chain?")["results"][0]
    assert best["headingPath"] == ["Bicycle care", "Chain"]
    assert best["page"] is None and "300 kilometres" in best["content"]
    assert best["textRank"] == 1 and best["vectorRank"] == 1
    assert best["score"] == pytest.approx(2 / 61)


def test_a_text_file_is_indexed_and_its_kind_comes_from_its_content(
    owner: Api, agent: dict[str, Any]
) -> None:
    plain = uploaded(owner, agent["id"], "tenancy.txt", TENANCY.encode())["document"]
    assert (plain["kind"], plain["pages"], plain["chunks"]) == ("text", None, 1)
    unnamed = uploaded(owner, agent["id"], "notes", BIKE_GUIDE.replace("300", "250").encode())
    assert unnamed["document"]["kind"] == "markdown"
    best = query(owner, agent["id"], "Are pets allowed in the flat?")["results"][0]
    assert best["documentName"] == "tenancy.txt" and "Pets" in best["content"]


def test_the_same_content_uploaded_twice_is_stored_once(owner: Api, agent: dict[str, Any]) -> None:
    first = uploaded(owner, agent["id"], "tenancy.txt", TENANCY.encode())
    again = uploaded(owner, agent["id"], "copy-of-tenancy.txt", TENANCY.encode())
    assert (first["duplicate"], again["duplicate"]) == (False, True)
    assert again["document"] == first["document"]
    listed = owner.ok("GET", "/api/rag/documents", params={"agentId": agent["id"]})
    assert [d["id"] for d in listed["documents"]] == [first["document"]["id"]]


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("photo.png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)), "PNG"),
        ("data.json", b'{"rent": 1200}', ".json"),
        ("blob.txt", bytes(range(256)) * 4, "binary"),
    ],
)
def test_other_kinds_are_refused_with_415(
    owner: Api, agent: dict[str, Any], name: str, data: bytes, reason: str
) -> None:
    response = upload(owner, agent["id"], name, data, "application/octet-stream")
    assert response.status_code == 415, response.text
    assert reason in response.json()["error"]


def test_an_encrypted_pdf_is_refused_with_400_naming_the_reason(
    owner: Api, agent: dict[str, Any]
) -> None:
    locked = make_pdf(["The safe's code is 4711."], user_password="secret")
    response = upload(owner, agent["id"], "locked.pdf", locked, "application/pdf")
    assert response.status_code == 400, response.text
    assert "encrypted" in response.json()["error"]


def test_a_corrupt_pdf_is_refused_with_400(owner: Api, agent: dict[str, Any]) -> None:
    response = upload(owner, agent["id"], "broken.pdf", b"%PDF-1.7\n" + b"\x00garbage" * 50)
    assert response.status_code == 400, response.text
    assert "PDF" in response.json()["error"]


def test_an_upload_over_the_limit_is_refused_with_413(owner: Api, agent: dict[str, Any]) -> None:
    default = owner.ok("GET", "/api/settings")["settings"]["limits"]["maxUploadBytes"]
    owner.ok("PUT", "/api/settings", json={"limits": {"maxUploadBytes": 2000}})
    try:
        too_big = upload(owner, agent["id"], "long.txt", b"All work and no play. " * 200)
        fits = upload(owner, agent["id"], "short.txt", b"A short note about the garden gate.")
    finally:
        owner.ok("PUT", "/api/settings", json={"limits": {"maxUploadBytes": default}})
    assert too_big.status_code == 413, too_big.text
    assert "2000" in too_big.json()["error"]
    assert fits.status_code == 200, fits.text


def test_an_upload_for_an_unknown_agent_is_404_and_without_agent_400(
    owner: Api, agent: dict[str, Any]
) -> None:
    unknown = upload(owner, "agent_nobody", "tenancy.txt", TENANCY.encode())
    assert unknown.status_code == 404, unknown.text
    missing = upload(owner, None, "tenancy.txt", TENANCY.encode())
    assert missing.status_code == 400, missing.text
    assert "agentId" in missing.json()["error"]
    assert owner.ok("GET", "/api/rag/documents", params={"agentId": agent["id"]}) == {
        "documents": []
    }


# Queries and re-scoring.


def test_a_query_is_re_scored_by_the_agents_model(
    owner: Api, agent: dict[str, Any], grader: FakeOpenAI
) -> None:
    """The model grades the fused top ten in one call; its grades set the order."""
    uploaded(owner, agent["id"], "orchard.pdf", make_pdf(ORCHARD_PAGES))
    uploaded(owner, agent["id"], "bikes.md", BIKE_GUIDE.encode())
    uploaded(owner, agent["id"], "tenancy.txt", TENANCY.encode())
    question = "What needs cleaning or checking?"

    grader.responder = lambda request: text("I would rather not grade these.")
    fused = query(owner, agent["id"], question, top_k=20)
    assert fused["reranked"] is False
    assert all("relevance" not in r or r["relevance"] is None for r in fused["results"])
    scores = [r["score"] for r in fused["results"]]
    assert scores == sorted(scores, reverse=True) and len(scores) == 6

    def ascending(request: RecordedRequest) -> Reply:
        """Grade passage i with i: the fusion order, reversed."""
        return text(json.dumps({"scores": list(range(len(graded_passages(request))))}))

    grader.responder = ascending
    graded = query(owner, agent["id"], question, top_k=4)
    assert graded["reranked"] is True
    fusion_order = [r["chunkId"] for r in fused["results"]]
    assert [r["chunkId"] for r in graded["results"]] == fusion_order[::-1][:4]
    assert [r["relevance"] for r in graded["results"]] == [5.0, 4.0, 3.0, 2.0]

    (first, second) = grading_requests(grader)
    assert graded_passages(first) == graded_passages(second)
    assert graded_passages(first) == [" ".join(r["content"].split()) for r in fused["results"]]
    assert first.body["model"] == "grader" and "JSON" in first.body["messages"][0]["content"]
    assert question in first.body["messages"][-1]["content"]


def test_a_failed_re_scoring_keeps_the_fusion_order(
    owner: Api, agent: dict[str, Any], grader: FakeOpenAI
) -> None:
    uploaded(owner, agent["id"], "bikes.md", BIKE_GUIDE.encode())
    grader.responder = lambda request: text('{"scores": [10]}')
    short = query(owner, agent["id"], "brake pads")
    grader.responder = lambda request: text(
        json.dumps({"scores": [0] * len(graded_passages(request))})
    )
    flat = query(owner, agent["id"], "brake pads")
    assert short["reranked"] is False and flat["reranked"] is True
    assert [r["chunkId"] for r in short["results"]] == [r["chunkId"] for r in flat["results"]]
    assert short["results"][0]["headingPath"] == ["Bicycle care", "Brakes"]


def test_a_query_checks_its_agent_and_its_bounds(owner: Api, agent: dict[str, Any]) -> None:
    assert query(owner, agent["id"], "anything at all") == {"results": [], "reranked": False}
    body = {"agentId": "agent_nobody", "query": "x"}
    assert owner.post("/api/rag/query", json=body).status_code == 404
    body = {"agentId": agent["id"], "query": "x", "topK": 21}
    assert owner.post("/api/rag/query", json=body).status_code == 400
    assert owner.post("/api/rag/query", json={"agentId": agent["id"]}).status_code == 400


def test_a_query_s_top_k_is_a_json_integer(owner: Api, agent: dict[str, Any]) -> None:
    """As the schema says: 3.0 is an integer, "3" and true are not."""
    body = {"agentId": agent["id"], "query": "x", "topK": 3.0}
    assert owner.post("/api/rag/query", json=body).status_code == 200
    for top_k in ("3", True):
        body = {"agentId": agent["id"], "query": "x", "topK": top_k}
        assert owner.post("/api/rag/query", json=body).status_code == 400


# Documents.


def test_documents_are_listed_newest_first_and_deleted_with_their_chunks(
    server: Server, owner: Api, agent: dict[str, Any]
) -> None:
    bikes = uploaded(owner, agent["id"], "bikes.md", BIKE_GUIDE.encode())["document"]
    lease = uploaded(owner, agent["id"], "tenancy.txt", TENANCY.encode())["document"]
    listed = owner.ok("GET", "/api/rag/documents", params={"agentId": agent["id"]})["documents"]
    assert listed == [lease, bikes]
    found = query(owner, agent["id"], "oil the chain", top_k=10)["results"]
    assert bikes["id"] in {r["documentId"] for r in found}

    assert owner.ok("DELETE", f"/api/rag/documents/{bikes['id']}") == {"ok": True}
    listed = owner.ok("GET", "/api/rag/documents", params={"agentId": agent["id"]})["documents"]
    assert listed == [lease]
    found = query(owner, agent["id"], "oil the chain", top_k=10)["results"]
    assert {r["documentId"] for r in found} == {lease["id"]}
    assert sql(server, "SELECT count(*) FROM chunks WHERE document_id = ?", bikes["id"]) == [(0,)]
    assert spaces(server, agent["id"]) == {local_space(owner): lease["chunks"]}
    assert owner.delete(f"/api/rag/documents/{bikes['id']}").status_code == 404
    assert owner.get("/api/rag/documents", params={"agentId": "agent_nobody"}).status_code == 404


# Memories.


def remember(api: Api, agent_id: str, content: str, **fields: Any) -> dict[str, Any]:
    return api.ok("POST", f"/api/agents/{agent_id}/memories", json={"content": content, **fields})


def memories(api: Api, agent_id: str, **params: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = api.ok("GET", f"/api/agents/{agent_id}/memories", params=params)[
        "memories"
    ]
    return found


@pytest.mark.parametrize(
    ("second", "action"),
    [
        (DUPLICATE, "skipped"),
        (RELATED, "updated"),
        (ALSO_RELATED, "updated"),
        (DISTANT, "inserted"),
    ],
)
def test_a_memory_write_is_skipped_updated_or_inserted_by_its_similarity(
    owner: Api, second: str, action: str
) -> None:
    agent = new_agent(owner)["id"]
    first = remember(owner, agent, BASE)
    assert (first["action"], first["similarity"], first["duplicateOf"]) == ("inserted", None, None)
    memory = first["memory"]
    assert set(memory) == MEMORY_FIELDS and (memory["content"], memory["version"]) == (BASE, 1)

    result = remember(owner, agent, second)
    similarity = result["similarity"]
    assert result["action"] == action
    if action == "skipped":
        assert similarity > 0.85
        assert result["duplicateOf"] == memory["id"] and result["memory"] == memory
        assert [m["content"] for m in memories(owner, agent)] == [BASE]
    elif action == "updated":
        assert 0.7 < similarity <= 0.85
        assert result["previousContent"] == BASE and result["duplicateOf"] is None
        assert (result["memory"]["id"], result["memory"]["version"]) == (memory["id"], 2)
        assert [m["content"] for m in memories(owner, agent)] == [second]
    else:
        assert similarity <= 0.7
        assert result["memory"]["id"] != memory["id"]
        assert [m["content"] for m in memories(owner, agent)] == [second, BASE]


def test_an_updated_memory_keeps_its_versions_and_can_be_restored(owner: Api) -> None:
    agent = new_agent(owner)["id"]
    memory = remember(owner, agent, BASE)["memory"]
    assert remember(owner, agent, ALSO_RELATED)["action"] == "updated"
    path = f"/api/agents/{agent}/memories/{memory['id']}"
    versions = owner.ok("GET", f"{path}/versions")["versions"]
    assert [(v["version"], v["content"]) for v in versions] == [(1, BASE)]
    assert versions[0]["memoryId"] == memory["id"]

    restored = owner.ok("POST", f"{path}/restore", json={"version": 1})["memory"]
    assert (restored["id"], restored["content"], restored["version"]) == (memory["id"], BASE, 3)
    versions = owner.ok("GET", f"{path}/versions")["versions"]
    assert [(v["version"], v["content"]) for v in versions] == [(1, BASE), (2, ALSO_RELATED)]
    assert memories(owner, agent) == [restored]
    assert owner.post(f"{path}/restore", json={"version": 9}).status_code == 404
    assert owner.post(f"{path}/restore", json={"version": 0}).status_code == 400


def test_the_owner_corrects_and_deletes_a_memory(owner: Api) -> None:
    agent = new_agent(owner)["id"]
    memory = remember(owner, agent, "The owner's cat is called Mio.", type="semantic")["memory"]
    path = f"/api/agents/{agent}/memories/{memory['id']}"
    change = {"content": "The owner's cat is called Miso.", "type": "episodic"}
    corrected = owner.ok("PUT", path, json=change)["memory"]
    assert (corrected["content"], corrected["type"], corrected["version"]) == (
        change["content"],
        "episodic",
        2,
    )
    assert corrected["createdAt"] == memory["createdAt"]
    assert memories(owner, agent) == [corrected]
    (old,) = owner.ok("GET", f"{path}/versions")["versions"]
    assert (old["content"], old["type"]) == (memory["content"], "semantic")

    assert owner.ok("DELETE", path) == {"ok": True}
    assert memories(owner, agent) == []
    assert owner.get(f"{path}/versions").status_code == 404
    assert owner.put(path, json=change).status_code == 404
    assert owner.delete(path).status_code == 404
    assert owner.get("/api/agents/agent_nobody/memories").status_code == 404


def test_a_memory_naming_an_unknown_agent_or_channel_answers_404(
    owner: Api, agent: dict[str, Any]
) -> None:
    body = {"content": "The owner likes tea."}
    assert owner.post("/api/agents/agent_nobody/memories", json=body).status_code == 404
    nowhere = {**body, "channelId": "ch_nowhere"}
    response = owner.post(f"/api/agents/{agent['id']}/memories", json=nowhere)
    assert response.status_code == 404
    assert "ch_nowhere" in response.json()["error"]
    assert memories(owner, agent["id"]) == []


def test_memories_are_searched_by_similarity_and_filtered_by_type(owner: Api) -> None:
    agent = new_agent(owner)["id"]
    for content, kind in FACTS:
        assert remember(owner, agent, content, type=kind)["action"] == "inserted"
    found = memories(owner, agent, q="What is the name of the owner's pet?")
    assert found[0]["content"] == FACTS[0][0]
    similarities = [m["similarity"] for m in found]
    assert similarities == sorted(similarities, reverse=True) and len(found) == 3
    assert [m["content"] for m in memories(owner, agent, type="procedural")] == [FACTS[1][0]]
    moved = memories(owner, agent, q="Where does the owner live?", type="episodic")
    assert [m["content"] for m in moved] == [FACTS[2][0]]
    assert owner.get(f"/api/agents/{agent}/memories", params={"type": "gossip"}).status_code == 400


# Deleting an agent, and re-indexing.


def test_deleting_an_agent_deletes_its_memories_and_documents(server: Server, owner: Api) -> None:
    agent = new_agent(owner)["id"]
    uploaded(owner, agent, "bikes.md", BIKE_GUIDE.encode())
    memory = remember(owner, agent, BASE)["memory"]
    remember(owner, agent, ALSO_RELATED)
    assert spaces(server, agent) == {local_space(owner): 4}

    assert owner.ok("DELETE", f"/api/agents/{agent}") == {"ok": True}
    for table in ("documents", "chunks", "memories", "vectors"):
        assert sql(server, f"SELECT count(*) FROM {table} WHERE agent_id = ?", agent) == [(0,)]
    versions = sql(server, "SELECT count(*) FROM memory_versions WHERE memory_id = ?", memory["id"])
    assert versions == [(0,)]
    assert owner.get(f"/api/agents/{agent}/memories").status_code == 404
    assert owner.get("/api/rag/documents", params={"agentId": agent}).status_code == 404
    assert owner.post(f"/api/agents/{agent}/reindex").status_code == 404


@pytest.mark.parametrize(
    ("patch", "reason"),
    [
        ({"embedding": {"provider": "kb-absent"}}, "'kb-absent' is not configured"),
        ({"embedding": {"provider": "local", "model": "bert-base"}}, "only has 'all-MiniLM"),
        (
            {"providers": {"offline": {"type": "builtin"}}, "embedding": {"provider": "offline"}},
            "must be of type 'openai'",
        ),
    ],
)
def test_an_unusable_embedding_setting_is_refused(
    owner: Api, patch: dict[str, Any], reason: str
) -> None:
    before = owner.ok("GET", "/api/settings")["settings"]
    response = owner.put("/api/settings", json=patch)
    assert response.status_code == 409, response.text
    assert "'embedding'" in response.json()["error"] and reason in response.json()["error"]
    assert owner.ok("GET", "/api/settings")["settings"] == before


def test_an_embedding_change_leaves_vectors_stale_until_they_are_reindexed(
    fresh_server: Server,
) -> None:
    """Over the API with progress events to the owner, then with `palaver reindex` on the
    stopped server's data directory."""
    fresh_server.start()
    with fresh_server.login() as owner, FakeOpenAI(embedding_dim=8) as embeddings:
        provider = {"type": "openai", "baseUrl": embeddings.base_url}
        owner.ok("PUT", "/api/settings", json={"providers": {"emb": provider}})
        agent = new_agent(owner)["id"]
        document = uploaded(owner, agent, "bikes.md", BIKE_GUIDE.encode())["document"]
        for content, kind in FACTS:
            remember(owner, agent, content, type=kind)
        total = document["chunks"] + len(FACTS)
        assert spaces(fresh_server, agent) == {LOCAL: total}

        remote = {"provider": "emb", "model": "fake-embedding"}
        owner.ok("PUT", "/api/settings", json={"embedding": remote})
        stale = query(owner, agent, "oil the chain")["results"]
        assert stale and all(r["vectorRank"] is None for r in stale)
        assert memories(owner, agent, q="the owner's pet") == []

        with Ws(fresh_server, owner.token) as ws:
            assert owner.ok("POST", f"/api/agents/{agent}/reindex") == {"ok": True}
            ws.expect("reindex_progress", agentId=agent, done=0, total=total)
            ws.expect("reindex_progress", agentId=agent, done=total, total=total, timeout=30)
        assert spaces(fresh_server, agent) == {("openai:emb/fake-embedding", 8): total}
        assert any(r.path == "/v1/embeddings" for r in embeddings.requests)
        found = query(owner, agent, "oil the chain")["results"]
        assert {r["vectorRank"] for r in found} >= {1}
        assert len(memories(owner, agent, q="the owner's pet")) == len(FACTS)

        local = {"provider": "local", "model": "all-MiniLM-L6-v2-int8"}
        owner.ok("PUT", "/api/settings", json={"embedding": local})
    fresh_server.stop()

    run = subprocess.run(
        [sys.executable, "-m", "palaver", "reindex", "--data-dir", str(fresh_server.data_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **fresh_server.env},
    )
    assert run.returncode == 0, run.stderr
    assert f"[{'#' * 30}] {total}/{total}" in run.stderr
    assert f"[{'.' * 30}] 0/{total}" in run.stderr
    assert spaces(fresh_server, agent) == {LOCAL: total}


def test_a_failing_embedding_endpoint_is_named_without_its_address(fresh_server: Server) -> None:
    """Guests read what a memory or knowledge search answers; the owner's log keeps where."""
    fresh_server.start()
    port = free_port()
    key = "sk-embedding-secret-0123456789"
    down = {"type": "openai", "baseUrl": f"http://127.0.0.1:{port}/v1", "apiKey": key}
    with fresh_server.login() as owner:
        settings = {"providers": {"emb": down}, "embedding": {"provider": "emb", "model": "e"}}
        owner.ok("PUT", "/api/settings", json=settings)
        agent = new_agent(owner)["id"]
        response = owner.get(f"/api/agents/{agent}/memories", params={"q": "the owner's pet"})
    assert response.status_code == 502
    assert response.json() == {"error": "The embedding endpoint of 'emb' did not answer."}
    log = fresh_server.read_log()
    assert any(f"127.0.0.1:{port}" in line and "WARNING" in line for line in log.splitlines())
    assert key not in log
