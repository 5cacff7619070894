"""glmdesk's ui session room (see docs/ARCHITECTURE.md)."""
