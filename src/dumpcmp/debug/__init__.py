"""Finding the cause. In: a model, its device dump and ground truth. Out: where the error starts (locate), a runnable
sub-model with its data (extract), the first bad layer by bisection (bisect).
"""
