"""Findings into what a person or a machine reads: text, JSON, SARIF, GitHub annotations, code
frames; baselines and suppressions.
"""
