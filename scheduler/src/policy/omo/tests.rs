//! OMO tests.
