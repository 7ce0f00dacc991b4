"""What counts as one emoji: an agent's avatar and a reaction obey the same rule."""

from __future__ import annotations

import emoji


def one_emoji(value: str) -> bool:
    """Exactly one emoji (a sequence such as a flag or a family counts as one), nothing else."""
    return emoji.purely_emoji(value) and len(emoji.emoji_list(value)) == 1
