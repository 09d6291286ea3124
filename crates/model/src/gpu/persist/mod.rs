//! The persistent engine (issue 7): one cooperative kernel per session that takes jobs from
//! mapped host memory and returns PCM there, with no host launch per utterance or chunk.
//! [`layout`] is the shared memory's map, [`protocol`] the host's side of it, [`session`]
//! the kernel's resources and launch, [`backend`] the `Backend` with its fallbacks, and
//! [`choice`] which engine speaks by default.

pub mod backend;
pub mod choice;
pub mod layout;
pub mod protocol;
pub mod session;

pub use backend::PersistentBackend;
pub use choice::GpuEngine;
