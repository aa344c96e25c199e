"""Screens of the app: the session screen (live and replay) and small modals."""
