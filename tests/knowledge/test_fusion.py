"""Reciprocal rank fusion, checked against the arithmetic done by hand."""

from __future__ import annotations

import pytest

from palaver.knowledge.fusion import fuse


def test_fusion_scores_match_a_hand_computation() -> None:
    # text:   a=1 b=2 c=3          vector: c=1 a=2 d=3
    # a: 1/61 + 1/62 = 0.0163934 + 0.0161290 = 0.0325224
    # c: 1/63 + 1/61 = 0.0158730 + 0.0163934 = 0.0322664
    # b: 1/62                               = 0.0161290
    # d: 1/63                               = 0.0158730
    fused = fuse(["a", "b", "c"], ["c", "a", "d"])
    assert [f.id for f in fused] == ["a", "c", "b", "d"]
    expected = [0.0325224, 0.0322664, 0.0161290, 0.0158730]
    assert [f.score for f in fused] == pytest.approx(expected, abs=1e-7)
    assert (fused[0].id, fused[0].text_rank, fused[0].vector_rank) == ("a", 1, 2)
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 62)
    assert (fused[2].text_rank, fused[2].vector_rank) == (2, None)
    assert (fused[3].text_rank, fused[3].vector_rank) == (None, 3)


def test_twenty_each_side_fuse_into_at_most_forty() -> None:
    text = [f"t{i}" for i in range(20)]
    vector = [f"v{i}" for i in range(10)] + text[:10]
    fused = fuse(text, vector)
    assert len(fused) == 30
    assert fused[0].id == "t0"  # 1/61 + 1/71 beats 1/61 alone
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 71)


def test_equal_scores_go_to_the_better_single_rank_then_to_text() -> None:
    fused = fuse(["x", "y"], ["z", "w"])
    assert [f.id for f in fused] == ["x", "z", "y", "w"]


def test_empty_lists_fuse_to_nothing() -> None:
    assert fuse([], []) == []
    assert [f.id for f in fuse([], ["only"])] == ["only"]
