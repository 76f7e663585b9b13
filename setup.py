"""The package list of arbor-ide, which pyproject.toml cannot write with ``find`` alone.

Every ``ide*`` package found under ``ide/``, plus ``ide.workflows.builtin``: the shipped workflow YAML in the
top-level ``workflows/`` folder, mapped to that package in ``[tool.setuptools.package-dir]`` so wheels and
editable installs both carry it as package data.
"""

from setuptools import find_namespace_packages, setup

setup(packages=[*find_namespace_packages(include=["ide*"]), "ide.workflows.builtin"])
