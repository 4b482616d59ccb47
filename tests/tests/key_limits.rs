//! Per-key concurrency (`keyConcurrency`) across real hosts: a key never
//! runs more than its limit, keys take turns, jobs added by Node's BullMQ
//! are governed the same way, a waiting job says why, BullMQ's active list
//! agrees with the limit once jobs ran, and slots are leases that hosts
//! killed mid-run give back.

use std::process::Command;

use airlock::state::key_limits::KeySlot;
use airlock_tests::api::Api;
use airlock_tests::eventually;
use airlock_tests::host::{Admin, HostOptions, HostProcess};
use airlock_tests::interop_script;
use serde_json::{Value, json};

/// A queue of spinning syncs, at most 2 per customer at once.
fn keyed(limit: u64) -> Value {
    json!({
        "metered": false,
        "concurrency": 10,
        "limits": {"timeoutMs": 60_000},
        "keyConcurrency": {"key": "$.customerId", "limit": limit},
    })
}

fn host(api: &Api, id: &str) -> HostProcess {
    HostProcess::start(
        &api.redis.url(),
        HostOptions {
            id: id.into(),
            ..HostOptions::default()
        },
    )
}

/// Adds `count` jobs with `data` through Node's `Queue.addBulk`.
fn node_enqueue(api: &Api, queue: &str, count: usize, data: Value) {
    let out = Command::new("node")
        .arg(interop_script("enqueue.js"))
        .args(["--redis", &api.redis.url(), "--prefix", "bull"])
        .args(["--queue", queue, "--count", &count.to_string()])
        .args(["--name", "sync", "--data", &data.to_string()])
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The most jobs of one key whose guests ran at the same instant (each
/// run's busy time, as the guest itself reports it).
fn most_at_once(jobs: &[Value]) -> usize {
    most_overlapping(jobs, |j| {
        (
            &j["returnvalue"]["heldFromMs"],
            &j["returnvalue"]["heldToMs"],
        )
    })
}

/// The most jobs of one key BullMQ held active at the same instant, by the
/// span its tools show: from a job's `processedOn` (the take that ran it,
/// moved on to when it got its slot) to its recorded end (`finishedOn`).
fn most_active_at_once(jobs: &[Value]) -> usize {
    most_overlapping(jobs, |j| (&j["processedOn"], &j["finishedOn"]))
}

/// The most of `jobs`' spans (start, end in ms) open at one instant.
fn most_overlapping(jobs: &[Value], span: impl Fn(&Value) -> (&Value, &Value)) -> usize {
    let mut edges: Vec<(u64, i32)> = Vec::new();
    for j in jobs {
        let (from, to) = span(j);
        edges.push((from.as_u64().unwrap(), 1));
        edges.push((to.as_u64().unwrap(), -1));
    }
    // An end and a start in the same millisecond do not overlap (ends,
    // -1, sort first).
    edges.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, step) in edges {
        now += step;
        most = most.max(now);
    }
    most as usize
}

async fn completed(api: &Api, queue: &str) -> Vec<Value> {
    let (_, page) = api
        .get(
            &format!("/v1/queues/{queue}/jobs?state=completed&limit=500"),
            airlock_tests::host::tokens::ADMIN,
        )
        .await;
    page["jobs"].as_array().unwrap().clone()
}

/// Enqueues one job each of three small customers behind a big one's
/// backlog of `big` jobs, waits for everything, and checks the turns: the
/// big customer ran exactly its limit of 2 at once, and every small one
/// started before the big one's fifth job. Answers the big customer's
/// completed jobs.
async fn small_keys_go_first(api: &Api, big: usize) -> Vec<Value> {
    let mut small = Vec::new();
    for c in ["s1", "s2", "s3"] {
        small.push(
            api.enqueue("imports", json!({"data": {"customerId": c, "holdMs": 20}}))
                .await,
        );
    }
    let mut small_started = Vec::new();
    for job in &small {
        let done = api.wait_done(job).await;
        assert_eq!(done["state"], "completed", "{done}");
        small_started.push(done["processedOn"].as_u64().unwrap());
    }
    eventually("the big backlog drained", || async {
        completed(api, "imports").await.len() == big + 3
    })
    .await;
    let big_jobs: Vec<Value> = completed(api, "imports")
        .await
        .into_iter()
        .filter(|j| j["data"]["customerId"] == "big")
        .collect();
    assert_eq!(big_jobs.len(), big);
    assert_eq!(most_at_once(&big_jobs), 2, "the limit held, and was used");
    // A slot goes back only once BullMQ has recorded its job's end, and
    // the job that takes it is processed from then on.
    assert!(
        most_active_at_once(&big_jobs) <= 2,
        "BullMQ's active spans of the big key overlapped beyond its limit"
    );
    let mut big_starts: Vec<u64> = big_jobs
        .iter()
        .map(|j| j["processedOn"].as_u64().unwrap())
        .collect();
    big_starts.sort();
    for started in small_started {
        assert!(
            started < big_starts[4],
            "a small key waited behind the backlog: {started} vs {big_starts:?}"
        );
    }
    big_jobs
}

#[tokio::test]
async fn keys_take_turns_within_their_limit_and_node_jobs_are_governed() {
    let api = Api::start();
    api.setup("imports", "catalog-sync", keyed(2)).await;
    let _b = host(&api, "host-b");

    // A backlog of one customer from Node's BullMQ.
    node_enqueue(
        &api,
        "imports",
        24,
        json!({"customerId": "big", "holdMs": 250}),
    );
    // A parked job of the big customer says why it waits.
    let waiting = api
        .wait_until("imports:20", "parked in its key's line", |j| {
            j["waiting"]["kind"] == "key_limit"
        })
        .await;
    let why = &waiting["waiting"];
    assert_eq!(why["key"], "big", "{why}");
    assert_eq!(why["limit"], 2, "{why}");
    assert_eq!(why["running"], 2, "{why}");
    assert!(
        why["message"]
            .as_str()
            .unwrap()
            .starts_with(r#"key "big" ($.customerId) is at its limit: 2/2 running"#),
        "{why}"
    );
    // Then three other customers, through the API: they go first.
    let big = small_keys_go_first(&api, 24).await;
    let hosts: std::collections::BTreeSet<&str> = big
        .iter()
        .map(|j| j["processedByHost"].as_str().unwrap())
        .collect();
    assert_eq!(hosts.len(), 2, "both hosts ran the big customer: {hosts:?}");
}

#[tokio::test]
async fn an_api_backlog_is_held_back_behind_other_keys() {
    let api = Api::start();
    api.setup("imports", "catalog-sync", keyed(2)).await;
    let _b = host(&api, "host-b");
    let jobs: Vec<Value> = (0..60)
        .map(|_| json!({"data": {"customerId": "big", "holdMs": 100}}))
        .collect();
    let (status, body) = api
        .post(
            "/v1/queues/imports/jobs/bulk",
            airlock_tests::host::tokens::PRODUCER,
            json!({ "jobs": jobs }),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::ACCEPTED, "{body}");
    // A job of the backlog says it waits for its key: one held back in
    // BullMQ's prioritized set, or one parked in its key's line. (Which
    // job is which is not known here: the reservations go to the first
    // jobs of the request, and the port's bulk add may number them in
    // another order.)
    let held = airlock_tests::eventually_some(
        "a job of the backlog waiting for its key",
        std::time::Duration::from_secs(30),
        || async {
            for state in ["prioritized", "delayed"] {
                let (_, page) = api
                    .get(
                        &format!("/v1/queues/imports/jobs?state={state}&limit=5"),
                        airlock_tests::host::tokens::ADMIN,
                    )
                    .await;
                for job in page["jobs"].as_array().into_iter().flatten() {
                    let job = api.job(&format!("imports:{}", job["id"].as_str()?)).await;
                    if job["waiting"]["kind"] == "key_limit" {
                        return Some(job);
                    }
                }
            }
            None
        },
    )
    .await;
    assert_eq!(held["waiting"]["key"], "big", "{held}");
    assert_eq!(held["waiting"]["limit"], 2, "{held}");
    small_keys_go_first(&api, 60).await;
}

#[tokio::test]
async fn slots_are_leases_that_killed_hosts_give_back() {
    let api = Api::start();
    api.setup("imports", "catalog-sync", keyed(2)).await;
    let mut workers = [host(&api, "w-0"), host(&api, "w-1")];
    let customers = ["c1", "c2", "c3", "c4"];
    const PER_KEY: usize = 100;
    for c in customers {
        let jobs: Vec<Value> = (0..PER_KEY)
            .map(|_| json!({"data": {"customerId": c, "holdMs": 300}}))
            .collect();
        let (status, body) = api
            .post(
                "/v1/queues/imports/jobs/bulk",
                airlock_tests::host::tokens::PRODUCER,
                json!({ "jobs": jobs }),
            )
            .await;
        assert_eq!(status, reqwest::StatusCode::ACCEPTED, "{body}");
    }
    let total = customers.len() * PER_KEY;

    // 20 SIGKILLs of hosts while they run keyed jobs, each restarted.
    let admin = Admin::connect(&api.redis.url()).await;
    for kill in 0..20 {
        let victim = kill % 2;
        let id = format!("w-{victim}");
        eventually("the victim runs a job", || async {
            let (_, page) = api
                .get(
                    "/v1/queues/imports/jobs?state=active&limit=500",
                    airlock_tests::host::tokens::ADMIN,
                )
                .await;
            page["jobs"]
                .as_array()
                .unwrap()
                .iter()
                .any(|j| j["processedByHost"] == id.as_str())
        })
        .await;
        workers[victim].kill9();
        workers[victim] = host(&api, &id);
    }
    assert!(
        completed(&api, "imports").await.len() < total,
        "every kill hit a drain still under way"
    );
    eventually("every job completed", || async {
        completed(&api, "imports").await.len() == total
    })
    .await;
    let all = completed(&api, "imports").await;
    for c in customers {
        let jobs: Vec<Value> = all
            .iter()
            .filter(|j| j["data"]["customerId"] == c)
            .cloned()
            .collect();
        assert!(most_at_once(&jobs) <= 2, "{c} ran more than its limit");
        // No leaked slot: nothing holds one once every job is done.
        let slot = KeySlot::of("imports", &json!(c));
        let state = admin.queues.state().key_limits.counts(&slot).await.unwrap();
        assert_eq!(state.held, 0, "{c}: leaked slots");
        assert_eq!(state.queued, 0, "{c}: jobs left in line");
    }

    // And each key's limit is exactly there: two start, the third waits.
    for c in customers {
        let refs: Vec<String> = {
            let mut r = Vec::new();
            for _ in 0..3 {
                r.push(
                    api.enqueue(
                        "imports",
                        json!({"data": {"customerId": c, "holdMs": 3000}}),
                    )
                    .await,
                );
            }
            r
        };
        eventually("two run and one waits", || async {
            let (mut active, mut parked) = (0, 0);
            for r in &refs {
                let j = api.job(r).await;
                if j["state"] == "active" {
                    active += 1;
                } else if j["waiting"]["kind"] == "key_limit" {
                    parked += 1;
                }
            }
            active == 2 && parked == 1
        })
        .await;
        for r in &refs {
            api.post(
                &format!("/v1/jobs/{r}/cancel"),
                airlock_tests::host::tokens::PRODUCER,
                json!({}),
            )
            .await;
        }
    }
}

fn singleton(mode: &str) -> Value {
    json!({
        "metered": false,
        "concurrency": 10,
        "limits": {"timeoutMs": 60_000},
        "singleton": {"key": "$.customerId", "mode": mode},
    })
}

#[tokio::test]
async fn a_singleton_skips_a_second_job_of_a_running_key() {
    let api = Api::start();
    api.setup("imports", "catalog-sync", singleton("skip"))
        .await;
    let _b = host(&api, "host-b");
    let first = api
        .enqueue(
            "imports",
            json!({"data": {"customerId": "A", "holdMs": 1500}}),
        )
        .await;
    api.wait_until(&first, "running", |j| j["state"] == "active")
        .await;
    let second = api
        .enqueue(
            "imports",
            json!({"data": {"customerId": "A", "holdMs": 10}, "opts": {"attempts": 3}}),
        )
        .await;
    let other = api
        .enqueue(
            "imports",
            json!({"data": {"customerId": "B", "holdMs": 10}}),
        )
        .await;
    let skipped = api.wait_done(&second).await;
    assert_eq!(skipped["failureKind"], "skipped", "{skipped}");
    assert_eq!(skipped["attemptsMade"], 1, "not retried: {skipped}");
    assert!(
        skipped["failedReason"]
            .as_str()
            .unwrap()
            .starts_with(r#"skipped: singleton: key "A" ($.customerId) already has a running job"#),
        "{skipped}"
    );
    let b = api.wait_done(&other).await;
    assert_eq!(b["state"], "completed", "another key runs meanwhile");
    let a = api.wait_done(&first).await;
    assert_eq!(a["state"], "completed");
    assert!(b["finishedOn"].as_u64() < a["finishedOn"].as_u64());
    // Once it is done, the key takes a job again.
    let third = api
        .enqueue(
            "imports",
            json!({"data": {"customerId": "A", "holdMs": 10}}),
        )
        .await;
    assert_eq!(api.wait_done(&third).await["state"], "completed");
}

#[tokio::test]
async fn a_singleton_in_cancel_mode_replaces_the_running_job() {
    let api = Api::start();
    api.setup("imports", "catalog-sync", singleton("cancel"))
        .await;
    let _b = host(&api, "host-b");
    let first = api
        .enqueue(
            "imports",
            json!({"data": {"customerId": "A", "holdMs": 30_000}}),
        )
        .await;
    api.wait_until(&first, "running", |j| j["state"] == "active")
        .await;
    let second = api
        .enqueue(
            "imports",
            json!({"data": {"customerId": "A", "holdMs": 10}}),
        )
        .await;
    let replaced = api.wait_done(&first).await;
    assert_eq!(replaced["failureKind"], "cancelled", "{replaced}");
    let id = second.split_once(':').unwrap().1;
    assert_eq!(
        replaced["failedReason"],
        format!(r#"cancelled: replaced by job {id} (singleton key "A")"#)
    );
    let done = api.wait_done(&second).await;
    assert_eq!(done["state"], "completed", "{done}");
    // It waited for the first to stop: taken once to find the key busy
    // (and park), once more when the slot came back.
    assert!(done["attemptsStarted"].as_u64().unwrap() >= 2, "{done}");
    assert_eq!(done["attemptsMade"], 1, "{done}");

    // Another tenant's job with the same key does not replace ours: it
    // waits for it.
    let ours = api
        .enqueue(
            "imports",
            json!({"data": {"customerId": "A", "holdMs": 30_000}}),
        )
        .await;
    api.wait_until(&ours, "running", |j| j["state"] == "active")
        .await;
    let (status, accepted) = api
        .post(
            "/v1/queues/imports/jobs",
            airlock_tests::host::tokens::OTHER_PRODUCER,
            json!({"data": {"customerId": "A", "holdMs": 10}}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::ACCEPTED, "{accepted}");
    let theirs = accepted["ref"].as_str().unwrap().to_string();
    api.wait_until(&theirs, "waiting in line", |j| {
        j["waiting"]["kind"] == "key_limit"
    })
    .await;
    assert_eq!(api.job(&ours).await["state"], "active", "not cancelled");
    let (status, _) = api
        .post(
            &format!("/v1/jobs/{ours}/cancel"),
            airlock_tests::host::tokens::PRODUCER,
            json!({}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::ACCEPTED);
    assert_eq!(api.wait_done(&theirs).await["state"], "completed");
}

/// A slot lease in the state-level tests below.
const LEASE_MS: u64 = 30_000;

/// Job `id`'s take of a slot of `slot` (a key of `limit`), as admission
/// makes it without parking, its fetch's `processedOn` `fetched`: whether
/// it holds a slot.
async fn take(
    limits: &airlock::state::key_limits::KeyLimits,
    slot: &KeySlot,
    (id, fetched): (&str, Option<u64>),
    limit: u64,
) -> bool {
    let taken = limits.acquire(slot, (id, fetched), limit, LEASE_MS, false);
    taken.await.unwrap()
}

/// A key's slots straight from Airlock's state, on a clock held still: a
/// slot is a lease that renewal extends and that runs out — to the
/// millisecond — when its holder stops renewing (a dead host), with no
/// sleep in the test; and a full key drops a holder whose job BullMQ
/// recorded as finished. Holders are jobs BullMQ made active, so each has
/// its job hash, without `finishedOn`.
#[tokio::test]
async fn a_slot_is_a_lease_renewal_extends_and_time_ends() {
    use airlock::state::key_limits::KeyLimits;
    use airlock::store::Store;
    use airlock_core::clock::PausedClock;

    let redis = airlock_tests::redis_server::RedisServer::start();
    let store = Store::connect(&redis.url(), "bull").await.unwrap();
    let clock = PausedClock::now();
    let limits = KeyLimits::new(store, clock.clone());
    let slot = KeySlot::of("leases", &json!("c1"));
    let lease = LEASE_MS;
    // A job's take of the key's one slot (its fetch's `processedOn` not
    // known here: the take leaves it alone).
    let take_slot = |id: &'static str| take(&limits, &slot, (id, None), 1);
    for id in ["a", "b", "c"] {
        redis.cli(&["HSET", &format!("bull:leases:{id}"), "processedOn", "1"]);
    }

    assert!(take_slot("a").await);
    assert!(
        !take_slot("b").await,
        "a key at its limit of 1 takes no second job"
    );
    // Just before the lease ends, the holder renews it: a full lease more.
    clock.advance(lease - 1);
    limits.renew(&slot, "a", lease).await.unwrap();
    clock.advance(2);
    assert!(
        !take_slot("b").await,
        "a renewed lease still holds the slot past its first term"
    );
    assert_eq!(limits.holders(&slot).await.unwrap(), ["a"]);
    // Its holder stops renewing (its host died): one lease after the last
    // renewal, to the millisecond, the slot is free and the next job takes
    // it.
    clock.advance(lease - 3);
    assert!(!take_slot("b").await);
    clock.advance(1);
    assert_eq!(limits.counts(&slot).await.unwrap().held, 0);
    assert!(take_slot("b").await);
    assert_eq!(limits.holders(&slot).await.unwrap(), ["b"]);
    // The job that had it, recovered late, finds its slot taken.
    assert!(!take_slot("a").await);
    // A release gives it back at once, and answers no one to promote
    // (nobody waits in the line).
    let released = limits.release(&slot, "b", 1, lease).await.unwrap();
    assert!(released.ids.is_empty(), "{released:?}");
    assert!(take_slot("a").await);
    // Its end recorded by BullMQ but its release not arrived (the host
    // died in between), the holder no longer keeps the key full.
    assert!(!take_slot("c").await);
    redis.cli(&["HSET", "bull:leases:a", "finishedOn", "2"]);
    assert!(take_slot("c").await);
    assert_eq!(limits.holders(&slot).await.unwrap(), ["c"]);
}

/// A take moves the job's `processedOn` (what BullMQ's tools count as
/// "active since") on to when the slot was taken, never back, from the
/// value the job's worker fetched — a key whose slot freed between a job's
/// fetch and its take then never shows the job active beside the run that
/// held the slot. A renewal of a slot the job holds leaves it alone.
#[tokio::test]
async fn a_take_moves_processed_on_to_when_the_slot_was_taken() {
    use airlock::state::key_limits::KeyLimits;
    use airlock::store::Store;
    use airlock_core::clock::PausedClock;

    let redis = airlock_tests::redis_server::RedisServer::start();
    let store = Store::connect(&redis.url(), "bull").await.unwrap();
    let clock = PausedClock::at(1_000_000);
    let limits = KeyLimits::new(store, clock.clone());
    let (a, b) = (
        KeySlot::of("taken", &json!("a")),
        KeySlot::of("taken", &json!("b")),
    );
    let processed_on = |id: &str| redis.cli(&["HGET", &format!("bull:taken:{id}"), "processedOn"]);
    for (id, fetched) in [
        ("early", "999000"),
        ("late", "1000500"),
        ("unknown", "999000"),
    ] {
        redis.cli(&["HSET", &format!("bull:taken:{id}"), "processedOn", fetched]);
    }

    // Fetched a second before the take: moved on to the take.
    assert!(take(&limits, &a, ("early", Some(999_000)), 2).await);
    assert_eq!(processed_on("early"), "1000000");
    // Fetched after the take's clock reading: never moved back.
    assert!(take(&limits, &a, ("late", Some(1_000_500)), 2).await);
    assert_eq!(processed_on("late"), "1000500");
    // Not known (a fetch that did not say): left alone.
    assert!(take(&limits, &b, ("unknown", None), 2).await);
    assert_eq!(processed_on("unknown"), "999000");
    // A slot the job holds already is renewed, not taken again.
    clock.advance(10);
    assert!(take(&limits, &a, ("early", Some(999_000)), 2).await);
    assert_eq!(processed_on("early"), "1000000");
    // The slow way (the key full until a finished holder is dropped) moves
    // it on too.
    redis.cli(&["HSET", "bull:taken:late", "finishedOn", "1000005"]);
    redis.cli(&["HSET", "bull:taken:third", "processedOn", "999500"]);
    assert!(take(&limits, &a, ("third", Some(999_500)), 2).await);
    assert_eq!(processed_on("third"), "1000010");
    assert_eq!(limits.holders(&a).await.unwrap().len(), 2);
}

/// An enqueue's reservations, straight from Airlock's state: one call for
/// a whole request gives each key's first jobs as many slots as the key
/// has room for, in request order, and none while the key has jobs in its
/// line; a hand-over passes each to its job.
#[tokio::test]
async fn a_request_reserves_each_keys_room_for_its_first_jobs() {
    use airlock::state::key_limits::KeyLimits;
    use airlock::store::Store;
    use airlock_core::clock::PausedClock;

    let redis = airlock_tests::redis_server::RedisServer::start();
    let store = Store::connect(&redis.url(), "bull").await.unwrap();
    let limits = KeyLimits::new(store, PausedClock::now());
    let (a, b, c) = (
        KeySlot::of("leases", &json!("a")),
        KeySlot::of("leases", &json!("b")),
        KeySlot::of("leases", &json!("c")),
    );
    let lease = 30_000;
    // Key c is full and has a job in its line (parked, so BullMQ-delayed).
    redis.cli(&["HSET", "bull:leases:c1", "processedOn", "1"]);
    assert!(
        limits
            .acquire(&c, ("c1", None), 1, lease, true)
            .await
            .unwrap()
    );
    assert!(
        !limits
            .acquire(&c, ("c2", None), 1, lease, true)
            .await
            .unwrap()
    );
    redis.cli(&["ZADD", "bull:leases:delayed", "1", "c2"]);
    let released = limits.join_line(&c, "c2", 1, lease).await.unwrap();
    assert!(released.ids.is_empty(), "{released:?}");
    // c1 finishes: c2 gets the slot, so c is full again, its line empty.
    let released = limits.release(&c, "c1", 1, lease).await.unwrap();
    assert_eq!(released.ids, ["c2"]);

    let request = [
        Some((a.clone(), 2)),
        Some((b.clone(), 1)),
        None,
        Some((a.clone(), 2)),
        Some((a.clone(), 2)),
        Some((b.clone(), 1)),
        Some((c.clone(), 1)),
    ];
    let tokens = limits.reserve(&request, lease).await.unwrap();
    let got: Vec<bool> = tokens.iter().map(Option::is_some).collect();
    assert_eq!(got, [true, true, false, true, false, false, false]);
    assert_eq!(limits.counts(&a).await.unwrap().held, 2);
    assert_eq!(limits.counts(&b).await.unwrap().held, 1);

    let handovers: Vec<(KeySlot, String, String)> = request
        .iter()
        .zip(&tokens)
        .enumerate()
        .filter_map(|(i, (key, token))| {
            let (slot, _) = key.clone()?;
            Some((slot, token.clone()?, format!("job-{i}")))
        })
        .collect();
    limits.hand_over(&handovers).await.unwrap();
    let mut holders = limits.holders(&a).await.unwrap();
    holders.sort();
    assert_eq!(holders, ["job-0", "job-3"]);
    assert_eq!(limits.holders(&b).await.unwrap(), ["job-1"]);
}

/// A job with a priority of its own waits in BullMQ's priority order, so
/// its enqueue reserves no slot for it (one would be held while it
/// waits); a ready job without one does.
#[tokio::test]
async fn a_prioritized_job_reserves_no_slot_at_enqueue() {
    let api = Api::start_with(&["--no-workers"]);
    api.setup("imports", "catalog-sync", keyed(2)).await;
    let (status, body) = api
        .post(
            "/v1/queues/imports/jobs/bulk",
            airlock_tests::host::tokens::PRODUCER,
            json!({"jobs": [
                {"data": {"customerId": "p"}, "opts": {"priority": 5}},
                {"data": {"customerId": "q"}},
            ]}),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::ACCEPTED, "{body}");
    let admin = Admin::connect(&api.redis.url()).await;
    let limits = &admin.queues.state().key_limits;
    let (p, q) = (
        KeySlot::of("imports", &json!("p")),
        KeySlot::of("imports", &json!("q")),
    );
    assert_eq!(limits.counts(&p).await.unwrap().held, 0);
    assert_eq!(limits.counts(&q).await.unwrap().held, 1);
}

/// A key's slots are leases, on a paused clock: a held slot keeps the key
/// full until its lease (renewed or not) has run out, to the millisecond;
/// then the next job takes it, and the `processedOn` its worker's fetch
/// wrote moves on to the take — the time it could first run.
#[tokio::test]
async fn key_slots_are_leases_to_the_millisecond_on_a_paused_clock() {
    use airlock::state::key_limits::KeyLimits;
    use airlock::store::Store;
    use airlock_core::clock::{Clock, PausedClock};

    let redis = airlock_tests::redis_server::RedisServer::start();
    let store = Store::connect(&redis.url(), "bull").await.unwrap();
    let clock = PausedClock::now();
    let limits = KeyLimits::new(store, clock.clone());
    let t0 = clock.now_ms();
    let slot = KeySlot::of("imports", &json!("c1"));
    // Both jobs exist and have not finished: a full key drops holders
    // that finished or are gone, and these are neither.
    let fetched = (t0 - 10).to_string();
    for id in ["a", "b"] {
        redis.cli(&[
            "HSET",
            &format!("bull:imports:{id}"),
            "processedOn",
            &fetched,
        ]);
    }
    let lease = 1_000;
    let take = |id: &'static str| limits.acquire(&slot, (id, Some(t0 - 10)), 1, lease, false);

    assert!(take("a").await.unwrap(), "a free key");
    assert!(!take("b").await.unwrap(), "the key is full");
    clock.advance(999);
    limits.renew(&slot, "a", lease).await.unwrap();
    clock.advance(999);
    assert!(
        !take("b").await.unwrap(),
        "a's renewed lease runs to t0 + 1999"
    );
    assert_eq!(limits.holders(&slot).await.unwrap(), ["a"]);
    clock.advance(1);
    assert!(
        take("b").await.unwrap(),
        "a's lease ran out: b takes the slot"
    );
    assert_eq!(limits.holders(&slot).await.unwrap(), ["b"]);
    let moved = redis.cli(&["HGET", "bull:imports:b", "processedOn"]);
    assert_eq!(
        moved.trim(),
        (t0 + 1_999).to_string(),
        "b's processedOn is its take"
    );
    let first = redis.cli(&["HGET", "bull:imports:a", "processedOn"]);
    assert_eq!(
        first.trim(),
        t0.to_string(),
        "a's too: its take, 10 ms after its fetch"
    );
}
