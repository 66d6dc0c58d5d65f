"""Keeping memories: the SQLite database (APSW, WAL), its schema migrations, the store of
memories and vectors with its FTS5 keyword index, and the files memories come from and go to
(import/export, the markdown format and mirror)."""
