"""`sample_ground_truth`'s note on ground truth whose tensors have files in several folders (no sample folders): said
when a tensor has candidates in two folders, not said when every tensor has one file, however many folders hold
them (the note is skipped without walking the files when no file lost to a newer one)."""

from __future__ import annotations

import numpy as np

from dumpcmp.comparison.runs import sample_ground_truth
from dumpcmp.dumps.scan import scan


def _save(path, name: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    np.save(path / name, np.zeros(3, np.float32))


def _notes(root) -> list[str]:
    index = scan(root)
    files, notes = sample_ground_truth(None, index.ground_truth, index.root, None, 1)
    return notes


def test_a_tensor_in_two_folders_is_said(tmp_path):
    _save(tmp_path / "x", "conv1.0.1700000000000001.npy")
    _save(tmp_path / "y", "conv1.0.1700000000000002.npy")
    _save(tmp_path / "y", "conv2.0.1700000000000002.npy")
    assert _notes(tmp_path) == ["ground truth: 1 tensors have files in several folders; the newest of each was taken"]


def test_an_older_file_in_the_same_folder_is_not_a_second_folder(tmp_path):
    _save(tmp_path / "x", "conv1.0.1700000000000001.npy")
    _save(tmp_path / "x", "conv1.0.1700000000000002.npy")
    _save(tmp_path / "y", "conv2.0.1700000000000002.npy")
    assert _notes(tmp_path) == []


def test_one_file_a_tensor_across_folders_says_nothing(tmp_path):
    _save(tmp_path / "x", "conv1.0.1700000000000001.npy")
    _save(tmp_path / "y", "conv2.0.1700000000000002.npy")
    _save(tmp_path / "z" / "deep", "conv3.0.1700000000000003.npy")
    assert _notes(tmp_path) == []
