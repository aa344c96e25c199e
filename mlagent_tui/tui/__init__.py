"""The Textual app: one SessionView fed by events, live and in replay; it reads core only."""

from .app import KeymapError, MlagentApp, load_keymap, run_app

__all__ = ["KeymapError", "MlagentApp", "load_keymap", "run_app"]
