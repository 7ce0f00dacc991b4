"""The WebSocket channel: the `/ws` protocol and the hub that delivers events."""
