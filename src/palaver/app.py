"""create_app(): builds the adapters from the process config, wires routers, runs start-up."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from fastapi import FastAPI
from starlette.types import ASGIApp

from palaver import tracing
from palaver.actions import auth, channel_import
from palaver.actions.settings import SettingsHolder
from palaver.agents.call_agent import CallAgentTool
from palaver.agents.chains import ChainCoordinator
from palaver.agents.context import ContextBuilder
from palaver.agents.dispatch import Dispatcher
from palaver.agents.leases import NodeLease
from palaver.agents.react_tool import ReactTool
from palaver.agents.recall import KnowledgeSection, MemorySection, Rerankers
from palaver.agents.runner import ReplyRunner
from palaver.agents.scheduler import Scheduler, guest_budget, reply_to_schedules
from palaver.api import (
    admin,
    agents,
    audit,
    backups,
    chains,
    channel_transfer,
    channels,
    debug,
    memories,
    messages,
    people,
    rag,
    replies,
    schedules,
    search,
    tools,
    uploads,
    usage,
    web_client,
)
from palaver.api import auth as auth_api
from palaver.api.body_limit import BodyLimit
from palaver.api.hot_routes import HotPaths, MessagesThinRoute
from palaver.api.web_client import SecurityHeaders
from palaver.auth.hosts import AllowedHosts, HostGuard
from palaver.auth.limiter import MemoryRateLimiter, RateLimiter
from palaver.backup_schedule import BackupRunner
from palaver.bus.base import CONTROL, Event, EventBus
from palaver.bus.inproc import InProcessBus
from palaver.caches import (
    MIB,
    BoundedCache,
    Caches,
    EncodedMessages,
    channel_weight,
    session_weight,
)
from palaver.config import Config
from palaver.errors import install_error_handlers
from palaver.ids import new_id
from palaver.knowledge.embed import CurrentEmbedder
from palaver.knowledge.index.pick import search_index
from palaver.knowledge.service import KnowledgeBase
from palaver.knowledge.warmup import warm_up
from palaver.llm.registry import ProviderRegistry
from palaver.memory import MemoryStore
from palaver.metrics import Metrics, Uncounted
from palaver.realtime import ws
from palaver.realtime.hub import Hub
from palaver.search.pick import message_search
from palaver.services import Services
from palaver.store import schema_version
from palaver.store.counts import install as install_counts
from palaver.store.db import Database
from palaver.tools.lazy_mcp import LazyMcpBridge
from palaver.tools.memory import MemorySearchTool, MemoryWriteTool
from palaver.tools.rag import RagQueryTool
from palaver.tools.registry import ToolRegistry
from palaver.tools.schedule import ManageScheduleTool
from palaver.tools.web_search import WebSearchTool

if TYPE_CHECKING:
    from palaver.metrics_server import MetricsServer

log = logging.getLogger(__name__)


def build_services(config: Config) -> Services:
    metrics = Metrics() if config.metrics_bind is not None else None
    db = Database(config.db_url)
    bus, limiter = _bus_and_limiter(config, metrics.bus_lag.observe if metrics else None)
    settings = SettingsHolder(db, bus)
    embedder = CurrentEmbedder(lambda: settings.current)
    index = search_index(
        db,
        cache_bytes=config.vector_cache_mb * 1024 * 1024,
        idle_seconds=config.vector_idle_minutes * 60,
        shared_bus=bus if config.redis_url else None,
    )
    bus.listen(index.on_event)
    node_id = new_id("node")
    svc = Services(
        config=config,
        node_id=node_id,
        db=db,
        bus=bus,
        hub=Hub(metrics.events_fanned_out.inc if metrics else None),
        limiter=limiter,
        settings=settings,
        providers=ProviderRegistry(lambda: settings.current),
        tools=ToolRegistry(LazyMcpBridge(lambda: settings.current.mcpServers)),
        embedder=embedder,
        index=index,
        knowledge=KnowledgeBase(db, index, embedder, node_id),
        memories=MemoryStore(db, index, embedder, lambda: settings.current.memory),
        hosts=AllowedHosts(config.host, config.allowed_hosts),
        metrics=metrics or Uncounted(),
        caches=Caches(
            sessions=BoundedCache(config.session_cache_mb * MIB, session_weight),
            channels=BoundedCache(config.channel_cache_mb * MIB, channel_weight),
            messages=EncodedMessages(config.message_cache_mb * MIB),
        ),
    )
    svc.message_search = message_search(db)
    rerankers = svc.rerankers = Rerankers(db, svc.providers)
    svc.tools.register(MemoryWriteTool(db, svc.memories))
    svc.tools.register(MemorySearchTool(db, svc.memories))
    svc.tools.register(RagQueryTool(db, svc.knowledge, rerankers.for_agent_id))
    svc.tools.register(WebSearchTool(lambda: settings.current.webSearch))
    context = ContextBuilder(
        db, [MemorySection(db, svc.memories), KnowledgeSection(db, svc.knowledge, rerankers)]
    )
    runner = ReplyRunner(svc, svc.providers, svc.tools, context)
    svc.dispatcher = Dispatcher(svc, runner)
    svc.chains = ChainCoordinator(svc, svc.dispatcher)
    svc.dispatcher.group_handler = svc.chains.on_group_message
    svc.on_user_message.append(svc.dispatcher.on_user_message)
    svc.tools.register(CallAgentTool(svc))
    svc.tools.register(ReactTool(svc))
    svc.scheduler = Scheduler(db, reply_to_schedules(svc), admit=guest_budget(svc))
    if config.redis_url:
        svc.scheduler.tell_others = lambda: bus.publish(CONTROL, {"type": "schedules_changed"})
    svc.tools.register(
        ManageScheduleTool(
            db,
            svc.scheduler.clock,
            svc.scheduler.wake_everywhere,
            lambda: settings.current.limits.guestSchedules,
        )
    )
    svc.backups = BackupRunner(svc)
    settings.listeners.append(svc.backups.wake)
    if metrics:
        _count(svc, metrics)
    return svc


def _count(svc: Services, metrics: Metrics) -> None:
    """The hot paths' hooks, and the gauges that read state kept anyway, when scraped."""
    svc.db.on_batch = metrics.observe_write_batch
    sockets = metrics.websockets
    sockets.labels("authenticated").set_function(lambda: svc.hub.connection_count)
    sockets.labels("authenticating").set_function(lambda: svc.hub.authenticating_count)
    metrics.replies_in_flight.set_function(lambda: svc.dispatcher.runner.in_flight)
    metrics.ingest_queue.labels("documents").set_function(lambda: svc.knowledge.ingest_queue[0])
    metrics.ingest_queue.labels("chunks").set_function(lambda: svc.knowledge.ingest_queue[1])


