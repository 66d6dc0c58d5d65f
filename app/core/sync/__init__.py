"""Sync over a shared folder (Syncthing or any folder sync), with one writer per file.

Each device appends its operations (a memory's new state, a count, a purge) to files only
it writes, under `FOLDER/devices/<device id>/`, and reads the others'. What a device holds
is a deterministic fold of every operation it has seen (`fold.py`), so every device that has
seen the same operations holds the same memories, whatever order they came in. ADR 0015.
"""
