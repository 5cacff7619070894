"""glmdesk's ui models room (see docs/ARCHITECTURE.md)."""
