"""Problem file readers and writers."""
