"""The event bus: handlers publish, the realtime hub delivers."""
