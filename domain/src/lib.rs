//! sluice's model and policy, pure: what a workspace, a run, a drain and a
//! job are (statuses as enums stored by name, the typed spec), and every
//! decision made from them: which single action a reconcile pass takes
//! next and why, what a drain observation means, whether an orphaned
//! resource may go, what becomes of a job that failed. No I/O and no clock
//! but the `now` each decision is given; the store persists what these
//! decide, and the worker carries it out.

pub mod broker;
pub mod create_key;
pub mod drain;
pub mod egress;
pub mod event_data;
pub mod exec_run;
pub mod feed;
pub mod fleet;
pub mod guard;
pub mod ids;
pub mod jobs;
pub mod lifecycle;
#[macro_use]
pub mod model;
pub mod packing;
pub mod preview;
pub mod reconcile;
pub mod retention;
pub mod risk;
pub mod secret;
pub mod sleep;
pub mod spec;
pub mod templates;
#[doc(hidden)]
pub mod testing;
pub mod transition;
pub mod webhooks;
