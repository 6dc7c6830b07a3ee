"""Mutation fuzzing of a live ``pyzenoh router`` (inputs in :mod:`tests.fuzz.mutate`)."""
