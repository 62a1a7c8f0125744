"""Plumbing every stage uses: the one safe writer, bounded JSON reading, progress lines, the compiled core imported
once, NumPy imported on first use.
"""
