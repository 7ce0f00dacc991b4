"""Table definitions, one module per area; all share `metadata` from base."""

from palaver.store.tables import (
    audit,
    backups,
    chains,
    core,
    knowledge,
    reading,
    schedules,
    uploads,
    usage,
)
from palaver.store.tables.base import metadata

__all__ = [
    "audit",
    "backups",
    "chains",
    "core",
    "knowledge",
    "metadata",
    "reading",
    "schedules",
    "uploads",
    "usage",
]
