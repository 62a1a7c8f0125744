"""Files on disk -> tensors. In: dump trees, Ascend dump files, ground-truth .npy/.pb/.quant files and their names. Out:
indexed runs (scan), decoded tensors (dump, layout), converted files (convert).
"""
