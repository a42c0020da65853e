"""azt's EDM values (internal: import from the public modules)."""
