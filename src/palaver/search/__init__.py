"""Full-text search over messages: one query grammar (`query`), compiled to each engine."""
