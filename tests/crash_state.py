"""What `crash.install` changes in the test process (hooks, faulthandler, root logging, the
crash module's own files), put back after: `with process_state_kept(): ...`."""

from __future__ import annotations

import contextlib
import faulthandler
import logging
import signal
import sys
import threading
from collections.abc import Iterator

from app.core import crash


@contextlib.contextmanager
def process_state_kept() -> Iterator[None]:
    root = logging.getLogger()
    handlers = {handler: handler.level for handler in root.handlers}
    level = root.level
    hooks = sys.excepthook, threading.excepthook
    fault = faulthandler.is_enabled()
    try:
        yield
    finally:
        sys.excepthook, threading.excepthook = hooks
        if fault:
            faulthandler.enable(file=sys.__stderr__)
        else:
            faulthandler.disable()
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
                handler.close()
        for handler, handler_level in handlers.items():
            handler.setLevel(handler_level)
        root.setLevel(level)
        crash.set_notifier(None)
        if hasattr(signal, "SIGUSR1"):  # the stacks on SIGUSR1: what it did before
            faulthandler.unregister(signal.SIGUSR1)
        crash.close_files()
