"""Pairs -> rows of values. In: scanned runs and their pairs. Out: per-tensor metric values (compare) and element-level detail of one tensor (single_op, detail)."""
