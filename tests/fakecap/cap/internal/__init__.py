"""The fake capability runtime's internals: see ``cap.internal.mcp``."""
