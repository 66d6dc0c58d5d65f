"""Mnemo's engine: storage, embeddings, search and ranking. Never imports Qt."""
