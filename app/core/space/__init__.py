"""Team spaces (issue 45): memories shared with named people through a folder of their
own, sealed with the space's key and signed line by line by member devices.

- `keys.py`: the keys (a device's signing key and the sealing key it implies, a key per
  epoch), sealing a line and opening it, an invitation sealed to one device.
- `membership.py`: the signed, append-only record of who is in the space, folded to the
  same members and epoch on every device whatever order its events arrived in.
- `folder.py`: the space's folder on disk: its mark and one file of signed events per
  device, written whole by that device, read as data (a bad line skipped and said once).
- `spaces.py`: the spaces this device is in (`engine.spaces`, `mnemo space ...`): create,
  invite, join, members, remove, leave; this device's key is sync's signing key, and its
  spaces and epoch keys are kept in its database.
- `lock.py`: one command at a time on a device's spaces (a `flock` beside the database).

ADR 0026. The CLI uses them for membership; sharing memories in a space (the sync pass
sealing its lines) and the app's Settings → Spaces build on them next.
"""
