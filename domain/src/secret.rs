//! A value that must never be printed: its `Debug` shows `[redacted]`, and
//! every read of it is an `expose` a reader can find.

use std::fmt;

/// A value that must never be printed: `Debug` shows `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    pub fn new(value: T) -> Self {
        Secret(value)
    }
    /// The secret itself; every call site is a place the value can leak from.
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}
