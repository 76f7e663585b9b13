"""``arbor eval``: which architecture is worth its cost with the user's model, measured on real tasks.

``tasks`` loads the task set (``resources/eval/``) and builds a task's workspace; ``runner`` runs each
task × mode through the same ACP backend path as a session, applies the change set in the scratch copy and
runs the task's check; ``report`` summarises (solve rate with a Wilson interval, tokens, time, cost per
solved task) and draws the chart. The report format is :mod:`ide.protocol.eval`.
"""
