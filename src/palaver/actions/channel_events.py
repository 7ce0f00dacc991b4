"""The live channel list: after a channel's change commits, each person concerned hears it on
every socket of theirs (the `user:` topic, through the bus to every node), subscribed or not.

Only people who can read the channel after the change hear `channel_created` or
`channel_updated`; those who could before and no longer can hear `channel_removed` with the
id alone, which they knew. Nobody else hears anything, so a guest learns nothing of a channel
it is not in."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from palaver.bus.base import CONTROL, user_topic
from palaver.domain import Channel
from palaver.services import Services
from palaver.store.read_states import ReadState


def joined_json(channel: Channel, last_read_id: str | None) -> dict[str, Any]:
    """The channel as a list item of someone who has just gained it: nothing unread."""
    return {**channel.as_json(), **ReadState(last_read_id, 0, 0).as_json()}


async def tell_access_changed(svc: Services, channel_id: str, member_ids: list[str]) -> None:
    """Every node forgets the cached channel and drops the subscriptions of people who left."""
    event = {"type": "channel_access", "channelId": channel_id, "memberIds": member_ids}
    await svc.bus.publish(CONTROL, event)


async def tell_people(
    svc: Services,
    before: Channel | None,
    after: Channel | None,
    joined_marker: str | None = None,
) -> None:
    """`before` and `after` the change (None: it did not exist, or was deleted)."""
    had = set(before.member_ids) if before else set()
    has = set(after.member_ids) if after else set()
    if after is not None:
        joined = joined_json(after, joined_marker)
        for user_id in _in_order(after.member_ids, has - had):
            await _tell(svc, user_id, "channel_created", joined)
        updated = after.as_json()
        for user_id in _in_order(after.member_ids, has & had):
            await _tell(svc, user_id, "channel_updated", updated)
    if before is not None:
        removed = {"id": before.id}
        for user_id in _in_order(before.member_ids, had - has):
            await _tell(svc, user_id, "channel_removed", removed)


def _in_order(ids: Iterable[str], wanted: set[str]) -> list[str]:
    return [i for i in ids if i in wanted]


async def _tell(svc: Services, user_id: str, kind: str, data: dict[str, Any]) -> None:
    await svc.bus.publish(user_topic(user_id), {"type": kind, "data": data})
