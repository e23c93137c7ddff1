"""The working tree as the gate sees it. Standard library only, Python 3.8: the hooks import it.

``hostile`` is the one audited way to touch a file an agent may have planted; ``fingerprint``
and ``hash_cache`` say whether the tree changed; ``folders`` names the folders that are not
the project's own work, by role; ``shell`` is the one reader of the shell commands run in
the tree (words, wrappers, what runs, which test runner).
"""
