"""glmdesk's engine tools room (see docs/ARCHITECTURE.md)."""
