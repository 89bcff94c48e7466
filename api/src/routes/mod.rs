pub mod capture_sessions;
pub mod workspaces;
