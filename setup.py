"""The package list for setuptools, found rather than written out (everything else is in
pyproject.toml): every ``glmdesk`` package, so a new backend or room is packaged as it
is added, plus ``glmdesk._resources``, which is ``resources/`` at the repository root
(``package-dir`` in pyproject.toml) and which automatic discovery cannot place."""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["glmdesk", "glmdesk.*"]), "glmdesk._resources"])
