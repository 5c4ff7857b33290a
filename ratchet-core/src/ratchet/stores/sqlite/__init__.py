"""The embedded SQLite store (``sqlite:///path``) and its in-memory twin (``memory://``)."""
