//! Event streams (Server-Sent Events) through the real `sluice serve`, on
//! SQLite and PostgreSQL: a client that hangs up at random points and
//! comes back with `Last-Event-ID`, across a server killed and started
//! again, receives every event exactly once and in order.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{Value, json};
use sluice_tests::server::{DataDir, Options, Received, Server};

const WITHIN: Duration = Duration::from_secs(90);

/// A tiny deterministic generator: where each connection hangs up.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, sides: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % sides
    }
}

async fn read_some(
    server: &Server,
    path: &str,
    last: Option<&str>,
    take: usize,
    idle: Duration,
) -> (u16, Vec<Received>) {
    server.read_stream(path, last, take, idle).await
}

fn feed_order(id: &str) -> (i64, i64) {
    let (tx, position) = id.split_once('.').unwrap_or_else(|| panic!("a feed id: {id}"));
    (tx.parse().unwrap(), position.parse().unwrap())
}

/// Follows `path` with random hang-ups until `enough` holds for what came.
async fn follow(
    server: &Server,
    path: &str,
    dice: &mut Dice,
    last: &mut Option<String>,
    received: &mut Vec<Received>,
    enough: impl Fn(&[Received]) -> bool,
) {
    let deadline = tokio::time::Instant::now() + WITHIN;
    while !enough(received) {
        assert!(tokio::time::Instant::now() < deadline, "{path}: only {} events came", received.len());
        let take = 1 + dice.roll(5) as usize;
        let (status, got) = read_some(server, path, last.as_deref(), take, Duration::from_secs(2)).await;
        assert_eq!(status, 200, "{path}");
        if let Some(newest) = got.last() {
            *last = Some(newest.id.clone());
        }
        received.extend(got);
    }
}

#[tokio::test]
async fn a_client_that_hangs_up_and_resumes_across_a_restart_gets_every_event_once_in_order() {
    let postgres = sluice_store::testing::postgres().await;
    for database in [None, postgres.as_ref().map(|db| db.url.clone())] {
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
        eprintln!("{} with seed {seed}", if database.is_some() { "postgresql" } else { "sqlite" });
        let mut dice = Dice(seed);
        let dir = DataDir::new();
        let options = || Options::serve().database(database.as_deref());
        let first = Server::start_with(&dir.path(), options()).await;

        // Refusals before any stream opens.
        let bad = read_some(&first, "/v1/events/stream", Some("not-a-cursor"), 1, Duration::from_secs(1)).await;
        assert_eq!(bad.0, 400);
        let (status, _) = read_some(&first, "/v1/events/stream?since=1", None, 1, Duration::from_secs(1)).await;
        assert_eq!(status, 400);

        let mut ids = Vec::new();
        for _ in 0..4 {
            ids.push(first.create_sleeper().await);
        }
        let (mut feed, mut feed_last) = (Vec::new(), None);
        follow(&first, "/v1/events/stream", &mut dice, &mut feed_last, &mut feed, |r| r.len() >= 10).await;
        let own = format!("/v1/workspaces/{}/events/stream?ownerUserId=alice", ids[0]);
        let (mut mine, mut mine_last) = (Vec::new(), None);
        follow(&first, &own, &mut dice, &mut mine_last, &mut mine, |r| r.len() >= 2).await;
        let other = format!("/v1/workspaces/{}/events/stream?ownerUserId=bob", ids[0]);
        assert_eq!(read_some(&first, &other, None, 1, Duration::from_secs(1)).await.0, 404, "another owner's");
        let bad_seq = read_some(&first, &own, Some("x"), 1, Duration::from_secs(1)).await.0;
        assert_eq!(bad_seq, 400);

        // The server dies mid-way; another starts on the same state.
        first.kill();
        let second = Server::start_with(&dir.path(), options()).await;
        for _ in 0..4 {
            ids.push(second.create_sleeper().await);
        }
        for id in &ids {
            second.wait_for("alice", id, WITHIN, |w| w["status"] == "ready").await;
            let (status, body) =
                second.post(&format!("/v1/workspaces/{id}/stop"), &json!({"ownerUserId": "alice"})).await;
            assert_eq!(status, 202, "{body}");
        }
        for id in &ids {
            second.wait_for("alice", id, WITHIN, |w| w["status"] == "stopped").await;
        }
        let mut stored: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for id in &ids {
            stored.insert(id.clone(), second.stored_events(id).await);
        }
        let total: usize = stored.values().map(Vec::len).sum();
        // The feed also carries sluice's own events: count the contract's.
        let contract = |r: &[Received]| r.iter().filter(|e| !e.event.starts_with("sluice.")).count();
        follow(&second, "/v1/events/stream", &mut dice, &mut feed_last, &mut feed, |r| contract(r) >= total).await;
        // Nothing more is sent: no repeat after the last.
        let (_, more) = read_some(&second, "/v1/events/stream", feed_last.as_deref(), 1, Duration::from_secs(2)).await;
        assert!(more.is_empty(), "nothing after the last event: {more:?}");

        let unique: BTreeSet<&str> = feed.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(unique.len(), feed.len(), "no event twice");
        assert!(feed.windows(2).all(|w| feed_order(&w[0].id) < feed_order(&w[1].id)), "in feed order");
        let mut per_workspace: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for r in &feed {
            assert_eq!(r.event, r.data["type"].as_str().unwrap());
            if r.event.starts_with("sluice.") {
                assert!(r.data.get("sequence").is_none(), "sluice's own events take no sequence number: {:?}", r.data);
                continue;
            }
            per_workspace.entry(r.data["workspaceId"].as_str().unwrap().to_owned()).or_default().push(r.data.clone());
        }
        assert_eq!(per_workspace, stored, "every workspace's events, each once and in its order");

        let own = format!("/v1/workspaces/{}/events/stream?ownerUserId=alice", ids[0]);
        let n = stored[&ids[0]].len();
        follow(&second, &own, &mut dice, &mut mine_last, &mut mine, |r| r.len() >= n).await;
        let seqs: Vec<String> = mine.iter().map(|r| r.id.clone()).collect();
        let expected: Vec<String> = (1..=n).map(|s| s.to_string()).collect();
        assert_eq!(seqs, expected, "the workspace's stream: its sequence numbers, once each");
        assert_eq!(mine.iter().map(|r| r.data.clone()).collect::<Vec<_>>(), stored[&ids[0]]);
        let (_, since) = read_some(&second, &format!("{own}&since={}", n - 1), None, 5, Duration::from_secs(2)).await;
        assert_eq!(since.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), vec![n.to_string().as_str()]);
    }
}
