//! Fuzz target `topology`: see [`ocslab_fuzz::topology`].

fn main() {
    afl::fuzz!(|data: &[u8]| ocslab_fuzz::topology(data));
}
