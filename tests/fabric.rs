//! Integration tests: fabric.
