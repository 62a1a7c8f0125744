"""Plumbing every stage uses: the one safe writer, bounded JSON reading, progress lines, the garbage collector paused
while records are built in bulk, users' plug-in files imported, the compiled core imported once, NumPy imported on
first use.
"""
