"""The working tree as the gate sees it. Standard library only, Python 3.8: the hooks import it.

``hostile`` is the one audited way to touch a file an agent may have planted; ``fingerprint``
and ``hash_cache`` say whether the tree changed.
"""
