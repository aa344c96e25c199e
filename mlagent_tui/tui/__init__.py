"""The Textual TUI (reads core, never the reverse); built in the TUI issue."""
