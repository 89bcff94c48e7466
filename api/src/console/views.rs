//! The console's pages. Every value is escaped by the templates; a page
//! that follows the feed marks its `main` live, and the script reads the
//! page again when the feed moves.

use maud::{DOCTYPE, Markup, html};
use sluice_domain::ids::{OwnerId, WorkspaceId};
use sluice_domain::sleep::sleeping;
use sluice_store::capture::CaptureRecord;
use sluice_store::fleet::{HostRecord, WorkerRecord};
use sluice_store::model::{FeedItem, Workspace, WorkspaceStatus};
use sluice_store::{Drain, ReconcileState, RetainedExecutor};

/// Bytes for people: `1.5 MiB`.
fn bytes(n: i64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n.max(0) as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < units.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{n} B") } else { format!("{value:.1} {}", units[unit]) }
}

/// A time relative to now: `3 min ago`, `in 20 s`.
fn ago(at: i64, now: i64) -> String {
    let seconds = (now - at) / 1000;
    let (amount, future) = (seconds.abs(), seconds < 0);
    let text = match amount {
        0..60 => format!("{amount} s"),
        60..3600 => format!("{} min", amount / 60),
        3600..86400 => format!("{} h", amount / 3600),
        _ => format!("{} d", amount / 86400),
    };
    if future { format!("in {text}") } else { format!("{text} ago") }
}

fn when(at: i64, now: i64) -> Markup {
    let exact = sluice_store::clock::rfc3339(at);
    html! { time datetime=(exact) title=(exact) { (ago(at, now)) } }
}

/// A drain as operators read it: `saving · 3 left · 1.2 MiB pending`.
pub(crate) fn drain_line(drain: &Drain) -> String {
    let state = match drain.state {
        Some(sluice_store::model::DrainState::Draining) | None => "saving".to_owned(),
        Some(state) => state.as_str().to_owned(),
    };
    let mut line = state;
    if let Some(left) = drain.progress.pending {
        line.push_str(&format!(" · {left} left"));
    }
    if let Some(pending) = drain.progress.pending_bytes {
        line.push_str(&format!(" · {} pending", bytes(pending)));
    }
    line
}

fn layout(title: &str, csrf: Option<&str>, live: bool, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · sluice" }
                link rel="stylesheet" href="/console/assets/console.css";
                script src="/console/assets/console.js" defer {}
            }
            body {
                header {
                    a.brand href="/console" { "sluice" }
                    @if let Some(csrf) = csrf {
                        nav {
                            a href="/console" { "Overview" }
                            a href="/console/workspaces" { "Workspaces" }
                            a href="/console/workers" { "Workers" }
                            form method="post" action="/console/logout" {
                                input type="hidden" name="csrf" value=(csrf);
                                button.link type="submit" { "Sign out" }
                            }
                        }
                    }
                }
                main data-live[live] { h1 { (title) } (body) }
            }
        }
    }
}

pub(crate) fn message(title: &str, text: &str) -> Markup {
    layout(title, None, false, html! { p { (text) } p { a href="/console" { "Back to the console" } } })
}

pub(crate) fn login(csrf: &str, error: Option<&str>) -> Markup {
    layout(
        "Sign in",
        None,
        false,
        html! {
            @if let Some(error) = error { p.error role="alert" { (error) } }
            form.login method="post" action="/console/login" {
                input type="hidden" name="csrf" value=(csrf);
                label { "API token" input type="password" name="token" autocomplete="off" required autofocus; }
                button type="submit" { "Sign in" }
            }
            p.note { "The console keeps a session cookie for eight hours, never the token." }
        },
    )
}

/// A POST button to a console action.
fn action(csrf: &str, to: &str, label: &str, back: &str) -> Markup {
    html! {
        form.inline method="post" action=(to) {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="back" value=(back);
            button type="submit" { (label) }
        }
    }
}

fn workspace_link(id: &WorkspaceId) -> Markup {
    html! { a href={ "/console/workspaces/" (id) } { code { (id) } } }
}

