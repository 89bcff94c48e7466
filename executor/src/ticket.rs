//! Gateway tickets: what lets an SSH gateway connect to an executor's
//! worker. The API issues one with each SSH target it answers (after it has
//! checked the gateway's token and the principal's right to the
//! workspace); the worker of the executor's host accepts it for that run
//! until it expires. Tickets are keyed hashes under the install's seal key,
//! so any sluice process can check one and nothing else can make one.

use serde::{Deserialize, Serialize};

/// How long a ticket is good for: a gateway asks for its target, then
/// connects.
pub const TICKET_TTL_MS: i64 = 5 * 60 * 1000;

const PREFIX: &str = "slgt1";

/// Where a worker answers gateways, before the run's id.
pub const GATEWAY_PATH: &str = "/gateway/v1/executors/";

/// What a ticket grants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ticket {
    /// The run whose executor it reaches.
    pub run: String,
    /// The principal the API authorized.
    pub principal: String,
    /// Unix milliseconds.
    pub expires_at: i64,
}

/// Why a ticket was not accepted (the same answer to the caller whatever
/// the reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TicketRefused {
    #[error("not a gateway ticket")]
    Malformed,
    #[error("the ticket's signature does not hold")]
    Forged,
    #[error("the ticket has expired")]
    Expired,
    #[error("the ticket is for another executor")]
    OtherRun,
}

/// The install's keyed digest that signs tickets (the store's sealer's):
/// whoever holds the seal key can issue and check them, no one else.
pub type KeyedDigest<'a> = &'a dyn Fn(&[u8]) -> String;

fn mac(key: KeyedDigest<'_>, payload: &str) -> String {
    key(format!("gateway-ticket/{payload}").as_bytes())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

/// Constant-time comparison: a forger learns nothing from the timing.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Ticket {
    /// The ticket as the gateway carries it.
    pub fn issue(&self, key: KeyedDigest<'_>) -> String {
        let payload = hex(serde_json::to_string(self).expect("a ticket serializes").as_bytes());
        format!("{PREFIX}.{payload}.{}", mac(key, &payload))
    }

    /// Checks `text` for `run` at `now`.
    pub fn check(key: KeyedDigest<'_>, text: &str, run: &str, now: i64) -> Result<Ticket, TicketRefused> {
        let mut parts = text.split('.');
        let (Some(PREFIX), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TicketRefused::Malformed);
        };
        if payload.len() > 4096 {
            return Err(TicketRefused::Malformed);
        }
        if !same(&mac(key, payload), signature) {
            return Err(TicketRefused::Forged);
        }
        let json = unhex(payload).ok_or(TicketRefused::Malformed)?;
        let ticket: Ticket = serde_json::from_slice(&json).map_err(|_| TicketRefused::Malformed)?;
        if ticket.expires_at < now {
            return Err(TicketRefused::Expired);
        }
        if ticket.run != run {
            return Err(TicketRefused::OtherRun);
        }
        Ok(ticket)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A keyed digest for the test: the key mixed into every byte.
    fn keyed(key: u8) -> impl Fn(&[u8]) -> String {
        move |bytes: &[u8]| hex(&bytes.iter().map(|b| b.wrapping_mul(31) ^ key).collect::<Vec<u8>>())
    }

    #[test]
    fn a_ticket_holds_for_its_run_until_it_expires_and_only_under_its_key() {
        let sealer = keyed(3);
        let sealer = &sealer;
        let ticket = Ticket { run: "run_1".into(), principal: "alice".into(), expires_at: 1_000 };
        let text = ticket.issue(sealer);
        assert_eq!(Ticket::check(sealer, &text, "run_1", 999), Ok(ticket.clone()));
        assert_eq!(Ticket::check(sealer, &text, "run_1", 1_001), Err(TicketRefused::Expired));
        assert_eq!(Ticket::check(sealer, &text, "run_2", 999), Err(TicketRefused::OtherRun));
        let other_key = keyed(4);
        let other_key = &other_key;
        assert_eq!(Ticket::check(other_key, &text, "run_1", 999), Err(TicketRefused::Forged));
        // A payload changed under its signature (another run, a later expiry).
        let (head, signature) = text.rsplit_once('.').unwrap();
        let longer = Ticket { expires_at: 9_999_999, ..ticket.clone() }.issue(other_key);
        let (forged_head, _) = longer.rsplit_once('.').unwrap();
        assert_eq!(
            Ticket::check(sealer, &format!("{forged_head}.{signature}"), "run_1", 999),
            Err(TicketRefused::Forged)
        );
        assert_eq!(Ticket::check(sealer, head, "run_1", 999), Err(TicketRefused::Malformed));
        for junk in ["", "slgt1", "slgt1..", "bearer", "slgt1.zz.00", &format!("{text}.x")] {
            assert!(Ticket::check(sealer, junk, "run_1", 999).is_err(), "{junk:?}");
        }
    }
}
