"""The compiler's graph JSON -> pairs. In: the graph JSON and a scanned run. Out: ops (graph_json) and device tensors
paired with ground truth (pairing).
"""
