//! ESPLASH tests.
