"""Storage backends beyond the files backend (each an optional extra with its own dependencies)."""
