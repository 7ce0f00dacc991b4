"""Helpers of the channel export and import tests: the requests, zips made in memory, and a
channel's whole history as a reader sees it."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import httpx

from tests.support import Api, history

IMPORT = "/api/channels/import"


def export(api: Api, channel_id: str, **params: Any) -> httpx.Response:
    return api.get(f"/api/channels/{channel_id}/export", params=params)


def export_json(api: Api, channel_id: str) -> dict[str, Any]:
    response = export(api, channel_id)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    return body


def import_file(
    api: Api, data: bytes, name: str = "export.zip", kind: str = "application/zip"
) -> httpx.Response:
    return api.post(IMPORT, files={"file": (name, data, kind)})


def imported(api: Api, data: bytes, name: str = "export.zip") -> dict[str, Any]:
    response = import_file(api, data, name)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def zipped(entries: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, value in entries.items():
            data = value if isinstance(value, bytes | str) else json.dumps(value)
            archive.writestr(name, data)
    return buffer.getvalue()


def everything(api: Api, channel_id: str) -> list[dict[str, Any]]:
    """History as a reader sees it: the main timeline, each thread's replies after its root."""
    found = []
    for message in history(api, channel_id, limit=200):
        found.append(message)
        if message["thread"] is not None:
            replies = history(api, channel_id, threadId=message["id"], limit=200)[1:]
            found.extend(replies)
    return found


def shape(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What a round trip keeps: all but the ids, threads by their root's position."""
    position = {m["id"]: i for i, m in enumerate(messages)}
    return [
        (
            m["content"],
            m["type"],
            m["userId"],
            m["agentId"],
            m["createdAt"],
            m["editedAt"],
            m["deleted"],
            position[m["threadId"]] if m["threadId"] else None,
            [(r["emoji"], r["userIds"]) for r in m["reactions"]],
            (m["thread"] or {}).get("replyCount"),
            (m["thread"] or {}).get("participantIds"),
            m["metadata"].get("importedAuthor"),
        )
        for m in messages
    ]


def channel_named(api: Api, name: str) -> list[dict[str, Any]]:
    return [c for c in api.ok("GET", "/api/channels")["channels"] if c["name"] == name]


def upload(api: Api, name: str, data: bytes) -> str:
    url: str = api.ok("POST", "/api/upload", files={"file": (name, data, "text/plain")})["url"]
    return url
