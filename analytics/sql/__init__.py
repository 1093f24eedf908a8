"""SQL files (the warehouse schema and the canned queries), shipped as package data."""
