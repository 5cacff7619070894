"""glmdesk's engine formats room (see docs/ARCHITECTURE.md)."""