def _bus_and_limiter(
    config: Config, lag: Callable[[float], None] | None
) -> tuple[EventBus, RateLimiter]:
    """On Redis when `REDIS_URL` is set, so that several nodes share events and budgets; the
    Redis client (the `redis` extra) is imported only then."""
    if config.redis_url:
        from palaver.auth.limiter_redis import RedisRateLimiter
        from palaver.bus.redis import RedisBus

        return RedisBus(config.redis_url, lag=lag), RedisRateLimiter(config.redis_url)
    return InProcessBus(), MemoryRateLimiter()


class PalaverApp(FastAPI):
    """FastAPI with the thin route of reading and posting messages (`api/hot_routes.py`):
    ahead of the whole stack (`HotPaths`) while its middlewares are only those whose work
    `HotPaths` does itself; else, so that a middleware that measures or traces every request
    sees these too, first in the router."""

    def __init__(self, hosts: AllowedHosts, **options: Any) -> None:
        super().__init__(**options)
        self.hosts = hosts
        """What `HotPaths` checks the Host header against: the host guard's."""

    def build_middleware_stack(self) -> ASGIApp:
        stack = super().build_middleware_stack()
        middlewares: set[Any] = {m.cls for m in self.user_middleware}
        if middlewares == {BodyLimit, SecurityHeaders, HostGuard}:
            return HotPaths(stack, self.exception_handlers, self.hosts)
        if not any(isinstance(route, MessagesThinRoute) for route in self.router.routes):
            self.router.routes.insert(0, MessagesThinRoute(self.router))
        return stack


