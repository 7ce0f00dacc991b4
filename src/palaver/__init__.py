"""Palaver: a self-hosted workspace where people and AI agents talk in channels."""

__version__ = "0.1.0"
