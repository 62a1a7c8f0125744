"""Of two dumps of one op at one timestamp, the newest is the later in execution order: the greater task id, as a
number (the original follows the directory listing there: tests/oracle/test_order.py)."""

from __future__ import annotations

from dumpcmp.dumps.scan import scan

T0 = 1700000000000000


def test_equal_timestamps_newest_is_the_greater_task_as_a_number(tmp_path):
    for name in (f"Conv2D.conv1.9.{T0}", f"Conv2D.conv1.10.{T0}", f"Relu.relu.100.{T0 + 1}", f"Relu.relu.20.{T0 + 1}",
                 f"Add.add.2.{T0 - 1}"):
        (tmp_path / name).write_bytes(b"")
    [group] = scan(tmp_path).groups
    newest = group.newest()
    assert list(newest) == ["add", "conv1", "relu"]
    assert newest["conv1"].file_name == f"Conv2D.conv1.10.{T0}"
    assert newest["relu"].file_name == f"Relu.relu.100.{T0 + 1}"


def test_a_longer_timestamp_is_newer(tmp_path):
    for name in (f"Conv2D.conv1.3.{10 ** 15}", f"Conv2D.conv1.4.{10 ** 15 - 1}"):
        (tmp_path / name).write_bytes(b"")
    [group] = scan(tmp_path).groups
    assert group.newest()["conv1"].file_name == f"Conv2D.conv1.3.{10 ** 15}"
