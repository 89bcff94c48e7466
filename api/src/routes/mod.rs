pub mod capture_sessions;
pub mod fleet;
pub mod jobs;
pub mod workspaces;
