"""Agents at work: who is addressed, what they are told, and how a reply runs."""
