pub mod capture_sessions;
pub mod events;
pub mod fleet;
pub mod jobs;
pub mod metrics;
pub mod previews;
pub mod ssh_keys;
pub mod workspaces;
