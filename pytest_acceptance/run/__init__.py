"""Running bash criteria: the command under containment, its pass condition, the run's guard."""
