"""Measuring helpers shared by bench/ scripts and the `dumpcmp bench` command (one module per area)."""
