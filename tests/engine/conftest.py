"""Engine fixtures: the bare transformers model of the session's embedded model
(``embedded`` and ``embedded_folder`` are in ``tests/conftest.py``)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def embedded_model(embedded):
    """The bare transformers model of :func:`embedded`."""
    return embedded.model
