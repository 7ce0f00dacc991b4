"""Document knowledge: parsing, chunking, embedding, indexing and retrieval."""
