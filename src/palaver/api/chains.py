"""Collaboration chains."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import Field

from palaver.actions import chains
from palaver.api import schemas
from palaver.api.deps import Acting, Body, Caller, Svc, errors
from palaver.api.messages import CONTENT_SCHEMA
from palaver.api.routing import StrictJsonRoute
from palaver.api.schemas import ok

router = APIRouter(prefix="/api/chains", tags=["chains"], route_class=StrictJsonRoute)


class StartChain(Body):
    channelId: str
    agentIds: list[str] = Field(
        min_length=1,
        description="Members of the channel, in order; at most `agents.maxChainSteps`.",
    )
    content: str = Field(min_length=1, json_schema_extra=CONTENT_SCHEMA)


@router.post("", responses={**errors(404, 429), **ok(schemas.ChainAnswer, "The chain started")})
async def start_chain(body: StartChain, caller: Caller, by: Acting, svc: Svc) -> dict[str, Any]:
    chain = await chains.start(svc, caller.user, body.channelId, body.agentIds, body.content, by)
    return {"chain": chain.as_json()}


@router.get("", responses={**errors(404), **ok(schemas.ChainList, "The channel's chains")})
async def list_chains(
    caller: Caller, svc: Svc, channelId: Annotated[str, Query(min_length=1)]
) -> dict[str, Any]:
    found = await chains.in_channel(svc, caller.user, channelId)
    return {"chains": [c.as_json() for c in found]}


@router.get("/{chain_id}", responses={**errors(404), **ok(schemas.ChainAnswer, "The chain")})
async def get_chain(chain_id: str, caller: Caller, svc: Svc) -> dict[str, Any]:
    return {"chain": (await chains.get(svc, caller.user, chain_id)).as_json()}


@router.post(
    "/{chain_id}/{action}",
    responses={**errors(404, 409), **ok(schemas.ChainAnswer, "The chain after the action")},
)
async def steer_chain(
    chain_id: str,
    action: Literal["pause", "resume", "cancel"],
    caller: Caller,
    by: Acting,
    svc: Svc,
) -> dict[str, Any]:
    return {"chain": (await chains.steer(svc, caller.user, chain_id, action, by)).as_json()}
