"""Finding memories: the vector index, the hybrid ranking, recall (one query to ranked,
banded results) and the session-start context for agents."""
