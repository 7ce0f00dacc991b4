"""The shapes of the success answers, for the OpenAPI schema only.

Routes name these in `responses={200: ...}`, never as `response_model`: FastAPI would then
filter each answer through the model and silently drop any field it does not declare. The
records' `as_json()` methods stay the truth; the models state it, and the fuzz test checks
every answer against them. Extra fields are allowed, so a new field never breaks a client."""

from __future__ import annotations

import ast
import functools
import inspect
import sys
from importlib.abc import InspectLoader
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from palaver.domain import ChannelType, MessageType, Role
from palaver.knowledge.documents import Visibility
from palaver.memory import WriteAction

MemoryType = Literal["semantic", "episodic", "procedural"]


class Shape(BaseModel):
    """A documented answer; its fields' docstrings are their descriptions.

    The docstrings are read here, from each module's source once, rather than by pydantic's
    `use_attribute_docstrings`, which walks the call stack and every loaded module for each
    class (some 50 ms of start-up for these). Built when first used (`defer_build`): the
    OpenAPI document, a test, or the route of a router first asked for."""

    model_config = ConfigDict(defer_build=True)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        docs = attribute_docstrings(cls)
        for name, field in cls.model_fields.items():
            if field.description is None and name in docs:
                field.description = docs[name]


def attribute_docstrings(cls: type) -> dict[str, str]:
    """A module-level class's attribute docstrings, as pydantic's `use_attribute_docstrings`
    reads them: a string statement right after an annotated name, cleaned."""
    classes = _module_docstrings(cls.__module__)
    if classes is None:  # no source to read (as pydantic, then: no descriptions)
        return {}
    found = classes.get(cls.__qualname__)
    if found is None:
        raise TypeError(f"{cls.__qualname__}: a Shape is defined at a module's top level")
    return found


@functools.cache
def _module_docstrings(module: str) -> dict[str, dict[str, str]] | None:
    # The loader's source, not `inspect.getsource`: that resolves the path of every loaded
    # module on its first call (40 ms).
    loader = getattr(sys.modules[module].__spec__, "loader", None)
    source = loader.get_source(module) if isinstance(loader, InspectLoader) else None
    if source is None:
        return None
    classes: dict[str, dict[str, str]] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        docs = classes[node.name] = {}
        for previous, statement in zip(node.body, node.body[1:], strict=False):
            if (
                isinstance(previous, ast.AnnAssign)
                and isinstance(previous.target, ast.Name)
                and isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            ):
                docs[previous.target.id] = inspect.cleandoc(statement.value.value)
    return classes


def ok(model: type[BaseModel], description: str) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI entry of a route's 200 answer, to merge with its `errors(...)`."""
    return {200: {"model": model, "description": description}}


class Ok(Shape):
    ok: bool


class User(Shape):
    id: str
    name: str
    role: Role
    createdAt: str


class UserAnswer(Shape):
    user: User


class GuestList(Shape):
    guests: list[User]


class NewGuest(Shape):
    user: User
    key: str


class SettingsAnswer(Shape):
    settings: dict[str, Any]
    """As stored, with every secret cut to its last four characters."""


class AgentListItem(Shape):
    id: str
    name: str
    avatar: str
    description: str
    model: str
    tools: list[str]
    status: Literal["online"]


class Agent(AgentListItem):
    soul: str
    autoInjectMemory: bool
    createdAt: str
    updatedAt: str


class AgentList(Shape):
    agents: list[AgentListItem]


class AgentAnswer(Shape):
    agent: Agent


class AgentSeen(Shape):
    agent: Agent | AgentListItem
    """The owner sees the whole agent; a guest what the list shows."""


class Channel(Shape):
    id: str
    name: str
    type: ChannelType
    agentIds: list[str]
    memberIds: list[str]
    createdAt: str
    updatedAt: str


class ReadState(Shape):
    lastReadId: str | None
    """The newest message the caller has read here; null before any."""
    unreadCount: int
    """Messages after the marker not written by the caller (text, images, files; the main
    timeline and the threads the caller takes part in; deleted ones not)."""
    mentionCount: int
    """Of those, the ones that mention the caller."""


class ChannelListItem(Channel, ReadState):
    pass


class ChannelList(Shape):
    channels: list[ChannelListItem]


class ReadMarked(ReadState):
    ok: bool


class UnreadCount(Shape):
    count: int
    newestId: str | None


class UnreadCounts(Shape):
    channels: dict[str, UnreadCount]


