"""glmdesk's engine files room (see docs/ARCHITECTURE.md)."""
