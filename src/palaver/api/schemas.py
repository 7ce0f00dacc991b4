"""The shapes of the success answers, for the OpenAPI schema only.

Routes name these in `responses={200: ...}`, never as `response_model`: FastAPI would then
filter each answer through the model and silently drop any field it does not declare. The
records' `as_json()` methods stay the truth; the models state it, and the fuzz test checks
every answer against them. Extra fields are allowed, so a new field never breaks a client."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from palaver.domain import ChannelType, MessageType, Role
from palaver.knowledge.documents import Visibility
from palaver.memory import WriteAction

MemoryType = Literal["semantic", "episodic", "procedural"]


def ok(model: type[BaseModel], description: str) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI entry of a route's 200 answer, to merge with its `errors(...)`."""
    return {200: {"model": model, "description": description}}


class Ok(BaseModel):
    ok: bool


class User(BaseModel):
    id: str
    name: str
    role: Role
    createdAt: str


class UserAnswer(BaseModel):
    user: User


class GuestList(BaseModel):
    guests: list[User]


class NewGuest(BaseModel):
    user: User
    key: str


class SettingsAnswer(BaseModel):
    settings: dict[str, Any]
    """As stored, with every secret cut to its last four characters."""


class AgentListItem(BaseModel):
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


class AgentList(BaseModel):
    agents: list[AgentListItem]


class AgentAnswer(BaseModel):
    agent: Agent


class AgentSeen(BaseModel):
    agent: Agent | AgentListItem
    """The owner sees the whole agent; a guest what the list shows."""


class Channel(BaseModel):
    id: str
    name: str
    type: ChannelType
    agentIds: list[str]
    memberIds: list[str]
    createdAt: str
    updatedAt: str


class ChannelList(BaseModel):
    channels: list[Channel]


class ChannelAnswer(BaseModel):
    channel: Channel


class Message(BaseModel):
    id: str
    channelId: str
    agentId: str | None
    userId: str | None
    content: str
    type: MessageType
    metadata: dict[str, Any]
    createdAt: str


class MessageList(BaseModel):
    messages: list[Message]


class MessagePosted(BaseModel):
    id: str
    ok: bool


class ChainStep(BaseModel):
    step: int
    agentId: str
    source: str
    status: str
    messageId: str | None


class Chain(BaseModel):
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


class ChainAnswer(BaseModel):
    chain: Chain


class ChainList(BaseModel):
    chains: list[Chain]


class Memory(BaseModel):
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


class MemoryList(BaseModel):
    memories: list[Memory]


class MemoryAnswer(BaseModel):
    memory: Memory


class MemoryWritten(BaseModel):
    action: WriteAction
    memory: Memory
    similarity: float | None
    duplicateOf: str | None
    previousContent: str | None


class MemoryVersion(BaseModel):
    memoryId: str
    version: int
    content: str
    type: MemoryType
    channelId: str | None
    sourceMessageId: str | None
    createdAt: str


class MemoryVersions(BaseModel):
    versions: list[MemoryVersion]


class Document(BaseModel):
    id: str
    agentId: str
    name: str
    kind: str
    bytes: int
    pages: int | None
    chunks: int
    visibility: Visibility
    createdAt: str


class DocumentList(BaseModel):
    documents: list[Document]


class DocumentAnswer(BaseModel):
    document: Document


class Ingested(BaseModel):
    document: Document
    duplicate: bool


class Chunk(BaseModel):
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


class QueryAnswer(BaseModel):
    results: list[Chunk]
    reranked: bool


class Schedule(BaseModel):
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


class ScheduleList(BaseModel):
    schedules: list[Schedule]


class Model(BaseModel):
    id: str
    provider: str
    name: str
    label: str


class ModelList(BaseModel):
    models: list[Model]
    errors: dict[str, str]
    """Per provider that could not be asked, why."""


class Tool(BaseModel):
    name: str
    description: str
    parameters: dict[str, Any]
    source: Literal["builtin", "mcp"]


class ToolList(BaseModel):
    tools: list[Tool]
    mcpServers: dict[str, dict[str, Any]]


class Uploaded(BaseModel):
    url: str
