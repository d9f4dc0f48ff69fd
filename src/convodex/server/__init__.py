"""The conversation server (SPEC S): journal, projection and literal search."""

from convodex.server.accounts import Caller, NewAccount, add_account, authenticate, get_caller
from convodex.server.connect import default_url, open_database
from convodex.server.db import Database, DatabaseUnavailable
from convodex.server.journal import (
    Entry,
    Session,
    append,
    begin_fork,
    clear,
    complete_fork,
    copy_fork_batch,
    create_session,
    discard,
    fork,
    get_session,
    list_entries,
    rekey,
    remove,
    restore,
    rewrite,
)
from convodex.server.search import search_messages

__all__ = [
    "Caller",
    "Database",
    "DatabaseUnavailable",
    "Entry",
    "NewAccount",
    "Session",
    "add_account",
    "append",
    "authenticate",
    "begin_fork",
    "clear",
    "complete_fork",
    "copy_fork_batch",
    "create_session",
    "default_url",
    "discard",
    "fork",
    "get_caller",
    "get_session",
    "list_entries",
    "open_database",
    "rekey",
    "remove",
    "restore",
    "rewrite",
    "search_messages",
]
