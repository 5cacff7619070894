"""Qt widgets, the worker object and its thread, QSettings: the only layer that imports Qt."""
