"""What a run reads: the files to lint, their bytes decoded and parsed (notebooks too), and the
project's settings.
"""
