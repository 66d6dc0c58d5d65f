"""The frozen program's entry point (PyInstaller): the same `mnemo` command as the wheel's."""

import sys

from app.cli import main

if __name__ == "__main__":
    sys.exit(main())
