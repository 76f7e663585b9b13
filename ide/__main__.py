"""``python -m ide`` is the ``arbor`` command."""

from ide.cli import main

raise SystemExit(main())
