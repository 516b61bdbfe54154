"""What every stage shares: the IR, source positions, findings, the catalogue of library calls,
the project's module names and the rule registry. Imports nothing else of cudalint.
"""
