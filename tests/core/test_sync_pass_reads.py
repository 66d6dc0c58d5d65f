"""A pass reads each file of the folder once (issue 43): the folder's mark, and each other
device's folder listed once, however many batches and steps the pass has (it read the mark
three times and listed another device's folder six times). Two real engines on
real SQLite files sharing one folder; the real files and directories are counted as the
pass opens and lists them."""

from __future__ import annotations

import pathlib
from collections import Counter

from app.core.engine import Engine
from app.core.settings import Settings
from app.core.sync import folder as folder_module
from tests.sync_devices import approve_waiting


def test_a_pass_reads_the_mark_once_and_lists_another_devices_folder_once(
    tmp_path, word_model, monkeypatch
):
    shared = tmp_path / "shared"
    engines = []
    for name in ("laptop", "desktop"):
        engine = Engine(Settings(tmp_path / f"{name}.json"), tmp_path / f"{name}.db", word_model)
        engine.sync.init(str(shared), name)
        engines.append(engine)
    laptop, desktop = engines
    approve_waiting(laptop, desktop)
    words = "garden piano river coffee kernel invoice budget meeting doctor mountain".split()
    for i in range(30):  # (unlike each other: none is taken as another's duplicate)
        laptop.remember(text=f"{words[i % 10]} {words[(i * 3 + 1) % 10]} number {i * 7919}")
    laptop.sync.now()
    laptop_folder = shared / "devices" / laptop.sync.status()["device"]

    marks = Counter()
    listed = Counter()
    read_mark = folder_module.Folder.read_mark
    iterdir = pathlib.Path.iterdir

    def counted_mark(root):
        marks[str(root)] += 1
        return read_mark(root)

    def counted_iterdir(path):
        listed[str(path)] += 1
        return iterdir(path)

    monkeypatch.setattr(folder_module.Folder, "read_mark", staticmethod(counted_mark))
    monkeypatch.setattr(pathlib.Path, "iterdir", counted_iterdir)
    desktop.remember(text="desktop note about the train ticket")
    result = desktop.sync.now()
    monkeypatch.undo()

    assert result.read >= 30 and result.written >= 1  # a pass that read and wrote
    assert marks == {str(shared): 1}, marks
    assert listed[str(laptop_folder)] == 1, listed
    assert desktop.count() == laptop.count() + 1 == 31
    for engine in engines:
        engine.close()
