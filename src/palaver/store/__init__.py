"""Persistence: tables, the database handle, repositories and migrations."""
