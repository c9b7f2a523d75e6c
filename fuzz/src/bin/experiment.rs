//! Fuzz target `experiment`: see [`ocslab_fuzz::experiment`].

fn main() {
    afl::fuzz!(|data: &[u8]| ocslab_fuzz::experiment(data));
}
