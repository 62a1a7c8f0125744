"""Rows -> what the user reads. In: comparison rows. Out: the HTML report, histograms, advice, gates, diffs of two
result files.
"""
