"""azt's ORM (internal: import from the public modules)."""
