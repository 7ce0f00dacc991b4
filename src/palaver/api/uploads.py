"""Uploading files and serving them back to those who may read them."""

from __future__ import annotations

import anyio
from fastapi import APIRouter, Request, Response
from fastapi.responses import FileResponse

from palaver.actions import uploads
from palaver.api import schemas
from palaver.api.deps import Caller, Svc, carrying, errors
from palaver.api.multipart import read_upload
from palaver.api.routing import StrictJsonRoute
from palaver.api.schemas import ok
from palaver.errors import NotFound

router = APIRouter(tags=["uploads"], route_class=StrictJsonRoute)


@router.post(
    "/api/upload",
    responses={**errors(408, 413), **ok(schemas.Uploaded, "Where the file is served")},
    openapi_extra={
        "requestBody": {
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "properties": {"file": {"type": "string", "format": "binary"}},
                        "required": ["file"],
                    }
                }
            }
        }
    },
)
async def upload(request: Request, caller: Caller, svc: Svc) -> dict[str, str]:
    limit = svc.settings.current.limits.maxUploadBytes
    received, _fields = await read_upload(
        request, svc.config.uploads_dir, limit, idle_seconds=svc.config.upload_idle_seconds
    )
    return {"url": await uploads.store(svc, caller.user, received)}


@router.get("/uploads/{month}/{name}", responses=errors(404))
async def download(
    month: str, name: str, caller: Caller, svc: Svc, response: Response
) -> FileResponse:
    """For the owner, the uploader, and the members of a channel where its URL was posted."""
    path = await uploads.readable(svc, caller.user, month, name)
    try:
        stat = await anyio.Path(path).stat()
    except FileNotFoundError:
        raise NotFound("There is no such upload.") from None
    media_type, headers = uploads.serving_headers(name)
    answer = FileResponse(path, media_type=media_type, headers=headers, stat_result=stat)
    return carrying(answer, response)
