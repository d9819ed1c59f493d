"""`run`: every stage in order, each exactly as its own command runs it."""
