"""The boundary a 1012 close names after a Redis outage (docs/SPEC.md section 18): a message
id that sorts before every id made from the outage's start on, the earliest of the outages
that closed a socket, within a close reason's 123 bytes."""

from __future__ import annotations

import re
import time

from palaver.bus.base import CONTROL, events_missed
from palaver.ids import first_id_at, new_id
from palaver.realtime.hub import CLOSE_CATCH_UP, MISSED_MARGIN, Connection, Hub


async def _unused(_: str) -> None:
    raise AssertionError("nothing is sent")


def test_the_boundary_sorts_between_the_ids_made_before_and_after_its_time() -> None:
    before = new_id("msg")
    time.sleep(0.002)
    at = time.time()
    boundary = first_id_at("msg", at)
    after = new_id("msg")
    assert before < boundary <= after
    assert re.fullmatch(r"msg_[0-9A-HJKMNP-TV-Z]{26}", boundary)
    assert first_id_at("msg", at - 0.001) < boundary < first_id_at("msg", at + 0.001)


def test_a_socket_closed_by_several_outages_names_the_earliest_boundary() -> None:
    hub = Hub()
    conn = Connection("user_1", True, "hash", _unused, queue_size=4)
    hub.add(conn)
    now = time.time()
    hub.dispatch(CONTROL, events_missed(now - 5))
    hub.dispatch(CONTROL, events_missed(now - 60))
    hub.dispatch(CONTROL, events_missed(now))
    hub.dispatch(CONTROL, {"type": "events_missed"})  # a node of an earlier version
    assert conn.close_code == CLOSE_CATCH_UP
    earliest = first_id_at("msg", now - 60 - MISSED_MARGIN)
    assert conn.close_reason == f"events missed after {earliest}"
    assert len(conn.close_reason.encode()) <= 123


def test_a_socket_closed_for_another_reason_names_no_boundary() -> None:
    hub = Hub()
    conn = Connection("user_1", True, "hash", _unused, queue_size=4)
    hub.add(conn)
    conn.kill(1013)
    hub.dispatch(CONTROL, events_missed(time.time()))
    assert (conn.close_code, conn.close_reason) == (1013, "")
    plain = Connection("user_2", True, "hash", _unused, queue_size=4)
    hub.add(plain)
    hub.dispatch(CONTROL, {"type": "events_missed"})
    assert (plain.close_code, plain.close_reason) == (CLOSE_CATCH_UP, "")
