"""``python -m cohort export RUN --format csv|jsonl|parquet``: see cohort/api_export.py."""
import sys

from .api_export import main

if __name__ == "__main__":
    sys.exit(main())
