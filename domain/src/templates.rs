//! Templates: images built from a Dockerfile, with the command a
//! workspace of one starts and the command that says it is ready. What a
//! build may become next, and what a template's name may be.

use crate::model::TemplateBuildState;

/// What happens to a build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildEvent {
    /// A worker that can build claimed it (again, after a worker died
    /// mid-build: the builder's own cache makes the second run short).
    Start,
    Succeed,
    Fail,
}

/// The state `event` moves a build in `state` to; `None`: it does not
/// apply (a finished build stays finished).
pub fn next(state: TemplateBuildState, event: BuildEvent) -> Option<TemplateBuildState> {
    use BuildEvent::*;
    use TemplateBuildState::*;
    match (state, event) {
        (Queued | Building, Start) => Some(Building),
        (Building, Succeed) => Some(Succeeded),
        (Queued | Building, Fail) => Some(Failed),
        (Queued, Succeed) | (Succeeded | Failed, _) => None,
    }
}

/// The registry id workspaces name a template's image under.
pub const REGISTRY_ID: &str = "templates";

/// The longest Dockerfile a template may have.
pub const MAX_DOCKERFILE_BYTES: usize = 256 * 1024;

/// A template's name: 1 to 64 of a-z, 0-9, '.', '_', '-', starting with a
/// letter or digit (it is the image's repository under `templates`).
pub fn name_ok(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().next().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use BuildEvent::*;
    use TemplateBuildState::*;

    #[test]
    fn build_transitions_as_a_table() {
        let table = [
            (Queued, Start, Some(Building)),
            (Queued, Succeed, None),
            (Queued, Fail, Some(Failed)),
            (Building, Start, Some(Building)),
            (Building, Succeed, Some(Succeeded)),
            (Building, Fail, Some(Failed)),
            (Succeeded, Start, None),
            (Succeeded, Succeed, None),
            (Succeeded, Fail, None),
            (Failed, Start, None),
            (Failed, Succeed, None),
            (Failed, Fail, None),
        ];
        for (state, event, expected) in table {
            assert_eq!(next(state, event), expected, "{state:?} + {event:?}");
        }
    }

    #[test]
    fn names() {
        for ok in ["py312", "node-22", "a", "web.app_1"] {
            assert!(name_ok(ok), "{ok}");
        }
        for bad in ["", "Py", "-x", ".x", "a/b", "a:b", &"x".repeat(65)] {
            assert!(!name_ok(bad), "{bad}");
        }
    }
}
