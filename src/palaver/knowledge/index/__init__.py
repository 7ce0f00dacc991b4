"""Search over agents' knowledge: the SearchIndex port and its adapters (sqlite, postgres).

Callers import the port from here; only `app.py` picks and builds an adapter.
"""

from palaver.knowledge.index.base import KINDS, Entry, Hit, IndexStatus, Kind, SearchIndex, Space

__all__ = ["KINDS", "Entry", "Hit", "IndexStatus", "Kind", "SearchIndex", "Space"]
