"""Chat with documents in the window: the library and its worker thread, the panel above the input, the sources of an answer."""
