"""Thin HTTP routers: parse the request, call actions, shape the response."""
