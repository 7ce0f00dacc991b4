"""Process settings, read once from the environment; run-time settings live in the database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


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
    ws_idle_seconds: float = Field(default=90.0, gt=0)
    ws_queue_size: int = Field(default=256, ge=1)
    shutdown_grace_seconds: int = Field(default=10, ge=1)
    log_level: str = "info"

    @field_validator("data_dir")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        """Resolved once at start, so nothing touches the file system for it on the event loop."""
        return value.resolve()

    @field_validator("allowed_origins", mode="before")
    @classmethod
    def _origins(cls, value: Any) -> Any:
        """A JSON list, or a comma-separated one: `https://a.example,https://b.example`."""
        if not isinstance(value, str):
            return value
        if value.lstrip().startswith("["):
            return json.loads(value)
        return [origin.strip().rstrip("/") for origin in value.split(",") if origin.strip()]

    @property
    def db_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{self.data_dir / 'palaver.db'}"

    @property
    def uploads_dir(self) -> Path:
        return self.data_dir / "uploads"
