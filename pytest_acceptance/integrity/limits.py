"""How much a pin reads: at most ``MAX_FILES`` files, and ``MAX_FILE_BYTES`` of each (a file
over it is pinned by hash alone). Read as ``limits.MAX_FILES`` at call time, so one setting
holds for every module."""

MAX_FILES = 5000
MAX_FILE_BYTES = 2 * 1024 * 1024
