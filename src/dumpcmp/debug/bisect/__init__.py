"""The first bad layer with few device runs. In: the ONNX model, the user's device run command (placeholders for the
model, the acl.json and the dump folder) and the ground truth. Out: `OUT/round_NN/` folders (acl.json, dump, run.log,
result.csv), `OUT/bisect.log`, `OUT/bisect.jsonl` (what an interrupted bisect resumes from) and a `BisectResult`
naming the first layer below the threshold, with what `dumpcmp locate` says about it. `search` holds the search.
"""

from dumpcmp.debug.bisect.search import (
    PLACEHOLDERS,
    BisectJob,
    BisectResult,
    Round,
    RunFailed,
    bisect,
    candidate_layers,
)

__all__ = ["PLACEHOLDERS", "BisectJob", "BisectResult", "Round", "RunFailed", "bisect", "candidate_layers"]
