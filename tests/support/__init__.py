"""Helpers the tests share: git repositories, spec factories, processes, judges, the real CLI."""
