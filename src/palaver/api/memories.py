"""What an agent remembers, for the owner to see and correct."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import Field

from palaver.api import schemas
from palaver.api.deps import NOT_BLANK, Body, Owner, OwnerActing, Svc, errors
from palaver.api.routing import StrictJsonRoute
from palaver.api.schemas import MemoryType, ok
from palaver.errors import NotFound
from palaver.store import agents as agents_store
from palaver.store import channels as channels_store
from palaver.tools.memory import privacy_scope

router = APIRouter(
    prefix="/api/agents/{agent_id}/memories", tags=["memory"], route_class=StrictJsonRoute
)


class NewMemory(Body):
    content: str = Field(min_length=1, max_length=8000, json_schema_extra=NOT_BLANK)
    type: MemoryType = "semantic"
    channelId: str | None = None


class MemoryChange(Body):
    content: str | None = Field(
        default=None, min_length=1, max_length=8000, json_schema_extra=NOT_BLANK
    )
    type: MemoryType | None = None


class Restore(Body):
    version: int = Field(ge=1)


@router.get(
    "",
    responses={
        **errors(403, 404, 502),
        **ok(schemas.MemoryList, "Memories, newest or most similar first"),
    },
)
async def list_memories(
    agent_id: str,
    _: Owner,
    svc: Svc,
    type: Annotated[MemoryType | None, Query()] = None,
    q: Annotated[str | None, Query(max_length=8000)] = None,
    limit: Annotated[int, Query(ge=1, le=50)] = 20,
) -> dict[str, Any]:
    """All memories, newest first; with `q`, the most similar to it with their similarity."""
    if q:
        found = await svc.memories.search(agent_id, q, limit, type=type)
        return {"memories": [m.as_json() for m in found]}
    listed = await svc.memories.list_memories(agent_id, type=type)
    return {"memories": [m.as_json() for m in listed]}


@router.post(
    "", responses={**errors(403, 404, 502), **ok(schemas.MemoryWritten, "What the write did")}
)
async def write_memory(agent_id: str, body: NewMemory, by: OwnerActing, svc: Svc) -> dict[str, Any]:
    """The same rule as the `memory_write` tool: skipped, updated or inserted."""
    async with svc.db.read() as conn:
        # Checked before the content is embedded: the model may not be loaded yet.
        if await agents_store.get(conn, agent_id) is None:
            raise NotFound(f"There is no agent '{agent_id}'.")
        if body.channelId is not None and await channels_store.get(conn, body.channelId) is None:
            raise NotFound(f"No channel has the id '{body.channelId}'.")
    scope = None if body.channelId is None else await privacy_scope(svc.db, body.channelId)
    result = await svc.memories.write(
        agent_id, body.content, body.type, channel_id=body.channelId, only_channel=scope, by=by
    )
    return result.as_json()


@router.put(
    "/{memory_id}",
    responses={**errors(403, 404, 502), **ok(schemas.MemoryAnswer, "The changed memory")},
)
async def update_memory(
    agent_id: str, memory_id: str, body: MemoryChange, by: OwnerActing, svc: Svc
) -> dict[str, Any]:
    memory = await svc.memories.update(
        agent_id, memory_id, content=body.content, type=body.type, by=by
    )
    return {"memory": memory.as_json()}


@router.delete("/{memory_id}", responses={**errors(403, 404), **ok(schemas.Ok, "Removed")})
async def delete_memory(
    agent_id: str, memory_id: str, by: OwnerActing, svc: Svc
) -> dict[str, bool]:
    await svc.memories.delete(agent_id, memory_id, by)
    return {"ok": True}


@router.get(
    "/{memory_id}/versions",
    responses={**errors(403, 404), **ok(schemas.MemoryVersions, "The memory's versions")},
)
async def memory_versions(agent_id: str, memory_id: str, _: Owner, svc: Svc) -> dict[str, Any]:
    found = await svc.memories.versions(agent_id, memory_id)
    return {"versions": [v.as_json() for v in found]}


@router.post(
    "/{memory_id}/restore",
    responses={**errors(403, 404, 502), **ok(schemas.MemoryAnswer, "The memory as restored")},
)
async def restore_memory(
    agent_id: str, memory_id: str, body: Restore, by: OwnerActing, svc: Svc
) -> dict[str, Any]:
    memory = await svc.memories.restore(agent_id, memory_id, body.version, by)
    return {"memory": memory.as_json()}
