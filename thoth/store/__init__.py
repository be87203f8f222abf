"""LanceDB storage: the only package that knows table names, columns and LanceDB calls."""

from thoth.store import filters, schema
from thoth.store.db import Store
from thoth.store.tables import IndexMissing, ModelMismatch, StoreError

__all__ = ["Store", "StoreError", "IndexMissing", "ModelMismatch", "filters", "schema"]
