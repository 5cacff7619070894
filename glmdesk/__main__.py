"""Allow ``python -m glmdesk``."""

from glmdesk.cli import main

raise SystemExit(main())
