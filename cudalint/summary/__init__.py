"""One parsed module into IR: its effects (calls, environment writes, forks, threads) in
evaluation order, inside structured flow, with value labels.
"""
