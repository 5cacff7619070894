"""glmdesk's ui tools room (see docs/ARCHITECTURE.md)."""
