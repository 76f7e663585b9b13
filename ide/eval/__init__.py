"""``arbor eval``: which architecture is worth its cost with the user's model, measured on real tasks.

``tasks`` loads the task set (``resources/eval/``) and builds a task's workspace; ``execute`` makes one run
of a task × mode × attempt (``session``: through the same ACP backend path as a session, the change set
applied in the scratch copy, the task's check run; ``agents``: another agent's turn) and returns its record
and files; ``runner`` is the driver that keeps the report and makes the runs here or, with ``--ray``, on a
Ray cluster (``distributed``); ``report`` summarises (solve rate with a Wilson interval, tokens, time, cost
per solved task) and draws the chart. The report format is :mod:`ide.protocol.eval`.
"""
