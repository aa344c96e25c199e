"""Everything that is not screen: tasks, workspace, sandbox, models, agents, sessions, store."""
