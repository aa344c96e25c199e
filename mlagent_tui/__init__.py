"""mlagent: an ML-engineering agent you watch and steer, in the terminal (core, tui, cli)."""
