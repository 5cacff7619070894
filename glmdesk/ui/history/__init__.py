"""glmdesk's ui history room (see docs/ARCHITECTURE.md)."""
