"""Examples of extending arenax (importable as ``examples.<name>`` from the repository root)."""
