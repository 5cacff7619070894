"""glmdesk's ui common room (see docs/ARCHITECTURE.md)."""
