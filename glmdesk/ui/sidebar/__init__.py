"""glmdesk's ui sidebar room (see docs/ARCHITECTURE.md)."""