class ChannelAnswer(Shape):
    channel: Channel


class Reaction(Shape):
    emoji: str
    count: int
    userIds: list[str]
    """People and agents, in the order they reacted."""


class ThreadSummary(Shape):
    replyCount: int
    lastReplyAt: str | None
    participantIds: list[str]
    """Who replied, in the order they first did."""


class Message(Shape):
    id: str
    channelId: str
    agentId: str | None
    userId: str | None
    content: str
    """Empty in a deleted thread root kept as the thread's head."""
    type: MessageType
    metadata: dict[str, Any]
    createdAt: str
    threadId: str | None
    """The thread's root, for a reply in a thread."""
    editedAt: str | None
    deleted: bool
    """True only for a thread root deleted while it has replies."""
    reactions: list[Reaction]
    """In the order each emoji was first used."""
    thread: ThreadSummary | None
    """A thread root's summary; null for a message nobody replied to in a thread."""


class MessageAnswer(Shape):
    message: Message


class MessageVersion(Shape):
    content: str
    editedAt: str | None
    """When this content was written by an edit; null for the content as first posted."""


class MessageVersions(Shape):
    versions: list[MessageVersion]
    """Oldest first; the last is the current content."""


class MessageList(Shape):
    messages: list[Message]


class MessagePosted(Shape):
    id: str
    ok: bool


class SearchChannel(Shape):
    id: str
    name: str
    type: ChannelType


class SearchResult(Shape):
    message: Message
    channel: SearchChannel
    """The channel the message is in."""
    snippet: str
    """HTML: the message's text around its matched words, HTML-escaped, each matched word
    (as the engine stems it) inside `<mark>`; no other markup. A search of operators only
    gives the message's first 200 characters, escaped, without marks."""


class SearchResults(Shape):
    results: list[SearchResult]
    """Best first (`sort=relevance`) or newest first (`sort=recent`)."""
    nextCursor: str | None
    """Pass as `cursor` (with the same `q` and `sort`) for the next page; null on the last."""


class UsageRow(Shape):
    key: str
    """The agent's, person's or channel's id, the model (`<provider id>/<model name>`), or the
    day (YYYY-MM-DD, UTC), as `groupBy` asked; a call nobody's message caused has person ''."""
    day: str | None = None
    """With `per=day` only: the day (YYYY-MM-DD, UTC) these sums are of; left out otherwise."""
    inputTokens: int
    """Input tokens, cached ones included."""
    outputTokens: int
    cachedTokens: int
    cost: float
    """By `settings.prices`; a model without a price costs nothing (see `unpricedCalls`)."""
    calls: int
    unpricedCalls: int
    """Calls of models the price table has no entry for."""


class UsageReport(Shape):
    rows: list[UsageRow]


class ChainStep(Shape):
    step: int
    agentId: str
    source: str
    status: str
    messageId: str | None


class Chain(Shape):
    id: str
    channelId: str
    triggerMessageId: str
    status: str
    reason: str | None
    requested: str | None
    currentAgent: str | None
    step: int
    totalSteps: int
    steps: list[ChainStep]
    createdAt: str
    updatedAt: str


class ChainAnswer(Shape):
    chain: Chain


class ChainList(Shape):
    chains: list[Chain]


class Memory(Shape):
    id: str
    agentId: str
    type: MemoryType
    content: str
    channelId: str | None
    sourceMessageId: str | None
    version: int
    createdAt: str
    updatedAt: str
    similarity: float | None = None
    """Only in the answer to a search (`q`): the cosine similarity to the query."""


class MemoryList(Shape):
    memories: list[Memory]


class MemoryAnswer(Shape):
    memory: Memory


class MemoryWritten(Shape):
    action: WriteAction
    memory: Memory
    similarity: float | None
    duplicateOf: str | None
    previousContent: str | None


class MemoryVersion(Shape):
    memoryId: str
    version: int
    content: str
    type: MemoryType
    channelId: str | None
    sourceMessageId: str | None
    createdAt: str


class MemoryVersions(Shape):
    versions: list[MemoryVersion]


class Progress(Shape):
    done: int
    total: int


class Document(Shape):
    id: str
    agentId: str
    name: str
    kind: str
    bytes: int
    pages: int | None
    chunks: int
    visibility: Visibility
    createdAt: str
    status: Literal["indexing", "ready", "failed"]
    """`indexing` while the chunks are embedded, then `ready`; `failed` says why in `error`."""
    error: str | None
    progress: Progress
    """Chunks embedded so far, of all the document's chunks."""


