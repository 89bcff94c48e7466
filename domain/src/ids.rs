//! Identities, typed: a run's id cannot be passed where a workspace's is
//! meant, nor an owner where an idempotency key is. Each is made once where
//! it enters (an HTTP path or body, a broker request, a CLI argument, a row
//! read back from the store, or a fresh id this system mints) and carried
//! typed down to the SQL bind. On the wire and in the store each is the
//! plain string it always was; a wire type that carries one states its
//! schema as a string.
//!
//! The rules a caller-chosen identity must meet (an owner id, a launch id,
//! an idempotency key) are checked where the request is read, which then
//! makes the typed value; ids sluice mints are opaque and need no check: a
//! path naming an id that does not exist is simply not found.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;

macro_rules! identity {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                $name(value)
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                $name(value.to_owned())
            }
        }

        impl From<&String> for $name {
            fn from(value: &String) -> Self {
                $name(value.clone())
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }

        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<$name> for str {
            fn eq(&self, other: &$name) -> bool {
                self == other.0
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

    };
}

identity!(
    /// One build of a template (`bld_…`).
    BuildId
);
identity!(
    /// A workspace (`ws_…`).
    WorkspaceId
);
identity!(
    /// One run of a workspace: one executor's life, also called an attempt (`run_…`).
    RunId
);
identity!(
    /// One command run in a workspace through the API (`run_…`).
    ExecRunId
);
identity!(
    /// The user a workspace belongs to, as the backend names them.
    OwnerId
);
identity!(
    /// A capture session: the stream of captures of one worktree (`cs_…`).
    SessionId
);
identity!(
    /// An SSH session a gateway opened into a workspace (`ses_…`).
    SshSessionId
);
identity!(
    /// The caller's name for one executor launch; a launch asked for twice is made once.
    LaunchId
);
identity!(
    /// The key that makes a create idempotent for its owner.
    IdempotencyKey
);
identity!(
    /// A worker process in the fleet.
    WorkerId
);
identity!(
    /// A registered webhook (`wh_…`).
    WebhookId
);
identity!(
    /// A preview grant: a port of a workspace opened over HTTP (`pv_…`).
    PreviewId
);
identity!(
    /// A recorded event (`evt_…`).
    EventId
);
identity!(
    /// An operator's signed-in console session: what its cookie names.
    ConsoleSessionId
);
identity!(
    /// A snapshot taken through the broker protocol.
    SnapshotId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_its_string_on_the_wire() {
        let id = WorkspaceId::from("ws_1");
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"ws_1\"");
        let back: WorkspaceId = serde_json::from_str("\"ws_1\"").unwrap();
        assert_eq!(back, id);
        assert_eq!(format!("{id} {id:?}"), "ws_1 \"ws_1\"");
        assert_eq!(id, "ws_1");
    }
}
