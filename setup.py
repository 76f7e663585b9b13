"""The package list of arbor-ide, which pyproject.toml cannot write with ``find`` alone.

Every ``ide*`` package found under ``ide/``, plus two data packages mapped in
``[tool.setuptools.package-dir]`` so wheels and editable installs both carry them: ``ide.workflows.builtin``
(the shipped workflow YAML in the top-level ``workflows/`` folder) and ``ide.eval.tasks_data``
(``resources/eval/``, the task set of ``arbor eval``).
"""

from setuptools import find_namespace_packages, setup

setup(packages=[*find_namespace_packages(include=["ide*"]), "ide.workflows.builtin", "ide.eval.tasks_data"])
