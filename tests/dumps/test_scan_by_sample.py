"""GroundTruthIndex.by_sample: the sample folders of a ground-truth tree, as `os.path.relpath` of each file under
the root names them, however the root is spelled (relative, `./`, a trailing slash, through `..`)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from dumpcmp.dumps.scan import scan


def _reference(index, root: str) -> dict[int, list[str]]:
    """The sample folders by each file's own relpath (what by_sample computed before it took one per folder)."""
    groups: dict[int, list[str]] = {}
    for e in list(index.files.values()) + index.superseded:
        parts = os.path.relpath(e.path, root).split(os.sep)
        if len(parts) > 1 and parts[0].isdigit() and parts[0].isascii():
            groups.setdefault(int(parts[0]), []).append(e.path)
    return {k: sorted(v) for k, v in sorted(groups.items())}


def _tree(base) -> None:
    for rel in ("0/a.0.1.npy", "0/b.0.1.npy", "1/a.0.2.npy", "1/deep/b.0.2.npy", "x/a.0.3.npy", "c.0.1.npy",
                "01/c.0.5.npy", "\u0661/c.0.6.npy", "0/a.0.0.npy"):
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, np.zeros(2, np.float32))


@pytest.mark.parametrize("spelling", ["abs", "rel", "dot", "slash", "up"])
def test_by_sample_is_each_files_relpath(tmp_path, monkeypatch, spelling):
    gt = tmp_path / "gt"
    _tree(gt)
    (tmp_path / "other").mkdir()
    monkeypatch.chdir(tmp_path)
    root = {"abs": str(gt), "rel": "gt", "dot": "./gt", "slash": "gt/", "up": "other/../gt"}[spelling]
    index = scan(root).ground_truth
    got = {k: sorted(e.path for e in list(v.files.values()) + v.superseded) for k, v in index.by_sample(root).items()}
    assert got == _reference(index, root)
    assert sorted(got) == [0, 1]  # "01" is sample 1 too: int("01"); "x" and the Arabic-Indic digit are not samples
