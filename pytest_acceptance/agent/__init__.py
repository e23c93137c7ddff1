"""Agent criteria: waves of judges, their backends, the prompt they get and the cache."""
