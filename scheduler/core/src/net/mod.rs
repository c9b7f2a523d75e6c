//! The network model the coflow policies read: the fabric's parameters
//! ([`fabric`]), the links of the fluid model
//! and the paths over them ([`links`]), the max-min water-filling reference
//! solver ([`maxmin`]) and hash maps for lookups by small integer keys
//! ([`fasthash`]). The fluid network that moves flows over these links is a
//! driver (`ocslab_scheduler::net`).

pub mod fabric;
pub mod fasthash;
pub mod links;
pub mod maxmin;
