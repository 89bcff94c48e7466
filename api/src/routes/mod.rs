pub mod capture_sessions;
pub mod jobs;
pub mod workspaces;
