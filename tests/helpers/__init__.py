"""What the tests share across folders: builders of inputs (graph JSON documents, dump headers through protobuf,
hostile files, generated ONNX networks, the report's chain network), independent references (the spec's layout
formulas as NumPy loops) and the real networks' registry and fetcher. Tests import them as `from helpers import
graphjson` (tests/ is on sys.path: pyproject.toml's `pythonpath`); a module used by one folder only sits in that
folder (tests/oracle's scripts, tests/hostile/fuzz_harness.py)."""
