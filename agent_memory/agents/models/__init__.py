"""Model adapters used by agent_memory."""
