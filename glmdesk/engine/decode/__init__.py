"""glmdesk's engine decode room (see docs/ARCHITECTURE.md)."""
