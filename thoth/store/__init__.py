"""LanceDB storage: the only package that knows table names, columns and LanceDB calls."""

from thoth.store import filters, schema
from thoth.store.db import IndexMissing, ModelMismatch, Store, StoreError

__all__ = ["Store", "StoreError", "IndexMissing", "ModelMismatch", "filters", "schema"]
