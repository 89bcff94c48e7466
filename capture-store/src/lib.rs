//! Where captures are kept. Executors ship their worktrees' objects through
//! the registrar (one unix socket per run); objects are content-addressed,
//! written in packs and read back verified; collection removes what no kept
//! capture needs. The API reads captures back through [`reader`].

pub mod branch;
pub mod collection;
pub mod objects;
pub mod packs;
pub mod reader;
pub mod registrar;
pub mod verified;
