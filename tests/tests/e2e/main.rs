//! The end-to-end tests: real binaries, real databases (SQLite and
//! PostgreSQL), real runtimes and real clients, one module per area, in one
//! test binary (a link of the workspace each, were they apart).

mod api;
mod boundary;
mod broker;
mod capture;
mod cli;
mod collection;
mod console;
mod credentials;
mod deletion;
mod drain;
mod drain_crash;
mod egress;
mod exec;
mod files;
mod final_flush;
mod fleet;
mod fork;
mod gateway;
mod hosts;
mod http_limits;
mod images;
mod jobs;
mod layout;
mod lifecycle;
mod mcp;
mod metrics;
mod previews;
mod processes;
mod serve;
mod settings;
mod sleep;
mod store_faults;
mod streams;
mod templates;
mod traces;
mod waiting;
mod warm_pool;
mod watch;
mod webhooks;
mod workers;
