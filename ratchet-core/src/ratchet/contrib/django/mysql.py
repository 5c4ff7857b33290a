"""Django's MySQL backend on PyMySQL, the driver the MySQL store joins transactions on.

Django's MySQL backend imports ``MySQLdb`` (mysqlclient), whose connections the store
cannot write through. ``pymysql.install_as_MySQLdb()`` alone makes Django import
PyMySQL's files a second time as ``MySQLdb.err``, ``MySQLdb.converters``, …, and the
second ``err`` module replaces ``pymysql.err``: its exception classes are new ones, so
code catching ``pymysql.err.ProgrammingError`` (the store's) no longer catches what
PyMySQL raises. :func:`install_pymysql` aliases every loaded PyMySQL module instead.
"""

from __future__ import annotations

import sys

__all__ = ["install_pymysql"]


def install_pymysql() -> None:
    """Make ``import MySQLdb`` (and its submodules) PyMySQL's own modules. Call it before
    Django loads its MySQL backend: at the top of ``settings.py``."""
    import pymysql

    pymysql.install_as_MySQLdb()
    for name, module in list(sys.modules.items()):
        if name.startswith("pymysql."):
            sys.modules.setdefault("MySQLdb" + name.removeprefix("pymysql"), module)
