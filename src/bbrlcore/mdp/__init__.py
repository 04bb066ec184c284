"""Markov decision processes: models and their measures (hardness, values)."""
