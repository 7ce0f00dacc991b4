"""A channel's export (`GET /api/channels/:id/export`) and imports (`POST /api/channels/import`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import StreamingResponse

from palaver.actions import channel_export, channel_import
from palaver.api import schemas
from palaver.api.deps import Caller, OwnerActing, Svc, carrying, errors
from palaver.api.multipart import read_upload
from palaver.api.routing import StrictJsonRoute
from palaver.api.schemas import Shape, ok

router = APIRouter(prefix="/api/channels", tags=["channels"], route_class=StrictJsonRoute)


class ExportedPerson(Shape):
    id: str
    kind: Literal["person", "agent"]
    name: str | None
    """Null where the caller may not know it (a guest, of someone outside its channels)."""


class ExportedFile(Shape):
    url: str
    """As the messages name it: `/uploads/<year-month>/<name>`."""
    name: str
    path: str | None
    """Where the zip holds it (`files/<year-month>/<name>`); null without files."""
    size: int


class ChannelExport(Shape):
    """Palaver's channel export. Messages are as `GET /api/messages` gives them, in order: the
    main timeline oldest first, each thread's replies right after their root."""

    format: Literal["palaver.channel"]
    version: Literal[1]
    exportedAt: str
    channel: schemas.Channel
    people: list[ExportedPerson]
    """Everyone the export names (authors, reactors, members, agents), by id."""
    files: list[ExportedFile]
    """The uploads its messages name that the caller may read."""
    messages: list[schemas.Message]


class ImportedChannel(schemas.Channel):
    imported: int
    """Its messages imported."""


class Skipped(Shape):
    what: str
    why: str


class ImportReport(Shape):
    channels: list[ImportedChannel]
    """The channels made, each whole (one transaction per channel)."""
    imported: int
    """Messages imported, in all."""
    skipped: list[Skipped]
    """What was left out, and why: a channel that failed (nothing of it was made), messages
    that are notices, files that were not in the file, reactions with custom emoji..."""


@router.get(
    "/{channel_id}/export",
    responses={
        **errors(404),
        200: {
            "model": ChannelExport,
            "description": "The channel, streamed: JSON (`format=json`), Markdown "
            "(`format=markdown`), or a zip holding `channel.json` or `channel.md` and "
            "`files/<year-month>/<name>` when the messages name uploads the caller may read "
            "and `files` is true. `Content-Type` says which.",
            "content": {
                "text/markdown": {"schema": {"type": "string"}},
                "application/zip": {"schema": {"type": "string", "format": "binary"}},
            },
        },
    },
)
async def export_channel(
    channel_id: str,
    caller: Caller,
    svc: Svc,
    response: Response,
    kind: Annotated[
        Literal["json", "markdown"],
        Query(alias="format", description="Palaver's JSON (to import again) or a transcript."),
    ] = "json",
    files: Annotated[
        bool,
        Query(description="Zip the uploads its messages name along (when there are any)."),
    ] = True,
) -> StreamingResponse:
    """Everything of the channel the caller may read: its messages as history shows them (a
    deleted thread root as its tombstone, other deleted messages left out), threads, reactions,
    edits' current text, and the files. A guest exports only a channel it is in."""
    found = await channel_export.export(svc, caller.user, channel_id, kind, files)
    streamed = StreamingResponse(
        found.body,
        media_type=found.media_type,
        headers={"Content-Disposition": found.disposition, "X-Content-Type-Options": "nosniff"},
    )
    return carrying(streamed, response)


@router.post(
    "/import",
    responses={**errors(403, 408, 413, 415), **ok(ImportReport, "What was imported, and not")},
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
async def import_channels(request: Request, by: OwnerActing, svc: Svc) -> dict[str, Any]:
    """Palaver's JSON export (or its zip, files and all) or Slack's workspace export, told by
    its content; at most `limits.maxUploadBytes`. Each channel is new (new ids), written whole
    or not at all; authors are found by name among the people and agents here, or kept as
    `metadata.importedAuthor`. 415 for a file of no known format."""
    limit = svc.settings.current.limits.maxUploadBytes
    received, _fields = await read_upload(
        request,
        channel_import.imports_dir(svc),
        limit,
        idle_seconds=svc.config.upload_idle_seconds,
    )
    return await channel_import.run(svc, received.path, by)
