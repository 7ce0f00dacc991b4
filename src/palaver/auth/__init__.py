"""Who is calling: sessions, the owner key, guests' keys, roles and rate limits."""
