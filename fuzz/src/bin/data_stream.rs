//! Fuzz target `data_stream`: see [`ocslab_fuzz::data_stream`].

fn main() {
    afl::fuzz!(|data: &[u8]| ocslab_fuzz::data_stream(data));
}
