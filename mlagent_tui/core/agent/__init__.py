"""The agents, their actions, prompts, response parsing and memory."""
