"""Team spaces (issue 45): memories shared with named people through a folder of their
own, sealed with the space's key and signed line by line by member devices.

- `keys.py`: the keys (a device's signing key and the sealing key it implies, a key per
  epoch), sealing a line and opening it, an invitation sealed to one device.
- `membership.py`: the signed, append-only record of who is in the space, folded to the
  same members and epoch on every device whatever order its events arrived in.

ADR 0026. No CLI, GUI or sync pass uses these yet; they build on them.
"""
