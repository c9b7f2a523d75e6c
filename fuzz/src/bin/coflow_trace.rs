//! Fuzz target `coflow_trace`: see [`ocslab_fuzz::coflow_trace`].

fn main() {
    afl::fuzz!(|data: &[u8]| ocslab_fuzz::coflow_trace(data));
}