def create_app(config: Config) -> FastAPI:
    svc = build_services(config)
    tracing.start(svc.node_id)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        exporter = await _serve_metrics(config, svc)
        await anyio.Path(config.data_dir).mkdir(parents=True, exist_ok=True)
        await _bring_schema_up(config, svc.db)
        await svc.settings.reload()
        await auth.prepare_owner(svc)
        svc.hosts.warn_if_open()
        lease = NodeLease(svc)
        taken = await lease.start()
        if taken.documents:
            log.info("marked %d documents failed whose indexing was cut short", taken.documents)
        if taken.chains:
            log.info("paused %d chains that were running at the last stop", taken.chains)
        if taken.replies:
            log.info("stored %d replies cut off by the last stop as interrupted", taken.replies)
        await channel_import.clear_leftovers(svc, alone=lease.alone)
        svc.bus.listen(svc.caches.on_event)
        svc.bus.listen(svc.hub.dispatch)
        svc.bus.listen(lambda topic, event: _on_control(svc, topic, event))
        try:
            await svc.bus.start()
            await svc.scheduler.catch_up()
        except BaseException:
            await lease.stop()  # no heartbeat outlives a start that failed
            raise
        svc.scheduler.start()
        svc.backups.start()
        warming = asyncio.create_task(warm_up(svc.db, svc.embedder))
        gc.freeze()
        gc.enable()  # `palaver serve` starts with collection off (cli._serve)
        settled = asyncio.get_running_loop().call_later(SETTLED_AFTER_SECONDS, _refreeze)
        try:
            yield
        finally:
            settled.cancel()
            await warming
            gc.unfreeze()  # an app made again in this process must not keep this one's objects
            await svc.scheduler.aclose()
            await svc.backups.aclose()
            await svc.dispatcher.shutdown()
            await svc.chains.shutdown()
            await lease.stop()
            await svc.providers.aclose()
            await svc.tools.aclose()
            await svc.knowledge.aclose()
            await svc.embedder.aclose()
            await svc.bus.aclose()
            await svc.limiter.aclose()
            await svc.db.dispose()
            if exporter is not None:
                await exporter.aclose()
            await anyio.to_thread.run_sync(tracing.shutdown)

    app = PalaverApp(
        svc.hosts,
        title="Palaver",
        version="0.1.0",
        openapi_url="/api/openapi.json",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
        **tracing.fastapi_options(),
    )
    app.state.services = svc
    install_error_handlers(app)
    app.add_middleware(BodyLimit)
    app.add_middleware(SecurityHeaders)
    app.add_middleware(HostGuard, allowed=svc.hosts)
    if isinstance(svc.metrics, Metrics):
        from palaver.api.request_metrics import RequestMetrics

        app.add_middleware(RequestMetrics, histogram=svc.metrics.http_requests)
    for router in (
        auth_api.router,
        messages.router,
        agents.router,
        channels.router,
        channel_transfer.router,
        people.router,
        admin.router,
        uploads.router,
        replies.router,
        rag.router,
        memories.router,
        chains.router,
        schedules.router,
        search.router,
        usage.router,
        audit.router,
        backups.router,
        tools.router,
        ws.router,
    ):
        app.include_router(router)
    if config.debug_hooks:
        app.include_router(debug.router(install_counts(svc.db)))
    # Last: its catch-all answers the page for every other GET; and first for what is no
    # other route's path, so that a page does not build every router's routes.
    client = web_client.build_router()
    app.include_router(client)
    app.router.routes.insert(0, web_client.ClientPages(client))
    tracing.instrument(app, svc.db, redis=bool(config.redis_url))
    return app


SETTLED_AFTER_SECONDS = 60
"""When start-up's garbage is collected: after the first clients (a restart's reconnecting
ones) and the embedding model's loading, not in their way."""


def _refreeze() -> None:
    """What start-up made lives as long as the process: out of the collector's sight, a full
    collection no longer walks it (a guest's channel list had a p99 of 98 ms from those pauses,
    17 ms without them). It is frozen at once when the node starts serving; once settled, its
    garbage (the migrations', the settings' loading) is collected and what lives (the warm-up's
    model too) frozen again: one collection of about 100 ms, kept off the start."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


async def _bring_schema_up(config: Config, db: Database) -> None:
    """One read when the schema is current; Alembic is imported only when there is something
    to apply."""
    newest = await anyio.to_thread.run_sync(schema_version.head)
    if newest is not None and await db.read_unit(schema_version.current) == newest:
        log.info("database at revision %s", newest.partition("_")[0])
        return
    await anyio.to_thread.run_sync(_migrate, config.db_url)


def _migrate(url: str) -> None:
    """In a worker thread: importing Alembic reads its plugins' entry points from disk."""
    with schema_version.quiet_alembic():
        from palaver.store import migrate

    migrate.upgrade(url)


async def _serve_metrics(config: Config, svc: Services) -> MetricsServer | None:
    """First of all, so that an address that cannot be listened on stops the start at once."""
    if config.metrics_bind is None or not isinstance(svc.metrics, Metrics):
        return None
    from palaver.metrics_server import MetricsServer

    exporter = MetricsServer(svc.metrics.registry, *config.metrics_bind)
    await exporter.start()
    return exporter


def _on_control(svc: Services, topic: str, event: Event) -> None:
    if topic != CONTROL:
        return
    if event.get("type") == "cancel_reply":
        svc.dispatcher.runner.cancel(event["messageId"])
    elif event.get("type") == "message_changed" and event.get("deleted"):
        for message_id in event["messageIds"]:
            svc.dispatcher.runner.cancel_answers_to(message_id)
    elif event.get("type") == "channel_deleted":
        svc.dispatcher.runner.cancel_in_channel(event["channelId"])
    elif event.get("type") == "schedules_changed":
        svc.scheduler.wake()
    elif event.get("type") == "settings_changed":
        _reload_settings(svc)
    elif event.get("type") == "events_missed":
        # Either change may have been announced while this node did not hear.
        svc.scheduler.wake()
        _reload_settings(svc)


def _reload_settings(svc: Services) -> None:
    task = asyncio.get_running_loop().create_task(svc.settings.reload())
    _background.add(task)
    task.add_done_callback(_background.discard)


_background: set[asyncio.Task[object]] = set()
