"""Integrations of Cohort with training frameworks (docs/integrations.md).

Each lives in its own module and imports its framework only when that module is imported, so
``import cohort`` never pulls in transformers, Lightning or accelerate:

- :mod:`cohort.integrations.transformers`: ``CohortCallback`` for the Hugging Face ``Trainer``
  (``Trainer(..., callbacks=[CohortCallback()])``).
- :mod:`cohort.integrations.lightning`: ``CohortLogger`` for PyTorch Lightning
  (``Trainer(logger=CohortLogger(project=...))``).
- :mod:`cohort.integrations.accelerate`: ``CohortTracker`` for Hugging Face Accelerate
  (``Accelerator(log_with=[CohortTracker(project=...)])``).

Every one logs from the main process (rank 0) by default, like the vendor's integrations, and
from every rank into one shared run (each rank a writer labelled ``rank_<rank>``) with
``mode="shared"``.
"""

__all__ = ["accelerate", "lightning", "transformers"]
