"""The Qt-free client core the window and ``arbor run`` share: for now one session's update stream folded
into typed events (``fold.SessionFold`` makes ``events``). Nothing here imports Qt or, at import, the ACP
SDK's schema."""
