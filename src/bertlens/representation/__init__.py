"""Pure functions and small modules that turn token states into one vector per text."""
