"""Headers read many at a time (`core.dump.read_headers`/`read_heads`, `core.scan.read_records`) open each folder once
and look its files up in it; a batch spread over more folders than the process may hold open still reads every file
(each folder's descriptor is an extra open file: a batch of 4,096 dumps in as many folders held 4,096 of them while
the files were opened, and past the open-files limit the dumps themselves failed with "Too many open files")."""

from __future__ import annotations

import os
import resource

import numpy as np

import dumpcmp
from helpers.forked import in_child
from dumpcmp.support.native import core


def test_a_batch_over_more_folders_than_open_files_allowed_reads_every_dump(tmp_path):
    paths = []
    for k in range(300):
        folder = tmp_path / f"f{k:03d}"
        folder.mkdir()
        path = folder / f"Add.op{k}.1.1.1700000000000001"
        dumpcmp.write_dump(path, inputs=[np.arange(4, dtype=np.float32)], outputs=[np.ones(4, np.float32)],
                           op_name=f"op{k}")
        paths.append(os.fspath(path))

    def read() -> list[str]:
        resource.setrlimit(resource.RLIMIT_NOFILE, (200, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        texts = [got if isinstance(got, str) else "" for got in core.dump.read_headers(paths)]
        texts += [got if isinstance(got, str) else "" for got in core.dump.read_heads(paths)]
        return texts

    assert in_child(read) == [""] * 600
