"""The desktop app: tray, global hotkey, recall popup, memory manager, settings (PySide6)."""
