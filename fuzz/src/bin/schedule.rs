//! Fuzz target `schedule`: see [`ocslab_fuzz::schedule`].

fn main() {
    afl::fuzz!(|data: &[u8]| ocslab_fuzz::schedule(data));
}
