"""glmdesk: a desktop chat application for ChatGLM-family language models."""

__version__ = "0.1.0"
