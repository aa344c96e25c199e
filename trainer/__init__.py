"""`mlagent-train`: reinforcement learning of the local model from the logged sessions."""
