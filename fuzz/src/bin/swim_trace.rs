//! Fuzz target `swim_trace`: see [`ocslab_fuzz::swim_trace`].

fn main() {
    afl::fuzz!(|data: &[u8]| ocslab_fuzz::swim_trace(data));
}
