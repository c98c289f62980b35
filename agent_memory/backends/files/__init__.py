"""backends/files."""
