"""Screens of the app: home, the session screen (live and replay), help, and small modals."""

from .help import HelpScreen, help_title, key_rows, palette_commands
from .home import HomeScreen
from .modals import Confirm, PlanEditor, TextPrompt
from .new_session import NewSessionScreen
from .session import SessionScreen

__all__ = [
    "Confirm",
    "HelpScreen",
    "HomeScreen",
    "NewSessionScreen",
    "PlanEditor",
    "SessionScreen",
    "TextPrompt",
    "help_title",
    "key_rows",
    "palette_commands",
]
