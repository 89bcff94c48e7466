pub mod workspaces;
