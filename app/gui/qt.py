"""The one place that imports the Qt binding, so a binding change or a shim is one edit."""

from PySide6 import QtCore, QtGui, QtNetwork, QtTest, QtWidgets  # noqa: F401
from PySide6.QtCore import Qt, Signal  # noqa: F401
