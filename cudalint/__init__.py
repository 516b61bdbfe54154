"""cudalint: finds the GPU bugs in Python programs that raise no error."""
__version__ = "0.1.0"
