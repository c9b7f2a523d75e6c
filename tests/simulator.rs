//! Integration tests: simulator.
