"""The PostgreSQL suites: a package (as tests/compat is), so that its conftest.py is
postgres.conftest and `from conftest import ...` still finds the top-level tests/conftest.py."""
