"""The hand-judged retrieval quality set: a corpus of documents of several kinds, questions
with passage-level judgements, and the scoring that `bench/bench_quality.py` and the test
suite's fast slice share."""
