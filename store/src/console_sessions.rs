//! Operator console sessions: one row per sign-in, so a sign-out ends the
//! session on the server and a cookie replayed after it is refused like
//! none. The cookie itself is signed (see the API's console); this only
//! says whether the session it names still holds.

use crate::Store;
use crate::clock::now_ms;
use crate::db::args;
use crate::error::StoreError;
use sluice_domain::ids::ConsoleSessionId;

impl Store {
    /// Records a sign-in whose cookie names `id`, good until `expires_at`.
    pub async fn begin_console_session(&self, id: &ConsoleSessionId, expires_at: i64) -> Result<(), StoreError> {
        let now = now_ms();
        // Sessions past their time are of no use to anyone: forgotten here.
        self.pool.execute("DELETE FROM console_sessions WHERE expires_at < $1", args![now]).await?;
        self.pool
            .execute(
                "INSERT INTO console_sessions (id, created_at, expires_at) VALUES ($1, $2, $3)",
                args![id, now, expires_at],
            )
            .await?;
        Ok(())
    }

    /// Whether the session `id` was begun, is not ended and not past its time.
    pub async fn console_session_holds(&self, id: &ConsoleSessionId) -> Result<bool, StoreError> {
        let row = self
            .pool
            .fetch_optional(
                "SELECT id FROM console_sessions WHERE id = $1 AND ended_at IS NULL AND expires_at > $2",
                args![id, now_ms()],
            )
            .await?;
        Ok(row.is_some())
    }

    /// Ends one session (a sign-out).
    pub async fn end_console_session(&self, id: &ConsoleSessionId) -> Result<(), StoreError> {
        self.pool
            .execute(
                "UPDATE console_sessions SET ended_at = $2 WHERE id = $1 AND ended_at IS NULL",
                args![id, now_ms()],
            )
            .await?;
        Ok(())
    }

    /// Ends every session still holding; answers how many.
    pub async fn end_all_console_sessions(&self) -> Result<u64, StoreError> {
        let now = now_ms();
        self.pool
            .execute("UPDATE console_sessions SET ended_at = $1 WHERE ended_at IS NULL AND expires_at > $1", args![now])
            .await
    }
}
