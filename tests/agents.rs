//! Integration tests: agents.
