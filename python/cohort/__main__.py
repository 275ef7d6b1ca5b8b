"""``python -m cohort export RUN --format csv|jsonl|parquet``: see cohort/api_export.py.
``python -m cohort --version`` prints ``cohort <version>`` (the project version of CMakeLists.txt,
compiled into the extension: ``cohort.__version__``)."""
import sys

from .api_export import main

if __name__ == "__main__":
    sys.exit(main())
