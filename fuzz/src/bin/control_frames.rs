//! Fuzz target `control_frames`: see [`ocslab_fuzz::control_frames`].

fn main() {
    afl::fuzz!(|data: &[u8]| ocslab_fuzz::control_frames(data));
}
