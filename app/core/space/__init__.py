"""Team spaces (issue 45): memories shared with named people through a folder of their
own, sealed with the space's key and signed line by line by member devices.

- `keys.py`: the keys (a device's signing key and the sealing key it implies, a key per
  epoch), sealing a line and opening it, an invitation sealed to one device.
- `membership.py`: the signed, append-only record of who is in the space, folded to the
  same members and epoch on every device whatever order its events arrived in.
- `folder.py`: the space's folder on disk: its mark and one file of signed events per
  device, written whole by that device, read as data (a bad line skipped and said once).
- `lines.py`: each device's file of sealed, signed lines, one shared memory's state a
  line, and reading every member's file with each line checked.
- `sharing.py`: which memory is in which space, this device's changes sent as lines, and
  every member's lines folded (with sync's fold) into memories here.
- `spaces.py`: the spaces this device is in (`engine.spaces`, `mnemo space ...`): create,
  invite, join, members, remove, leave, share, withdraw, the pass (`sync`); this device's
  key is sync's signing key, and its spaces and epoch keys are kept in its database.
- `lock.py`: one command at a time on a device's spaces (a `flock` beside the database).

ADR 0026. The app's Settings → Spaces, MCP `store_memory(space=…)` and background passes
build on them next.
"""
