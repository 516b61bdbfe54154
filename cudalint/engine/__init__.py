"""Runs the stages over a tree: scan, select, parse, summarize; cached by content and in parallel.
"""
