"""Which files need a syntax tree at all: a byte-level scan of every file, then a closure over
the import graph, so that most of a big tree is never parsed.
"""
