"""glmdesk's ui chat room (see docs/ARCHITECTURE.md)."""
