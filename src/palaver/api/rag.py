"""Agents' document knowledge bases (SPEC 4, rows 15 and 16)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from pydantic import Field

from palaver.actions import knowledge
from palaver.api import schemas
from palaver.api.deps import NOT_BLANK, Body, Owner, OwnerActing, Svc, errors
from palaver.api.multipart import read_upload
from palaver.api.routing import StrictJsonRoute
from palaver.api.schemas import ok

router = APIRouter(prefix="/api", tags=["knowledge"], route_class=StrictJsonRoute)


class DocumentChange(Body):
    visibility: Literal["owner", "members"]


class RagQuery(Body):
    agentId: str
    query: str = Field(min_length=1, max_length=8000, json_schema_extra=NOT_BLANK)
    topK: int = Field(default=5, ge=1, le=20)


@router.post(
    "/rag/upload",
    responses={
        **errors(403, 404, 408, 413, 415, 502),
        **ok(schemas.Ingested, "The document, or the one with the same bytes"),
        202: {
            "model": schemas.Ingested,
            "description": "With `Prefer: respond-async`: the document is recorded and being "
            "indexed (`status` `indexing`); `ingest_progress` events follow it",
        },
    },
    openapi_extra={
        "requestBody": {
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "properties": {
                            "file": {"type": "string", "format": "binary"},
                            "agentId": {"type": "string", "minLength": 1},
                            "visibility": {"type": "string", "enum": ["owner", "members"]},
                        },
                        "required": ["file", "agentId"],
                    }
                }
            }
        }
    },
)
async def upload_document(
    request: Request, response: Response, by: OwnerActing, svc: Svc
) -> dict[str, Any]:
    """PDF, Markdown or plain text, told apart by content; the same file twice is kept once.
    `visibility` is `owner` (the default) or `members` (channels with guests may use it).
    With the header `Prefer: respond-async` (RFC 7240) the answer is 202 as soon as the file
    is parsed and recorded, and the embedding goes on in the background."""
    limit = svc.settings.current.limits.maxUploadBytes
    received, fields = await read_upload(
        request, knowledge.incoming_dir(svc), limit, idle_seconds=svc.config.upload_idle_seconds
    )
    respond_async = _prefers_async(request.headers.getlist("prefer"))
    result = await knowledge.ingest(
        svc, fields.get("agentId"), received, by, fields.get("visibility"), respond_async
    )
    if respond_async and result.document.status == "indexing":
        response.headers["Preference-Applied"] = "respond-async"
        response.status_code = 202
    return result.as_json()


def _prefers_async(values: list[str]) -> bool:
    """Whether any `Prefer` header asks for `respond-async` (preferences are comma-separated,
    parameters follow `;`)."""
    return any(
        token.split(";", 1)[0].split("=", 1)[0].strip().lower() == "respond-async"
        for value in values
        for token in value.split(",")
    )


@router.post(
    "/rag/query",
    responses={**errors(403, 404, 502), **ok(schemas.QueryAnswer, "The best passages")},
)
async def query(body: RagQuery, _: Owner, svc: Svc) -> dict[str, Any]:
    return (await knowledge.query(svc, body.agentId, body.query, body.topK)).as_json()


@router.get(
    "/rag/documents",
    responses={**errors(403, 404), **ok(schemas.DocumentList, "The agent's documents")},
)
async def list_documents(
    _: Owner, svc: Svc, agentId: Annotated[str, Query(min_length=1)]
) -> dict[str, Any]:
    found = await svc.knowledge.documents(agentId)
    return {"documents": [d.as_json(knowledge.progress_of(d)) for d in found]}


@router.put(
    "/rag/documents/{document_id}",
    responses={**errors(403, 404), **ok(schemas.DocumentAnswer, "The changed document")},
)
async def update_document(
    document_id: str, body: DocumentChange, by: OwnerActing, svc: Svc
) -> dict[str, Any]:
    """Share a document with channels that have guests (`members`), or take it back."""
    document = await svc.knowledge.set_visibility(document_id, body.visibility, by)
    return {"document": document.as_json()}


@router.delete(
    "/rag/documents/{document_id}", responses={**errors(403, 404), **ok(schemas.Ok, "Removed")}
)
async def delete_document(document_id: str, by: OwnerActing, svc: Svc) -> dict[str, bool]:
    await svc.knowledge.delete_document(document_id, by)
    return {"ok": True}


@router.post(
    "/agents/{agent_id}/reindex", responses={**errors(403, 404), **ok(schemas.Ok, "Reindexed")}
)
async def reindex(agent_id: str, _: Owner, svc: Svc) -> dict[str, bool]:
    """Re-embed what an earlier embedding setting made; progress arrives as
    `reindex_progress` events on the owner's sockets."""
    await knowledge.start_reindex(svc, agent_id)
    return {"ok": True}
