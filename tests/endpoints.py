"""Every HTTP endpoint, with who may call it: the table the auth matrix and the OpenAPI tests share.

A path names what it acts on in braces: {agent}, {channel}, {message}, {guest}, {upload},
{chain}, {schedule}, {document} (one of the agent's documents), {memory} (one of the agent's
memories). The channel (and the chain in it, the agent and the owner's upload) is one the
matrix's guest is not a member of; the agent, channel, guest, document, memory and message of
a DELETE are made for that one request.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.support import unique

Targets = dict[str, str]


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str
    json: Callable[[Targets], Any] | None = None
    upload: bool = False
    form: Callable[[Targets], dict[str, str]] | None = None
    """The form fields sent beside the file of an upload."""
    file: Callable[[Targets], tuple[str, bytes, str]] | None = None
    """The file of an upload (name, bytes, type), where a short note will not do."""
    admin: bool = False
    """Owner only: a guest gets 403."""
    scoped: bool = False
    """Concerns a channel (or what only its members see): a guest outside it gets 404, as if
    the target did not exist."""
    consumes: str | None = None
    """The kind of target this request uses up, made fresh for each request."""
    owner_status: int = 200
    """What the owner gets: 409 where the target is in no state to be acted on (a finished
    reply, a chain that is not paused), 404 for a schedule (the matrix names none)."""
    errors: frozenset[int] = field(default_factory=frozenset)
    """The error statuses the OpenAPI schema documents beside 400, 401 and 500."""
    successes: frozenset[int] = frozenset({200})
    """The success statuses documented: 202 too where the client may ask to be answered early."""
    openapi_path: str | None = None
    """The path as the schema writes it, where it cannot be derived from `path`."""

    @property
    def id(self) -> str:
        return f"{self.method} {self.path}"


def _e(*codes: int) -> frozenset[int]:
    return frozenset(codes)


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("POST", "/api/logout"),
    Endpoint("GET", "/api/me"),
    Endpoint("GET", "/api/messages?channelId={channel}", scoped=True, errors=_e(404)),
    Endpoint(
        "POST",
        "/api/messages",
        json=lambda t: {"channelId": t["channel"], "content": "hello", "type": "text"},
        scoped=True,
        errors=_e(404, 429),
    ),
    Endpoint(
        "POST", "/api/messages/{message}/cancel", scoped=True, owner_status=409, errors=_e(404, 409)
    ),
    Endpoint(
        "PATCH",
        "/api/messages/{message}",
        json=lambda t: {"content": "edited"},
        scoped=True,
        errors=_e(403, 404),
    ),
    Endpoint(
        "DELETE", "/api/messages/{message}", scoped=True, consumes="message", errors=_e(403, 404)
    ),
    Endpoint("GET", "/api/messages/{message}/versions", scoped=True, errors=_e(404)),
    Endpoint(
        "POST",
        "/api/messages/{message}/reactions",
        json=lambda t: {"emoji": "👍"},
        scoped=True,
        errors=_e(404),
    ),
    Endpoint(
        "DELETE",
        "/api/messages/{message}/reactions/👍",
        scoped=True,
        errors=_e(404),
        openapi_path="/api/messages/{message_id}/reactions/{emoji}",
    ),
    Endpoint("GET", "/api/models", admin=True, errors=_e(403)),
    Endpoint("GET", "/api/agents"),
    Endpoint("GET", "/api/agents/{agent}", scoped=True, errors=_e(404)),
    Endpoint(
        "POST",
        "/api/agents",
        json=lambda t: {"name": unique("a-")},
        admin=True,
        errors=_e(403, 409),
    ),
    Endpoint(
        "PUT",
        "/api/agents/{agent}",
        json=lambda t: {"description": unique()},
        admin=True,
        errors=_e(403, 404, 409),
    ),
    Endpoint("DELETE", "/api/agents/{agent}", admin=True, consumes="agent", errors=_e(403, 404)),
    Endpoint("GET", "/api/channels"),
    Endpoint("POST", "/api/channels/unread", json=lambda t: {"after": {t["channel"]: None}}),
    Endpoint("GET", "/api/channels/{channel}", scoped=True, errors=_e(404)),
    Endpoint("GET", "/api/channels/{channel}/people", scoped=True, errors=_e(404)),
    Endpoint(
        "POST",
        "/api/channels",
        json=lambda t: {"name": unique(), "type": "dm", "agentIds": [t["agent"]]},
        admin=True,
        errors=_e(403, 404),
    ),
    Endpoint(
        "PUT",
        "/api/channels/{channel}",
        json=lambda t: {"name": unique()},
        admin=True,
        scoped=True,
        errors=_e(403, 404),
    ),
    Endpoint(
        "POST",
        "/api/channels/{channel}/members",
        json=lambda t: {"agentIds": [t["agent"]]},
        admin=True,
        scoped=True,
        errors=_e(403, 404),
    ),
    Endpoint(
        "POST",
        "/api/channels/{channel}/read",
        json=lambda t: {"messageId": t["message"]},
        scoped=True,
        errors=_e(404),
    ),
    Endpoint(
        "POST", "/api/channels/{channel}/leave", scoped=True, owner_status=403, errors=_e(403, 404)
    ),
    Endpoint(
        "DELETE", "/api/channels/{channel}", admin=True, consumes="channel", errors=_e(403, 404)
    ),
    Endpoint("GET", "/api/channels/{channel}/export", scoped=True, errors=_e(404)),
    Endpoint(
        "POST",
        "/api/channels/import",
        upload=True,
        file=lambda t: ("channel.json", channel_export_file(), "application/json"),
        admin=True,
        errors=_e(403, 408, 413, 415),
    ),
    Endpoint("GET", "/api/search?q=hello"),
    Endpoint("GET", "/api/usage", admin=True, errors=_e(403)),
    Endpoint("GET", "/api/audit?limit=5&action=agent.", admin=True, errors=_e(403)),
    Endpoint("GET", "/api/settings", admin=True, errors=_e(403)),
    Endpoint("GET", "/api/backups", admin=True, errors=_e(403)),
    Endpoint(
        "PUT",
        "/api/settings",
        json=lambda t: {"sessionIdleDays": 30},
        admin=True,
        errors=_e(403, 409),
    ),
    Endpoint("GET", "/api/guests", admin=True, errors=_e(403)),
    Endpoint(
        "POST", "/api/guests", json=lambda t: {"name": unique("g-")}, admin=True, errors=_e(403)
    ),
    Endpoint("DELETE", "/api/guests/{guest}", admin=True, consumes="guest", errors=_e(403, 404)),
    Endpoint("POST", "/api/upload", upload=True, errors=_e(408, 413)),
    Endpoint("GET", "{upload}", scoped=True, errors=_e(404)),
    Endpoint("GET", "/api/tools", admin=True, errors=_e(403)),
    Endpoint(
        "POST",
        "/api/chains",
        json=lambda t: {"channelId": t["channel"], "agentIds": [t["agent"]], "content": "go"},
        scoped=True,
        errors=_e(404, 429),
    ),
    Endpoint("GET", "/api/chains?channelId={channel}", scoped=True, errors=_e(404)),
    Endpoint("GET", "/api/chains/{chain}", scoped=True, errors=_e(404)),
    Endpoint(
        "POST",
        "/api/chains/{chain}/resume",
        scoped=True,
        owner_status=409,
        errors=_e(404, 409),
        openapi_path="/api/chains/{chain_id}/{action}",
    ),
    Endpoint(
        "POST",
        "/api/rag/upload",
        upload=True,
        form=lambda t: {"agentId": t["agent"]},
        admin=True,
        errors=_e(403, 404, 408, 413, 415, 502),
        successes=frozenset({200, 202}),
    ),
    Endpoint(
        "POST",
        "/api/rag/query",
        json=lambda t: {"agentId": t["agent"], "query": "hello", "topK": 3},
        admin=True,
        errors=_e(403, 404, 502),
    ),
    Endpoint("GET", "/api/rag/documents?agentId={agent}", admin=True, errors=_e(403, 404)),
    Endpoint(
        "PUT",
        "/api/rag/documents/{document}",
        json=lambda t: {"visibility": "members"},
        admin=True,
        errors=_e(403, 404),
    ),
    Endpoint(
        "DELETE",
        "/api/rag/documents/{document}",
        admin=True,
        consumes="document",
        errors=_e(403, 404),
    ),
    Endpoint("POST", "/api/agents/{agent}/reindex", admin=True, errors=_e(403, 404)),
    Endpoint(
        "GET", "/api/agents/{agent}/memories?type=semantic", admin=True, errors=_e(403, 404, 502)
    ),
    Endpoint(
        "POST",
        "/api/agents/{agent}/memories",
        json=lambda t: {"content": f"The owner mentioned {unique()}.", "type": "episodic"},
        admin=True,
        errors=_e(403, 404, 502),
    ),
    Endpoint(
        "PUT",
        "/api/agents/{agent}/memories/{memory}",
        json=lambda t: {"content": f"The owner likes {unique()}."},
        admin=True,
        errors=_e(403, 404, 502),
    ),
    Endpoint(
        "DELETE",
        "/api/agents/{agent}/memories/{memory}",
        admin=True,
        consumes="memory",
        errors=_e(403, 404),
    ),
    Endpoint(
        "GET", "/api/agents/{agent}/memories/{memory}/versions", admin=True, errors=_e(403, 404)
    ),
    Endpoint(
        "POST",
        "/api/agents/{agent}/memories/{memory}/restore",
        json=lambda t: {"version": 1},
        admin=True,
        errors=_e(403, 404, 502),
    ),
    Endpoint("GET", "/api/schedules", admin=True, errors=_e(403, 404)),
    Endpoint(
        "POST",
        "/api/schedules",
        json=lambda t: {
            "agentId": t["agent"],
            "channelId": t["channel"],
            "prompt": "later",
            "at": "2999-01-01T00:00:00Z",
        },
        admin=True,
        errors=_e(403, 404, 409),
    ),
    Endpoint(
        "PATCH",
        "/api/schedules/{schedule}",
        json=lambda t: {"active": False},
        admin=True,
        owner_status=404,
        errors=_e(403, 404, 409),
    ),
    Endpoint(
        "DELETE", "/api/schedules/{schedule}", admin=True, owner_status=404, errors=_e(403, 404)
    ),
    Endpoint(
        "POST",
        "/api/settings/providers/test",
        json=lambda t: {"type": "builtin"},
        admin=True,
        errors=_e(403),
    ),
)


def channel_export_file() -> bytes:
    """The smallest export `POST /api/channels/import` takes: a channel without messages."""
    channel = {"name": unique("imported-"), "type": "group"}
    return json.dumps(
        {"format": "palaver.channel", "version": 1, "channel": channel, "messages": []}
    ).encode()


PUBLIC = ("POST", "/api/login")
"""The one endpoint that needs no session."""


def openapi_template(endpoint: Endpoint) -> str:
    """The path as the OpenAPI schema writes it."""
    if endpoint.openapi_path is not None:
        return endpoint.openapi_path
    path = endpoint.path.split("?", 1)[0]
    for name, param in (
        ("{agent}", "{agent_id}"),
        ("{channel}", "{channel_id}"),
        ("{message}", "{message_id}"),
        ("{guest}", "{guest_id}"),
        ("{chain}", "{chain_id}"),
        ("{schedule}", "{schedule_id}"),
        ("{document}", "{document_id}"),
        ("{memory}", "{memory_id}"),
        ("{upload}", "/uploads/{month}/{name}"),
    ):
        path = path.replace(name, param)
    return path
