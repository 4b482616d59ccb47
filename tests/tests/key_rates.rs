//! Per-key start rates across two hosts: `keyThrottle` spaces a key's
//! starts and delays the jobs over the rate (other keys untouched);
//! `keyRateLimit` drops them, saying why.

use airlock_tests::api::Api;
use airlock_tests::host::{HostOptions, HostProcess};
use serde_json::{Value, json};

fn second_host(api: &Api) -> HostProcess {
    HostProcess::start(
        &api.redis.url(),
        HostOptions {
            id: "host-b".into(),
            ..HostOptions::default()
        },
    )
}

fn sync(customer: &str) -> Value {
    json!({"data": {"customerId": customer, "holdMs": 5}, "opts": {"attempts": 3}})
}

#[tokio::test]
async fn a_throttle_spaces_a_keys_starts_and_delays_the_rest() {
    let api = Api::start();
    api.setup(
        "imports",
        "catalog-sync",
        json!({"keyThrottle": {"key": "$.customerId", "limit": 2, "periodMs": 1000}}),
    )
    .await;
    let _b = second_host(&api);
    let mut busy = Vec::new();
    for _ in 0..5 {
        busy.push(api.enqueue("imports", sync("busy")).await);
    }
    let other = api.enqueue("imports", sync("quiet")).await;

    // The last one waits for its turn and says so.
    let waiting = api
        .wait_until(&busy[4], "throttled", |j| {
            j["waiting"]["kind"] == "throttled"
        })
        .await;
    let why = &waiting["waiting"];
    assert_eq!(why["key"], "busy", "{why}");
    assert!(why["until"].as_u64().is_some(), "{why}");
    assert!(
        why["message"]
            .as_str()
            .unwrap()
            .starts_with(r#"key "busy" ($.customerId) is throttled to 2 per 1s"#),
        "{why}"
    );

    let quiet = api.wait_done(&other).await;
    assert_eq!(quiet["state"], "completed");
    let mut starts = Vec::new();
    for job in &busy {
        let done = api.wait_done(job).await;
        assert_eq!(done["state"], "completed", "{done}");
        assert_eq!(done["attemptsMade"], 1, "waiting used no attempt: {done}");
        let admitted = done["processedOn"].as_u64().unwrap();
        let held_from = done["returnvalue"]["heldFromMs"].as_u64().unwrap();
        assert!(
            held_from >= admitted,
            "the guest ran after its admission: {done}"
        );
        starts.push(admitted);
    }
    starts.sort();
    // As the docs say: adjacent starts (the hosts' admissions, each job's
    // `processedOn`) at least 500 ms apart, a late one moving the next.
    for pair in starts.windows(2) {
        assert!(
            pair[1] - pair[0] >= 500,
            "two starts closer than 500 ms: {starts:?}"
        );
    }
    assert!(
        quiet["processedOn"].as_u64().unwrap() < starts[2],
        "the quiet key did not wait for the busy one: {quiet} {starts:?}"
    );
}

#[tokio::test]
async fn a_rate_limit_drops_what_is_over_it() {
    let api = Api::start();
    api.setup(
        "imports",
        "catalog-sync",
        json!({"keyRateLimit": {"key": "$.customerId", "limit": 2, "periodMs": 60_000, "burst": 2}}),
    )
    .await;
    let _b = second_host(&api);
    let mut jobs = Vec::new();
    for _ in 0..5 {
        jobs.push(api.enqueue("imports", sync("busy")).await);
    }
    let other = api.enqueue("imports", sync("quiet")).await;
    assert_eq!(api.wait_done(&other).await["state"], "completed");
    let (mut completed, mut dropped) = (0, 0);
    for job in &jobs {
        let done = api.wait_done(job).await;
        match done["state"].as_str().unwrap() {
            "completed" => completed += 1,
            _ => {
                assert_eq!(done["failureKind"], "rate_limited", "{done}");
                assert_eq!(done["attemptsMade"], 1, "not retried: {done}");
                let reason = done["failedReason"].as_str().unwrap();
                assert!(
                    reason.starts_with(
                        r#"rate_limited: key "busy" ($.customerId) is over its rate limit of 2 per 1m; dropped without running"#
                    ),
                    "{reason}"
                );
                assert!(
                    !api.job(job).await["logs"]
                        .to_string()
                        .contains("[airlock] run"),
                    "no guest ran"
                );
                dropped += 1;
            }
        }
    }
    assert_eq!((completed, dropped), (2, 3));
}

#[tokio::test]
async fn rate_rules_out_of_range_are_refused() {
    let api = Api::start();
    api.setup("imports", "catalog-sync", json!({})).await;
    for (rule, field) in [
        (
            json!({"keyThrottle": {"key": "$.c", "limit": 0, "periodMs": 1000}}),
            "keyThrottle.limit",
        ),
        (
            json!({"keyRateLimit": {"key": "$.c", "limit": 1, "periodMs": 86_400_001u64}}),
            "keyRateLimit.periodMs",
        ),
        (
            json!({"keyThrottle": {"key": "$.c", "limit": 1, "periodMs": 1, "burst": 0}}),
            "keyThrottle.burst",
        ),
    ] {
        let mut spec = rule.clone();
        spec["handler"] = json!("catalog-sync");
        let (status, body) = api
            .put(
                "/v1/queues/imports",
                airlock_tests::host::tokens::ADMIN,
                spec,
            )
            .await;
        assert_eq!(status, reqwest::StatusCode::BAD_REQUEST, "{rule}: {body}");
        assert_eq!(airlock_tests::api::error_field(&body), field, "{body}");
    }
}

/// GCRA straight from Airlock's state, on a clock held still: a throttle
/// of 2 per second with a burst of 2 lets two starts through back to back,
/// then grants each later start its own time, half a second apart; a rate
/// limit drops instead and says when the key has room again. Exact to the
/// millisecond, with no sleep.
#[tokio::test]
async fn key_rates_space_starts_exactly_on_a_paused_clock() {
    use airlock::state::key_limits::KeySlot;
    use airlock::state::key_rates::{KeyRates, Rate, RateDecision, RateMode};
    use airlock::store::Store;
    use airlock_core::clock::{Clock, PausedClock};

    let redis = airlock_tests::redis_server::RedisServer::start();
    let store = Store::connect(&redis.url(), "bull").await.unwrap();
    let clock = PausedClock::now();
    let rates = KeyRates::new(store, clock.clone());
    let rate = Rate {
        limit: 2,
        period_ms: 1_000,
        burst: 2,
    };
    let t0 = clock.now_ms();

    let throttled = KeySlot::of("imports", &json!("c1"));
    let check = |id: &'static str| rates.check(&throttled, id, rate, RateMode::Throttle);
    assert_eq!(check("a").await.unwrap(), RateDecision::Start);
    assert_eq!(check("b").await.unwrap(), RateDecision::Start);
    // Over the burst: each job gets its own start time, T = 500 ms apart.
    assert_eq!(check("c").await.unwrap(), RateDecision::WaitUntil(t0 + 500));
    assert_eq!(
        check("d").await.unwrap(),
        RateDecision::WaitUntil(t0 + 1_000)
    );
    // Asking again keeps a job's grant (a host that died before parking
    // it): no start is granted twice.
    assert_eq!(check("c").await.unwrap(), RateDecision::WaitUntil(t0 + 500));
    assert_eq!(
        rates.grant(&throttled, "d").await.unwrap(),
        Some(t0 + 1_000)
    );
    // At its time, the granted job starts, and its grant is used up.
    clock.advance(500);
    assert_eq!(check("c").await.unwrap(), RateDecision::Start);
    assert_eq!(rates.grant(&throttled, "c").await.unwrap(), None);

    // Another key has a rate of its own; a rate limit drops what is over.
    let limited = KeySlot::of("imports", &json!("c2"));
    let drop = |id: &'static str| rates.check(&limited, id, rate, RateMode::Drop);
    assert_eq!(drop("e").await.unwrap(), RateDecision::Start);
    assert_eq!(drop("f").await.unwrap(), RateDecision::Start);
    assert_eq!(drop("g").await.unwrap(), RateDecision::Dropped(500));
    clock.advance(499);
    assert_eq!(drop("h").await.unwrap(), RateDecision::Dropped(1));
    clock.advance(1);
    assert_eq!(drop("i").await.unwrap(), RateDecision::Start);
}

/// A turn is not yet a start: a job late for its turn (its wake-up came
/// late) moves the next turn on by as much, so admitted starts of a key
/// with no burst are never closer than T, and each writes its job's
/// `processedOn`. On a clock held still: a turn up to `HOLD_MS` early waits
/// in-process (`StartAt`), one further off is granted the moved turn
/// instead, and a fresh job's turn never comes before the moved one.
#[tokio::test]
async fn a_late_start_moves_the_next_turn_on_a_paused_clock() {
    use airlock::state::key_limits::KeySlot;
    use airlock::state::key_rates::{HOLD_MS, KeyRates, Rate, RateDecision, RateMode};
    use airlock::store::Store;
    use airlock_core::clock::{Clock, PausedClock};

    let redis = airlock_tests::redis_server::RedisServer::start();
    let store = Store::connect(&redis.url(), "bull").await.unwrap();
    let clock = PausedClock::now();
    let rates = KeyRates::new(store.clone(), clock.clone());
    let rate = Rate {
        limit: 2,
        period_ms: 1_000,
        burst: 1,
    };
    let key = KeySlot::of("imports", &json!("c1"));
    let check = |id: &'static str| rates.check(&key, id, rate, RateMode::Throttle);
    let t0 = clock.now_ms();
    let job = store.keys().job("imports", "b");
    let mut conn = store.conn();
    let _: () = redis::AsyncCommands::hset(&mut conn, &job, "processedOn", 1)
        .await
        .unwrap();

    assert_eq!(check("a").await.unwrap(), RateDecision::Start);
    assert_eq!(check("b").await.unwrap(), RateDecision::WaitUntil(t0 + 500));
    assert_eq!(
        check("c").await.unwrap(),
        RateDecision::WaitUntil(t0 + 1_000)
    );
    // b comes 43 ms late for its turn; its start is what counts.
    clock.advance(543);
    assert_eq!(check("b").await.unwrap(), RateDecision::Start);
    let processed: u64 = redis::AsyncCommands::hget(&mut conn, &job, "processedOn")
        .await
        .unwrap();
    assert_eq!(
        processed,
        t0 + 543,
        "the admitted start is the job's processedOn"
    );
    // c, woken on time for its turn, waits the 43 ms out.
    clock.advance(457);
    assert_eq!(check("c").await.unwrap(), RateDecision::StartAt(t0 + 1_043));
    // A job arriving now is given a turn after the moved one.
    assert_eq!(
        check("d").await.unwrap(),
        RateDecision::WaitUntil(t0 + 1_543)
    );
    clock.advance(543);
    assert_eq!(check("d").await.unwrap(), RateDecision::Start);
    assert_eq!(
        check("e").await.unwrap(),
        RateDecision::WaitUntil(t0 + 2_043)
    );
    assert_eq!(
        check("f").await.unwrap(),
        RateDecision::WaitUntil(t0 + 2_543)
    );
    // e is very late (400 ms): f's turn moves further than a job waits
    // in-process, so f is granted the moved turn and parked again.
    clock.advance(500 + 400);
    assert_eq!(check("e").await.unwrap(), RateDecision::Start);
    clock.advance(100);
    const { assert!(400 > HOLD_MS, "the case below is a park, not a wait") };
    assert_eq!(
        check("f").await.unwrap(),
        RateDecision::WaitUntil(t0 + 2_943)
    );
    assert_eq!(rates.grant(&key, "f").await.unwrap(), Some(t0 + 2_943));
    clock.advance(400);
    assert_eq!(check("f").await.unwrap(), RateDecision::Start);
}
