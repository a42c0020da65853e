"""azt's client core (internal: import from the public modules)."""
