"""Table definitions, one module per area; all share `metadata` from base."""

from palaver.store.tables import core
from palaver.store.tables.base import metadata

__all__ = ["core", "metadata"]
