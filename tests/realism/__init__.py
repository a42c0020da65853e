"""End-to-end tests of the azt client against the stub under faults, throttling and ranges."""
