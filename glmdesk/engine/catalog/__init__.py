"""The GLM catalog, fit marks and pulls from the hub (no Qt): :mod:`.catalog` reads the
shipped data, :mod:`.fit` marks each download for this machine from the forecast,
:mod:`.hub_files` and :mod:`.pull` download with resume and hash checks, :mod:`.pulled`
finds what was pulled. See docs/catalog.md."""
