"""The Qt-free client core the window and ``arbor run`` share: which agent runs and its process
(``agentproc``, ``process``), the link to one agent process at a time (``link``), the connection —
callbacks, optional capabilities, handshake, typed requests (``agentconn``), session requests
(``sessions``), extension notifications (``notifications``) —, one session's update stream folded into
typed events (``fold`` makes ``events``), and the one foreign-agent session (``foreign``). Nothing here
imports Qt or, at import, the ACP SDK's schema."""
