"""Whole-project questions over the IR: path-sensitive flow with per-function summaries, the
call graph, and which code runs on several threads at once.
"""
