"""glmdesk's ui app room (see docs/ARCHITECTURE.md)."""
