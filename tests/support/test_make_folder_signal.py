"""A signal that lands right after `make_folder` creates a folder, before the caller has it on record, leaves no empty
folder behind (CI saw one: `compare -d` interrupted at 136 ms left an empty output folder). Real SIGINTs, sent by the
patched `os.mkdir` the moment the folder exists."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

import dumpcmp.support.files as files
from dumpcmp.comparison.detail import export_detail
from dumpcmp.support.native import core


@pytest.fixture
def sigint_after_mkdir(monkeypatch):
    real = os.mkdir

    def mkdir(path, *args, **kwargs):
        real(path, *args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)  # Python raises KeyboardInterrupt at the next bytecode it can

    monkeypatch.setattr(files.os, "mkdir", mkdir)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def test_made_folder_removes_a_folder_made_as_the_signal_came(tmp_path, sigint_after_mkdir):
    out = tmp_path / "a" / "b"
    with pytest.raises(KeyboardInterrupt):
        with files.made_folder(out):
            pass
    assert not (tmp_path / "a").exists()


def test_an_interrupted_detail_export_leaves_no_folder(tmp_path, sigint_after_mkdir):
    x = core.compare.source_from_array(np.arange(12, dtype=np.float32))
    y = core.compare.source_from_array(np.arange(12, dtype=np.float32) + 1)
    with pytest.raises(KeyboardInterrupt):
        export_detail(x, y, (12,), tmp_path / "new" / "detail", op_name="op", ground_truth_name="op")
    assert os.listdir(tmp_path) == []
