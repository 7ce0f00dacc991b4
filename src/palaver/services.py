"""The adapters and shared state one process runs with, built once by `app.create_app`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from palaver.actions.settings import SettingsHolder
from palaver.auth.hosts import AllowedHosts
from palaver.auth.limiter import RateLimiter
from palaver.bus.base import EventBus
from palaver.caches import Caches
from palaver.config import Config
from palaver.domain import Channel, Message
from palaver.ids import new_id
from palaver.knowledge.embed import CurrentEmbedder
from palaver.knowledge.index.base import SearchIndex
from palaver.knowledge.service import KnowledgeBase
from palaver.llm.registry import ProviderRegistry
from palaver.memory import MemoryStore
from palaver.metrics import Uncounted
from palaver.realtime.hub import Hub
from palaver.search.base import MessageSearch
from palaver.store.db import Database
from palaver.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from palaver.agents.chains import ChainCoordinator
    from palaver.agents.dispatch import Dispatcher
    from palaver.agents.recall import Rerankers
    from palaver.agents.scheduler import Scheduler
    from palaver.backup_schedule import BackupRunner

MessageHandler = Callable[[Message, Channel], Awaitable[None]]


@dataclass
class Services:
    config: Config
    db: Database
    bus: EventBus
    hub: Hub
    limiter: RateLimiter
    settings: SettingsHolder
    providers: ProviderRegistry
    tools: ToolRegistry
    embedder: CurrentEmbedder
    index: SearchIndex
    knowledge: KnowledgeBase
    memories: MemoryStore
    hosts: AllowedHosts
    dispatcher: Dispatcher = field(init=False)
    """Set right after construction, as is `chains`: they need the services themselves."""
    chains: ChainCoordinator = field(init=False)
    rerankers: Rerankers = field(init=False)
    scheduler: Scheduler = field(init=False)
    backups: BackupRunner = field(init=False)
    message_search: MessageSearch = field(init=False)
    owner_key_tag: str = ""
    owner_id: str = ""
    on_user_message: list[MessageHandler] = field(default_factory=list)
    """Called after a person's message is stored and broadcast: where agents pick it up."""
    caches: Caches = field(default_factory=Caches)
    metrics: Uncounted = field(default_factory=Uncounted)
    """This process's metrics (a `Metrics`), served on `PALAVER_METRICS_ADDRESS` when it is
    set; otherwise nothing is recorded."""
    node_id: str = field(default_factory=lambda: new_id("node"))
    """This process's id in the `nodes` registry; its reply drafts, running chains and
    documents being indexed carry it (their lease)."""
