"""`--fix` / `--diff`: the few edits that are certain, and the text edits offered to editors.
"""
