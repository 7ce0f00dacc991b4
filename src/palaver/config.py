"""Process settings, read once from the environment; run-time settings live in the database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from palaver.store.urls import app_url

MIN_OWNER_KEY = 12


class Config(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PALAVER_", extra="ignore")

    owner_key: SecretStr = Field(validation_alias="OWNER_KEY")
    data_dir: Path = Path("./data")
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    database_url: str | None = Field(default=None, validation_alias="DATABASE_URL")
    redis_url: str | None = Field(default=None, validation_alias="REDIS_URL")
    trust_proxy: bool = False
    allowed_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Names besides the loopback ones and `--host` that a request's Host may carry; `*` any."""
    ws_idle_seconds: float = Field(default=90.0, gt=0)
    ws_auth_seconds: float = Field(default=10.0, gt=0)
    """A socket must authenticate within this long, or it is closed with 4401."""
    ws_unauthenticated_per_address: int = Field(default=50, ge=1)
    upload_idle_seconds: float = Field(default=30.0, gt=0)
    """An upload that sends nothing for this long is ended and its partial file removed."""
    ws_queue_size: int = Field(default=256, ge=1)
    shutdown_grace_seconds: int = Field(default=10, ge=1)
    vector_cache_mb: int = Field(default=1024, ge=1)
    """Bound on the agents' vector matrices kept in memory; the least recently searched go
    first, and any not searched for `vector_idle_minutes` go anyway (reloaded on demand)."""
    vector_idle_minutes: float = Field(default=60.0, gt=0)
    message_cache_mb: int = Field(default=16, ge=1)
    """Bound on the messages' JSON kept in memory for history pages, counted as the memory
    the entries hold; the least recently used go first."""
    session_cache_mb: int = Field(default=8, ge=1)
    """Bound on the sessions kept in memory (about 13,000 at the default), counted alike."""
    channel_cache_mb: int = Field(default=16, ge=1)
    """Bound on the channels kept in memory with their agents and members (about 20,000
    small channels at the default, fewer large ones), counted alike."""
    node_heartbeat_seconds: float = Field(default=5.0, gt=0)
    """How often a node refreshes its row in the node registry."""
    node_lease_seconds: float = Field(default=20.0, gt=0)
    """A node whose heartbeat is older than this is dead: its replies in flight are stored as
    interrupted and its running chains paused by another node (docs/SCALING.md)."""
    node_sweep_seconds: float = Field(default=5.0, gt=0)
    """How often a node looks for dead nodes' work."""
    metrics_address: str | None = None
    """`host:port` where `GET /metrics` is served (Prometheus text), apart from the public
    address so that it is never public by accident; unset, no metrics are served."""
    log_level: str = "info"
    debug_hooks: bool = False
    """For the test suite only (its harness sets `PALAVER_DEBUG_HOOKS=1`; nothing else does):
    `/api/debug/*` counts database work, forgets the caches and lists the imported modules.
    Off, those paths answer 404."""

    @model_validator(mode="after")
    def _lease_outlasts_beats(self) -> Config:
        """A lease shorter than two beats would judge live nodes dead between beats."""
        if self.node_lease_seconds < 2 * self.node_heartbeat_seconds:
            raise ValueError("PALAVER_NODE_LEASE_SECONDS must be at least twice the heartbeat")
        return self

    @field_validator("data_dir")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        """Resolved once at start, so nothing touches the file system for it on the event loop."""
        return value.resolve()

    @field_validator("owner_key")
    @classmethod
    def _long_enough(cls, value: SecretStr) -> SecretStr:
        """A short owner password falls to guessing even behind login throttling."""
        if len(value.get_secret_value().strip()) < MIN_OWNER_KEY:
            raise ValueError(f"must be at least {MIN_OWNER_KEY} characters long")
        return value

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str | None) -> str | None:
        """A URL no driver can read is refused at start, not at the first query."""
        if value is not None:
            app_url(value)
        return value or None

    @field_validator("metrics_address")
    @classmethod
    def _metrics_address(cls, value: str | None) -> str | None:
        """Refused at start, with what is wrong, rather than when the listener binds."""
        if value is None or not value.strip():
            return None
        split_address(value.strip())
        return value.strip()

    @model_validator(mode="after")
    def _metrics_apart(self) -> Config:
        """On the public address itself, one of the two listeners could not start."""
        if self.metrics_bind is not None and self.port != 0:
            host, port = self.metrics_bind
            if port == self.port and host == self.host:
                raise ValueError("PALAVER_METRICS_ADDRESS must differ from the public address")
        return self

    @field_validator("allowed_origins", "allowed_hosts", mode="before")
    @classmethod
    def _list(cls, value: Any) -> Any:
        """A JSON list, or a comma-separated one: `https://a.example,https://b.example`."""
        if not isinstance(value, str):
            return value
        if value.lstrip().startswith("["):
            return json.loads(value)
        return [item.strip().rstrip("/") for item in value.split(",") if item.strip()]

    @property
    def db_url(self) -> str:
        """`DATABASE_URL` as the app's driver wants it, or the SQLite file in the data dir."""
        if self.database_url:
            return app_url(self.database_url)
        return f"sqlite+aiosqlite:///{self.data_dir / 'palaver.db'}"

    @property
    def metrics_bind(self) -> tuple[str, int] | None:
        """`PALAVER_METRICS_ADDRESS` as the host and port to bind, or None when unset."""
        return None if self.metrics_address is None else split_address(self.metrics_address)

    @property
    def uploads_dir(self) -> Path:
        return self.data_dir / "uploads"


def split_address(address: str) -> tuple[str, int]:
    """`host:port` (`[::1]:9100` for IPv6) as a host and a port; ValueError saying why not."""
    host, colon, port = address.rpartition(":")
    if not colon or not host or not port.isdigit():
        raise ValueError(f"{address!r} is not host:port, such as 127.0.0.1:9100")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"{address!r}: write an IPv6 address in brackets, as [::1]:9100")
    number = int(port)
    if not host or number > 65535:
        raise ValueError(f"{address!r} is not host:port with a port from 0 to 65535")
    return host, number