pub(crate) fn overview(
    csrf: &str,
    retained: &[RetainedExecutor],
    drains: &[RetainedExecutor],
    workers: &[WorkerRecord],
    now: i64,
) -> Markup {
    let healthy = workers.iter().filter(|w| w.health == sluice_domain::fleet::WorkerHealth::Healthy).count();
    layout(
        "Overview",
        Some(csrf),
        true,
        html! {
            section #retained {
                h2 { "Retained executors (" (retained.len()) ")" }
                @if retained.is_empty() {
                    p.empty { "No executor is retained: all work that was stopped is saved." }
                } @else {
                    table {
                        thead { tr { th { "Workspace" } th { "Owner" } th { "Why" } th { "Since" } th { "Attempts" } th { "Next attempt" } th {} } }
                        tbody {
                            @for r in retained {
                                @let retention = r.drain.retention.as_ref();
                                tr data-workspace=(r.workspace_id) {
                                    td { (workspace_link(&r.workspace_id)) }
                                    td { (r.owner_user_id) }
                                    td.reason { (retention.map_or("not recorded", |t| t.reason.as_str())) }
                                    td { @if let Some(t) = retention { (when(t.since, now)) } }
                                    td { (retention.map_or(0, |t| t.attempts)) }
                                    td {
                                        @match retention.and_then(|t| t.next_recovery_at) {
                                            Some(at) => (when(at, now)),
                                            None => "on request",
                                        }
                                        @if let Some(error) = retention.and_then(|t| t.last_error.as_deref()) {
                                            br; small.error { "last: " (error) }
                                        }
                                    }
                                    td.actions {
                                        (action(csrf, &format!("/console/workspaces/{}/recover", r.workspace_id), "Recover", "/console"))
                                        a.button.danger href={ "/console/workspaces/" (r.workspace_id) "/discard" } { "Discard…" }
                                        a.button href={ "/console/workspaces/" (r.workspace_id) "#export" } { "Export" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            section #drains {
                h2 { "Drains in progress (" (drains.len()) ")" }
                @if drains.is_empty() {
                    p.empty { "No stop is waiting for work to be saved." }
                } @else {
                    table {
                        thead { tr { th { "Workspace" } th { "Owner" } th { "Progress" } th { "Stop asked" } } }
                        tbody {
                            @for d in drains {
                                tr data-workspace=(d.workspace_id) {
                                    td { (workspace_link(&d.workspace_id)) }
                                    td { (d.owner_user_id) }
                                    td.progress { (drain_line(&d.drain)) }
                                    td { @if let Some((_, at)) = &d.drain.stop_requested { (when(*at, now)) } }
                                }
                            }
                        }
                    }
                }
            }
            section #fleet {
                h2 { "Workers" }
                p { (healthy) " of " (workers.len()) " healthy · " a href="/console/workers" { "details" } }
            }
        },
    )
}

pub(crate) fn workspaces(
    csrf: &str,
    list: &[Workspace],
    status: Option<WorkspaceStatus>,
    owner: Option<&OwnerId>,
    now: i64,
) -> Markup {
    layout(
        "Workspaces",
        Some(csrf),
        true,
        html! {
            form.filters method="get" action="/console/workspaces" {
                label { "Status "
                    select name="status" {
                        option value="" selected[status.is_none()] { "any" }
                        @for s in WorkspaceStatus::ALL {
                            option value=(s.as_str()) selected[status == Some(*s)] { (s.as_str()) }
                        }
                    }
                }
                label { "Owner " input type="text" name="owner" value=(owner.map(OwnerId::as_str).unwrap_or_default()); }
                button type="submit" { "Filter" }
            }
            @if list.is_empty() {
                p.empty { "No workspace matches." }
            } @else {
                table {
                    thead { tr { th { "Workspace" } th { "Name" } th { "Owner" } th { "Status" } th { "Image" } th { "Changed" } } }
                    tbody {
                        @for w in list {
                            tr data-workspace=(w.id) {
                                td { (workspace_link(&w.id)) }
                                td { (w.name) }
                                td { (w.owner_user_id) }
                                td {
                                    span class={ "status " (w.status.as_str()) } { (w.status.as_str()) }
                                    @if sleeping(w).is_some() { " " span.asleep { "asleep" } }
                                }
                                td { code { (w.repository) ":" (w.tag) } }
                                td { (when(w.updated_at, now)) }
                            }
                        }
                    }
                }
            }
        },
    )
}

pub(crate) fn workspace(
    csrf: &str,
    state: &ReconcileState,
    timeline: &[FeedItem],
    captures: &[CaptureRecord],
    now: i64,
) -> Markup {
    let w = &state.workspace;
    let back = format!("/console/workspaces/{}", w.id);
    let session = w.spec.capture_session();
    layout(
        &format!("Workspace {}", w.name),
        Some(csrf),
        true,
        html! {
            dl.facts {
                dt { "Id" } dd { code { (w.id) } }
                dt { "Owner" } dd { (w.owner_user_id) }
                dt { "Status" } dd #status { span class={ "status " (w.status.as_str()) } { (w.status.as_str()) } }
                @if let Some(asleep) = sleeping(w) {
                    dt { "Asleep" } dd #sleeping { (asleep.reason.as_str()) " · since " (when(asleep.since, now)) }
                }
                dt { "Image" } dd { code { (w.repository) ":" (w.tag) } }
                @if let Some(run) = &state.current_run {
                    dt { "Current run" } dd { code { (run.id) } " · " (run.status.as_str()) @if let Some(host) = &run.host { " on " (host) } }
                }
                @if let Some(drain) = &state.drain {
                    dt { "Drain" } dd #drain { (drain_line(drain)) }
                    @if let Some(retention) = &drain.retention {
                        @if w.status == WorkspaceStatus::Retained {
                            dt { "Retained" } dd.reason { (retention.reason) " · " (when(retention.since, now)) " · " (retention.attempts) " attempts" }
                        }
                    }
                }
            }
            @if sleeping(w).is_some() {
                div.actions {
                    (action(csrf, &format!("/console/workspaces/{}/wake", w.id), "Wake", &back))
                }
            }
            @if w.status == WorkspaceStatus::Retained {
                div.actions {
                    (action(csrf, &format!("/console/workspaces/{}/recover", w.id), "Recover", &back))
                    a.button.danger href={ "/console/workspaces/" (w.id) "/discard" } { "Discard…" }
                }
                section #export {
                    h2 { "Export" }
                    p { "The executor's disk, with the work not yet saved, is archived on its host by:" }
                    pre { code { "sluice retained export " (w.id) " --owner " (w.owner_user_id) " --output disk.tar" } }
                    @if let Some(newest) = captures.last() {
                        @if let Some(session) = session {
                            p { "What was saved is its newest capture: "
                                a.button href={ "/console/captures/" (session) "/" (newest.n) "/archive" } { "Download capture " (newest.n) " (tar)" } }
                        }
                    }
                }
            }
            section #timeline {
                h2 { "Timeline" }
                ol.timeline {
                    @for item in timeline {
                        li class=@if matches!(item, FeedItem::Sluice(_)) { "sluice" } @else { "contract" } {
                            (when(item.occurred_at(), now)) " "
                            code.type { (item.type_name()) } " "
                            @match item {
                                FeedItem::Workspace(e) => { (e.message.as_deref().unwrap_or_default()) }
                                FeedItem::Sluice(e) => { (e.message.as_deref().unwrap_or_default()) }
                            }
                        }
                    }
                }
            }
            @if let Some(session) = session {
                section #captures {
                    h2 { "Captures of session " code { (session) } }
                    @if captures.is_empty() {
                        p.empty { "Nothing registered yet." }
                    } @else {
                        table {
                            thead { tr { th { "#" } th { "Registered" } th { "Size" } th { "Files" } th {} } }
                            tbody {
                                @for c in captures.iter().rev() {
                                    tr {
                                        td { (c.n) }
                                        td { (when(c.registered_at, now)) }
                                        td { (bytes(c.bytes as i64)) }
                                        td { @if let Some(counts) = &c.counts { (counts.files) } }
                                        td { a href={ "/console/captures/" (session) "/" (c.n) "/archive" } { "Download" } }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        },
    )
}

pub(crate) fn discard(csrf: &str, state: &ReconcileState) -> Markup {
    let w = &state.workspace;
    let drain = state.drain.as_ref();
    let pending = drain.and_then(|d| d.progress.pending);
    let pending_bytes = drain.and_then(|d| d.progress.pending_bytes);
    layout(
        "Discard unsaved work",
        Some(csrf),
        false,
        html! {
            p.warning {
                "Discarding stops " code { (w.id) } " (" (w.owner_user_id) ") and removes its executor without saving. "
                strong {
                    @match (pending, pending_bytes) {
                        (Some(n), Some(b)) => { "Lost for good: " (n) " captures not yet registered (" (bytes(b)) "), and every change made since the last one." }
                        (Some(n), None) => { "Lost for good: " (n) " captures not yet registered, and every change made since the last one." }
                        _ => { "Lost for good: every change not yet registered (its daemon's queue could not be read)." }
                    }
                }
            }
            @if let Some(retention) = drain.and_then(|d| d.retention.as_ref()) {
                p { "It is retained because: " span.reason { (retention.reason) } }
            }
            form method="post" action={ "/console/workspaces/" (w.id) "/discard" } {
                input type="hidden" name="csrf" value=(csrf);
                label { "Type the workspace's id to confirm " input type="text" name="confirm" autocomplete="off" required; }
                button.danger type="submit" { "Discard unsaved work" }
                " "
                a href="/console" { "Keep it" }
            }
        },
    )
}

pub(crate) fn workers(csrf: &str, workers: &[WorkerRecord], hosts: &[HostRecord], now: i64) -> Markup {
    layout(
        "Workers",
        Some(csrf),
        true,
        html! {
            table {
                thead { tr { th { "Worker" } th { "Host" } th { "Runtime" } th { "Health" } th { "Heartbeat" } th { "Version" } } }
                tbody {
                    @for w in workers {
                        tr {
                            td { code { (w.member.id) } }
                            td { (w.member.host) }
                            td { (w.member.runtime) }
                            td { (format!("{:?}", w.health).to_lowercase()) }
                            td { (when(w.heartbeat_at, now)) }
                            td { (w.member.version) }
                        }
                    }
                }
            }
            h2 { "Hosts" }
            table {
                thead { tr { th { "Host" } th { "State" } th { "Live workers" } th { "Executors" } th { "Cordoned" } } }
                tbody {
                    @for h in hosts {
                        tr {
                            td { (h.load.name) }
                            td { (h.load.state.as_str()) }
                            td { (h.load.live_workers) }
                            td { (h.load.load) @if let Some(cap) = h.load.capacity { " / " (cap) } }
                            td { @if let Some((by, at)) = &h.cordoned { "by " (by) ", " (when(*at, now)) } }
                        }
                    }
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_escaped() {
        let page = message("<b>", "<script>alert(1)</script> & \"x\"").into_string();
        assert!(!page.contains("<script>alert"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp;"), "{page}");
    }

    #[test]
    fn drains_read_as_operators_say_them() {
        let mut drain = Drain::new(&"run_1".into(), &"ws_1".into());
        drain.state = Some(sluice_store::model::DrainState::Draining);
        drain.progress.pending = Some(3);
        drain.progress.pending_bytes = Some(3 << 20);
        assert_eq!(drain_line(&drain), "saving · 3 left · 3.0 MiB pending");
        drain.state = Some(sluice_store::model::DrainState::Saved);
        drain.progress = Default::default();
        assert_eq!(drain_line(&drain), "saved");
    }

    #[test]
    fn times_and_sizes_read_plainly() {
        assert_eq!(ago(0, 5_000), "5 s ago");
        assert_eq!(ago(0, 7_200_000), "2 h ago");
        assert_eq!(ago(60_000, 0), "in 1 min");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
    }
}
