"""Other protocols at the edge, each an adapter onto toolsets and the same store."""