class DocumentList(Shape):
    documents: list[Document]


class DocumentAnswer(Shape):
    document: Document


class Ingested(Shape):
    document: Document
    duplicate: bool


class Chunk(Shape):
    chunkId: str
    documentId: str
    documentName: str
    content: str
    headingPath: list[str]
    page: int | None
    score: float
    textRank: int | None
    vectorRank: int | None
    relevance: float | None


class QueryAnswer(Shape):
    results: list[Chunk]
    reranked: bool


class ScheduleRun(Shape):
    status: Literal["fired", "skipped"]
    reason: str | None
    """Why a run was skipped: `missed`, `late`, `not_in_channel`, `rate_limited`."""
    dueAt: str
    messageId: str | None
    """The prompt posted in the channel, for a fired run."""


class Schedule(Shape):
    id: str
    agentId: str
    channelId: str
    createdBy: str | None
    schedule: str | None
    at: str | None
    prompt: str
    nextRunAt: str | None
    lastRunAt: str | None
    active: bool
    createdAt: str
    state: Literal["active", "paused", "done"]
    """`done`: a one-shot that has run (or was skipped)."""
    lastResult: ScheduleRun | None
    """The latest recorded due time's outcome; null before the first."""


class ScheduleList(Shape):
    schedules: list[Schedule]


class ScheduleAnswer(Shape):
    schedule: Schedule


class ProviderTest(Shape):
    ok: bool
    models: list[str] = []
    """The provider's model names, when it answered."""
    error: str | None = None
    """The provider's error, when it did not; never holds the key."""


class Model(Shape):
    id: str
    provider: str
    name: str
    label: str


class ModelList(Shape):
    models: list[Model]
    errors: dict[str, str]
    """Per provider that could not be asked, why."""


class Tool(Shape):
    name: str
    description: str
    parameters: dict[str, Any]
    source: Literal["builtin", "mcp"]


class ToolList(Shape):
    tools: list[Tool]
    mcpServers: dict[str, dict[str, Any]]


class Uploaded(Shape):
    url: str


class AuditEntry(Shape):
    id: str
    """`audit_` and a time-ordered id: newer entries have greater ids."""
    at: str
    actorId: str | None
    """The person who acted; null for a failed login."""
    action: str
    """`resource.verb`, such as `agent.update` or `login.failed` (docs/SPEC.md, section 14)."""
    target: str | None
    """The id (or, for a provider or an MCP server, the name) of what was acted on."""
    changes: dict[str, Any]
    """The fields that changed, with their new values; a secret as `"(changed)"`, a text
    such as SOUL.md as `{"length": n}`."""
    node: str
    """The node that did it."""
    address: str | None
    """The client's address (behind a trusted proxy, the one it reported)."""


class AuditLog(Shape):
    entries: list[AuditEntry]


class BackupScheduleShown(Shape):
    every: str | None
    """How often: a whole number and a unit (s, m, h, d): `6h`, `1d`; null: no schedule."""
    keep: int
    """How many scheduled backups are kept; the oldest beyond it are removed."""
    dir: str | None
    """The folder as set; null for `<data dir>/backups`."""


class BackupRunning(Shape):
    at: str
    """When it began."""
    file: str | None
    node: str | None
    """The node making it."""


class BackupResult(Shape):
    at: str
    """When it began: the moment its snapshot shows, and the time in its name."""
    finishedAt: str | None
    status: str
    """`ok`, `failed`, or `interrupted` (its node stopped or died before it ended)."""
    ok: bool
    file: str | None
    """The file's name in the folder."""
    bytes: int | None
    """The file's size; null when it was not made."""
    error: str | None = None
    """Why it was not made (present only then): `cannot make the folder /x: Permission
    denied`."""
    durationMs: int | None
    node: str | None
    """The node that made it."""


class BackupFileShown(Shape):
    name: str
    bytes: int
    at: str
    """The time in its name."""


class Backups(Shape):
    settings: BackupScheduleShown
    folder: str
    """The folder the backups go to, as this node resolves it."""
    running: BackupRunning | None
    """A backup being made now, on any node."""
    last: BackupResult | None
    """The last backup the schedule finished, made or not; null before the first."""
    next: str | None
    """When the next is due (a time past: as soon as a node looks); null with no schedule."""
    files: list[BackupFileShown]
    """The scheduled backups in the folder as this node sees it, newest first."""
