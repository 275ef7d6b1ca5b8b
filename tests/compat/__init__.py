"""W&B wire-compatibility suites (docs/compat.md)."""
