"""Process settings, read once from the environment (the owner's run-time settings live in the DB)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Config(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PALAVER_", extra="ignore")

    owner_key: SecretStr = Field(validation_alias="OWNER_KEY")
    data_dir: Path = Path("./data")
    host: str = "127.0.0.1"
    port: int = 8000
    database_url: str | None = Field(default=None, validation_alias="DATABASE_URL")
    redis_url: str | None = Field(default=None, validation_alias="REDIS_URL")
    trust_proxy: bool = False
    allowed_origins: list[str] = Field(default_factory=list)
    ws_idle_seconds: float = 90.0
    ws_queue_size: int = 256
    log_level: str = "info"

    @field_validator("data_dir")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        """Resolved once at start, so nothing touches the file system for it on the event loop."""
        return value.resolve()

    @property
    def db_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{self.data_dir / 'palaver.db'}"

    @property
    def uploads_dir(self) -> Path:
        return self.data_dir / "uploads"
