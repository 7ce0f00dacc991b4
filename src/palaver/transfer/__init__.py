"""A channel's export (JSON, Markdown, zip with its files) and imports (Palaver's own export
and Slack's workspace export): the formats, read and written as plain data, off the database."""
