"""What the gate trusts: one pin per module, all of them listed in :mod:`.table`.

Each pin is taken once, when /implement starts, into a record of its own in the flow's
folder (``pins/<name>.json``), read back only in its exact shape. Before the gate's run and
after it the table is walked: each pin says what changed since /implement, and which paths
the run must see read-only. A pin that is absent, damaged or could not be taken refuses,
never skips (:class:`.base.PinError`).
"""
