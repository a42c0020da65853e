"""azt's unit of work (internal: import from the public modules)."""
