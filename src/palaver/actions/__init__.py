"""The rules, one module per resource: check access, validate, write, publish after commit."""
