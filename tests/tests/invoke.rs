//! Handlers that start other work, through a real host and Redis with the
//! `work-probe` guest: an invoke parks its parent until the children have
//! ended (retries first) and hands back each end in order; a fan-out of
//! 1,000 keeps every value beside its failures; `maxRunning` bounds the
//! children at once and a timeout ends what still runs; what the binding
//! does not allow is refused; a child is its parent's producer's; an
//! enqueue and an event go out once; `retry-after` and `rate-limit` use up
//! no attempt; `onFailure` announces each failure for good once, also one
//! whose host died first, one recorded late and a flood in one
//! millisecond.

use airlock_tests::api::Api;
use airlock_tests::host::tokens;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Binds `parents` (allowed to start on `kids*` and send `order.*`) and
/// `kids` to the probe.
async fn setup(api: &Api) {
    api.setup(
        "parents",
        "work-probe",
        json!({"starts": {"queues": ["kids*"], "events": ["order.*"]}}),
    )
    .await;
    let (status, body) = api
        .put(
            "/v1/queues/kids",
            tokens::ADMIN,
            json!({"handler": "work-probe", "concurrency": 20}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// The jobs of `queue` in `state`, as the admin lists them.
async fn listed(api: &Api, queue: &str, state: &str) -> Vec<Value> {
    let (status, page) = api
        .get(
            &format!("/v1/queues/{queue}/jobs?state={state}&limit=500"),
            tokens::ADMIN,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page["jobs"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_invoke_waits_for_its_children_retries_and_hands_back_each_end() {
    let api = Api::start();
    setup(&api).await;
    let parent = api
        .enqueue(
            "parents",
            json!({"name": "order", "data": {"invoke": [
                {"queue": "kids", "name": "charge", "data": {"echo": {"charged": 42}, "failUntil": 2}, "attempts": 3},
                {"queue": "kids", "name": "refuse", "data": {"fatal": true}, "attempts": 3},
            ]}}),
        )
        .await;
    let job = api.wait_done(&parent).await;
    assert_eq!(job["state"], "completed", "{job}");
    let out = &job["returnvalue"];
    assert_eq!(out["ends"][0], json!({"value": {"charged": 42}}), "{out}");
    let failed = &out["ends"][1]["failed"];
    assert_eq!(failed["kind"], "guest_fatal", "{out}");
    assert_eq!(failed["attempts"], 1, "a fatal error ends at once: {out}");
    assert!(
        failed["reason"].as_str().unwrap().contains("refuses"),
        "{out}"
    );
    // The parent ran twice (parked once, resumed once); the code before
    // the invoke ran once, its step replayed on the resumption.
    assert_eq!(out["runs"], 2, "{out}");
    assert_eq!(out["before"], 1, "{out}");
    assert_eq!(job["attemptsMade"], 1, "waiting used no attempt: {job}");

    // The children are ordinary BullMQ jobs of their queue, their parent
    // named; the retried one made two attempts.
    let kids = listed(&api, "kids", "completed").await;
    assert_eq!(kids.len(), 1, "{kids:?}");
    assert_eq!(kids[0]["attemptsMade"], 2, "{:?}", kids[0]);
    let child = api
        .job(&format!("kids:{}", kids[0]["id"].as_str().unwrap()))
        .await;
    let parent_id = parent.split_once(':').unwrap().1;
    assert!(
        child["parentKey"]
            .as_str()
            .is_some_and(|k| k.ends_with(&format!("parents:{parent_id}"))),
        "{child}"
    );
    // A producer token reads the children of its own jobs, another does not.
    let child_ref = format!("kids:{}", kids[0]["id"].as_str().unwrap());
    let (status, _) = api
        .get(&format!("/v1/jobs/{child_ref}"), tokens::PRODUCER)
        .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the parent's producer reads its child"
    );
    let (status, _) = api
        .get(&format!("/v1/jobs/{child_ref}"), tokens::OTHER_PRODUCER)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another producer does not");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fan_out_of_a_thousand_keeps_every_value_beside_its_failures() {
    let api = Api::start();
    setup(&api).await;
    let jobs: Vec<Value> = (0..1000)
        .map(|i| {
            if i % 100 == 7 {
                json!({"queue": "kids", "name": "item", "data": {"fatal": true}})
            } else {
                json!({"queue": "kids", "name": "item", "data": {"echo": i}})
            }
        })
        .collect();
    let parent = api
        .enqueue("parents", json!({"name": "fan", "data": {"invoke": jobs}}))
        .await;
    let job = api.wait_done(&parent).await;
    assert_eq!(job["state"], "completed", "{job}");
    let ends = job["returnvalue"]["ends"].as_array().unwrap();
    assert_eq!(ends.len(), 1000);
    for (i, end) in ends.iter().enumerate() {
        if i % 100 == 7 {
            assert_eq!(end["failed"]["kind"], "guest_fatal", "end {i}: {end}");
        } else {
            assert_eq!(end["value"], i, "end {i}: {end}");
        }
    }
    assert_eq!(job["returnvalue"]["runs"], 2, "one park, one resumption");
}

#[tokio::test(flavor = "multi_thread")]
async fn max_running_bounds_the_children_and_a_timeout_ends_what_still_runs() {
    let api = Api::start();
    setup(&api).await;
    let jobs: Vec<Value> = (0..6)
        .map(|i| json!({"queue": "kids", "name": "slow", "data": {"echo": i, "sleepMs": 300}}))
        .collect();
    let parent = api
        .enqueue(
            "parents",
            json!({"name": "bounded", "data": {"invoke": jobs, "maxRunning": 2}}),
        )
        .await;
    let job = api.wait_done(&parent).await;
    let ends = job["returnvalue"]["ends"].as_array().unwrap().clone();
    let values: Vec<Value> = ends.iter().map(|e| e["value"].clone()).collect();
    assert_eq!(values, (0..6).map(|i| json!(i)).collect::<Vec<_>>());
    // Three groups of two: the parent ran four times.
    assert_eq!(job["returnvalue"]["runs"], 4, "{job}");
    let mut spans: Vec<(u64, u64)> = listed(&api, "kids", "completed")
        .await
        .iter()
        .map(|k| {
            (
                k["processedOn"].as_u64().unwrap(),
                k["finishedOn"].as_u64().unwrap(),
            )
        })
        .collect();
    spans.sort();
    for (i, (start, _)) in spans.iter().enumerate() {
        let running = spans[..i].iter().filter(|(_, end)| end > start).count() + 1;
        assert!(running <= 2, "{running} children ran at once: {spans:?}");
    }

    // A child that outlasts the invoke's timeout ends as timed out; the
    // parent goes on without it.
    let parent = api
        .enqueue(
            "parents",
            json!({"name": "impatient", "data": {"timeoutMs": 1000, "invoke": [
                {"queue": "kids", "name": "quick", "data": {"echo": "fast"}},
                {"queue": "kids", "name": "slow", "data": {"echo": "late", "sleepMs": 8000}},
            ]}}),
        )
        .await;
    let job = api.wait_done(&parent).await;
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(
        job["returnvalue"]["ends"],
        json!([{"value": "fast"}, {"timedOut": true}]),
        "{job}"
    );
    let took = job["finishedOn"].as_u64().unwrap() - job["timestamp"].as_u64().unwrap();
    assert!(
        took < 7000,
        "the parent waited for the slow child: {took} ms"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn what_the_binding_does_not_allow_is_refused_and_starts_go_out_once() {
    let api = Api::start();
    setup(&api).await;
    let (status, body) = api
        .put(
            "/v1/queues/listener",
            tokens::ADMIN,
            json!({"handler": "work-probe", "events": ["order.created"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let refused = api
        .enqueue(
            "parents",
            json!({"name": "sneaky", "data": {"invoke": [{"queue": "payments", "name": "x", "data": {}}]}}),
        )
        .await;
    let job = api.wait_done(&refused).await;
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["failureKind"], "guest_fatal", "{job}");
    assert!(
        job["failedReason"]
            .as_str()
            .unwrap()
            .contains("refused: queue `payments` is not in the `starts.queues`"),
        "{job}"
    );
    let event = api
        .enqueue(
            "parents",
            json!({"name": "sneaky", "data": {"event": {"name": "user.deleted", "data": {}}}}),
        )
        .await;
    let job = api.wait_done(&event).await;
    assert!(
        job["failedReason"]
            .as_str()
            .unwrap()
            .contains("event `user.deleted` is not in the `starts.events`"),
        "{job}"
    );

    // An enqueue: the job, once; an event: one job on the subscribed queue.
    let enqueuer = api
        .enqueue(
            "parents",
            json!({"name": "fire", "data": {"enqueue": {"queue": "kids", "name": "later", "data": {"echo": "hi"}}}}),
        )
        .await;
    let out = api.wait_done(&enqueuer).await["returnvalue"].clone();
    let child = format!("kids:{}", out["id"].as_str().unwrap());
    let child_job = api.wait_done(&child).await;
    assert_eq!(child_job["returnvalue"], "hi", "{child_job}");
    assert_eq!(
        child_job["producer"], "web",
        "the parent's producer: {child_job}"
    );
    let sender = api
        .enqueue(
            "parents",
            json!({"name": "announce", "data": {"event": {"name": "order.created", "data": {"echo": 7}}}}),
        )
        .await;
    let out = api.wait_done(&sender).await["returnvalue"].clone();
    let event_id = out["eventId"].as_str().unwrap();
    let heard = api.wait_done(&format!("listener:evt-{event_id}")).await;
    assert_eq!(heard["data"]["data"], json!({"echo": 7}), "{heard}");
    assert_eq!(listed(&api, "listener", "completed").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn retry_after_and_rate_limit_use_no_attempt() {
    let api = Api::start();
    api.setup(
        "limited",
        "work-probe",
        json!({"rateLimit": {"max": 1000, "durationMs": 1000}}),
    )
    .await;
    let later = api
        .enqueue(
            "limited",
            json!({"name": "429", "data": {"retryAfterMs": 3000}}),
        )
        .await;
    let parked = api
        .wait_until(&later, "delayed by its retry-after", |j| {
            j["state"] == "delayed"
        })
        .await;
    assert_eq!(
        parked["delay"], 3000,
        "BullMQ's delay is the one asked: {parked}"
    );
    let job = api.wait_done(&later).await;
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(
        job["attemptsMade"], 1,
        "one attempt, the one that completed: {job}"
    );
    assert_eq!(job["returnvalue"]["attempt"], 1, "{job}");
    assert_eq!(job["returnvalue"]["runs"], 2, "{job}");
    let waited = job["processedOn"].as_u64().unwrap() - job["timestamp"].as_u64().unwrap();
    assert!(
        waited >= 3000,
        "the second run started {waited} ms after the add"
    );

    let paused = api
        .enqueue(
            "limited",
            json!({"name": "slow-down", "data": {"rateLimitMs": 2000}}),
        )
        .await;
    let job = api.wait_done(&paused).await;
    assert_eq!(
        job["attemptsMade"], 1,
        "one attempt, the one that completed: {job}"
    );
    assert_eq!(job["returnvalue"]["attempt"], 1, "{job}");
    assert_eq!(job["returnvalue"]["runs"], 2, "{job}");
    let waited = job["processedOn"].as_u64().unwrap() - job["timestamp"].as_u64().unwrap();
    assert!(waited >= 2000, "the queue was paused only {waited} ms");
}

#[tokio::test(flavor = "multi_thread")]
async fn on_failure_announces_each_failure_for_good_once() {
    let api = Api::start();
    api.setup(
        "fragile",
        "work-probe",
        json!({
            "onFailure": {"queue": "dead-letters", "event": "job.failed"},
            "defaultJobOptions": {"attempts": 2},
        }),
    )
    .await;
    for (queue, spec) in [
        ("dead-letters", json!({"handler": "work-probe"})),
        (
            "failure-listener",
            json!({"handler": "work-probe", "events": ["job.failed"]}),
        ),
    ] {
        let (status, body) = api
            .put(&format!("/v1/queues/{queue}"), tokens::ADMIN, spec)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let fatal = api
        .enqueue("fragile", json!({"name": "bad", "data": {"fatal": true}}))
        .await;
    let exhausted = api
        .enqueue(
            "fragile",
            json!({"name": "flaky", "data": {"failUntil": 99}}),
        )
        .await;
    let fine = api
        .enqueue("fragile", json!({"name": "good", "data": {"echo": 1}}))
        .await;
    for job in [&fatal, &exhausted, &fine] {
        api.wait_done(job).await;
    }
    let letters = airlock_tests::eventually_some(
        "two dead letters and two failure events",
        std::time::Duration::from_secs(20),
        || async {
            let letters = listed(&api, "dead-letters", "completed").await;
            let heard = listed(&api, "failure-listener", "completed").await;
            (letters.len() >= 2 && heard.len() >= 2).then_some(letters)
        },
    )
    .await;
    // A few announcement passes later, still one of each per failure.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert_eq!(listed(&api, "dead-letters", "completed").await.len(), 2);
    assert_eq!(listed(&api, "failure-listener", "completed").await.len(), 2);
    let by_id = |id: &str| {
        letters
            .iter()
            .find(|l| l["data"]["id"] == id)
            .unwrap_or_else(|| panic!("no dead letter for {id}: {letters:?}"))
            .clone()
    };
    let fatal_letter = by_id(fatal.split_once(':').unwrap().1);
    assert_eq!(fatal_letter["data"]["failure"]["kind"], "guest_fatal");
    assert_eq!(fatal_letter["data"]["attempts"], 1);
    assert_eq!(fatal_letter["data"]["producer"], "web");
    assert_eq!(fatal_letter["data"]["data"], json!({"fatal": true}));
    let retry_letter = by_id(exhausted.split_once(':').unwrap().1);
    assert_eq!(retry_letter["data"]["failure"]["kind"], "guest_retry");
    assert_eq!(retry_letter["data"]["attempts"], 2);
}

/// A job failed for good on a host that died before announcing it (its
/// announcer ended by a failpoint) gets its dead letter from the next
/// host, once.
#[tokio::test(flavor = "multi_thread")]
async fn a_failure_whose_host_died_is_announced_by_the_next_host() {
    use airlock_tests::host::{HostOptions, HostProcess};
    let mut options = HostOptions::default();
    options
        .env
        .push(("FAILPOINTS".into(), "announce-failures=return".into()));
    let mut api = Api::start_with_options(options);
    api.setup(
        "fragile",
        "work-probe",
        json!({"onFailure": {"queue": "dead-letters"}}),
    )
    .await;
    let (status, body) = api
        .put(
            "/v1/queues/dead-letters",
            tokens::ADMIN,
            json!({"handler": "work-probe"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let fatal = api
        .enqueue("fragile", json!({"name": "bad", "data": {"fatal": true}}))
        .await;
    assert_eq!(api.wait_done(&fatal).await["state"], "failed");
    // Its announcer ended before its first pass (the failpoint): the
    // failure waits in BullMQ's failed set for another host. (A live
    // announcer would have passed within this.)
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    api.host.kill9();
    let killed_at = airlock_core::clock::now_ms();

    let next = HostProcess::start(
        &api.redis.url(),
        HostOptions {
            id: "next".into(),
            api: true,
            ..HostOptions::default()
        },
    );
    api.url = next.api_url();
    let letters = airlock_tests::eventually_some(
        "the dead letter from the next host, with its cursor past the failure",
        std::time::Duration::from_secs(20),
        || async {
            let letters = listed(&api, "dead-letters", "completed").await;
            let cursor = api
                .redis
                .cli(&["GET", "bull:fragile:airlock:failures-cursor"]);
            (!letters.is_empty() && !cursor.trim().is_empty()).then_some(letters)
        },
    )
    .await;
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert_eq!(letters[0]["data"]["id"], fatal.split_once(':').unwrap().1);
    assert_eq!(letters[0]["data"]["failure"]["kind"], "guest_fatal");
    let added = letters[0]["timestamp"].as_u64().unwrap();
    assert!(
        added >= killed_at,
        "announced after the first host's death: {letters:?}"
    );
}

/// The two crash windows of an invoke: the parent's host dies after the
/// child's add but before the parent parked (paused there by a failpoint,
/// then SIGKILLed), and the next host dies right after the child ended,
/// before the parent resumed. The child runs once; the parent's code
/// before the invoke runs once; it ends with the child's value.
#[tokio::test(flavor = "multi_thread")]
async fn hosts_killed_around_an_invoke_lose_nothing_and_repeat_nothing() {
    use airlock_tests::host::{HostOptions, HostProcess};
    let mut options = HostOptions::default();
    options
        .env
        .push(("FAILPOINTS".into(), "after-start-jobs=1*pause".into()));
    let mut api = Api::start_with_options(options);
    // The children's queue is bound only once the first host is dead, so
    // no child runs on it.
    api.setup(
        "parents",
        "work-probe",
        json!({"starts": {"queues": ["kids"]}}),
    )
    .await;
    let parent = api
        .enqueue(
            "parents",
            json!({"name": "crash", "data": {"invoke": [
                {"queue": "kids", "name": "once", "data": {"echo": "ok"}},
            ]}}),
        )
        .await;
    airlock_tests::eventually_some(
        "the child added while its parent still runs",
        std::time::Duration::from_secs(20),
        || async {
            // The queue is not bound yet: its wait list, read in Redis.
            let waiting = api.redis.cli(&["LLEN", "bull:kids:wait"]);
            let parent = api.job(&parent).await;
            (waiting == "1" && parent["state"] == "active").then_some(())
        },
    )
    .await;
    api.host.kill9();

    let second = HostProcess::start(
        &api.redis.url(),
        HostOptions {
            id: "second".into(),
            api: true,
            ..HostOptions::default()
        },
    );
    api.url = second.api_url();
    let (status, body) = api
        .put(
            "/v1/queues/kids",
            tokens::ADMIN,
            json!({"handler": "work-probe"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let child = airlock_tests::eventually_some(
        "the child to complete",
        std::time::Duration::from_secs(60),
        || async { listed(&api, "kids", "completed").await.pop() },
    )
    .await;
    drop(second); // SIGKILL: the parent may be moved, or resuming, now.
    let third = HostProcess::start(
        &api.redis.url(),
        HostOptions {
            id: "third".into(),
            api: true,
            ..HostOptions::default()
        },
    );
    api.url = third.api_url();
    let done = api.wait_done(&parent).await;
    assert_eq!(done["state"], "completed", "{done}");
    let out = &done["returnvalue"];
    assert_eq!(out["ends"], json!([{"value": "ok"}]), "{out}");
    assert_eq!(
        out["before"], 1,
        "the code before the invoke ran once: {out}"
    );
    let child_id = child["id"].as_str().unwrap();
    assert_eq!(
        listed(&api, "kids", "completed").await.len(),
        1,
        "one child, added once"
    );
    assert_eq!(
        api.redis.cli(&[
            "GET",
            &format!("bull:airlock:kv:work-probe:runs:kids:{child_id}")
        ]),
        "1",
        "the child ran once"
    );
}

/// `onFailure`'s pass over the failed set, in-process against Redis: a
/// flood of 250 failures in one millisecond is announced in one pass (a
/// page of 200 does not stall it), a failure recorded late with an
/// earlier time (another host's clock) is still announced, and each is
/// announced once.
#[tokio::test(flavor = "multi_thread")]
async fn on_failure_reads_a_flood_in_one_millisecond_and_a_late_failure_once() {
    use airlock::queue::QueueService;
    use airlock::registry::{OnFailure, Registry};
    use airlock::sandbox::{Sandbox, SandboxConfig};
    use airlock::store::Store;
    use airlock::worker::on_failure::announce;
    use airlock_tests::redis_server::RedisServer;
    use std::sync::Arc;

    let redis = RedisServer::start();
    let store = Store::connect(&redis.url(), "bull").await.unwrap();
    // The registry's (no guest runs here).
    let sandbox = Arc::new(
        Sandbox::new(SandboxConfig {
            max_instances: 1,
            ..SandboxConfig::default()
        })
        .unwrap(),
    );
    let registry = Registry::new(store.clone(), sandbox);
    let queues = QueueService::new(store);
    let route = OnFailure {
        queue: Some("dead-letters".into()),
        event: None,
    };
    // A job BullMQ failed for good at `at`, as its scripts leave it.
    let failed = |id: &str, at: u64| {
        let key = format!("bull:fragile:{id}");
        redis.cli(&[
            "HSET",
            &key,
            "name",
            "item",
            "data",
            "{}",
            "failedReason",
            "guest_fatal: refused",
            "atm",
            "1",
            "finishedOn",
            &at.to_string(),
        ]);
        redis.cli(&["ZADD", "bull:fragile:failed", &at.to_string(), id]);
    };
    let letters = || redis.cli(&["LLEN", "bull:dead-letters:wait"]);
    let at = airlock_core::clock::now_ms();
    for i in 0..250 {
        failed(&format!("flood-{i}"), at);
    }
    announce(&queues, &registry, "fragile", &route, 30_000)
        .await
        .unwrap();
    assert_eq!(letters(), "250", "a flood in one millisecond, in one pass");

    failed("late", at - 5_000);
    announce(&queues, &registry, "fragile", &route, 30_000)
        .await
        .unwrap();
    assert_eq!(
        letters(),
        "251",
        "a failure recorded late with an earlier time"
    );
    announce(&queues, &registry, "fragile", &route, 30_000)
        .await
        .unwrap();
    assert_eq!(letters(), "251", "each announced once");
}

/// A child its parent waits for cannot join its queue's debounce (a burst
/// could replace it, and the parent would wait for a job that is gone):
/// the invoke is refused naming the child's data and the rule.
#[tokio::test(flavor = "multi_thread")]
async fn an_invoked_child_cannot_join_a_debounce() {
    let api = Api::start();
    api.setup(
        "parents",
        "work-probe",
        json!({"starts": {"queues": ["kids"]}}),
    )
    .await;
    let (status, body) = api
        .put(
            "/v1/queues/kids",
            tokens::ADMIN,
            json!({"handler": "work-probe", "debounce": {"key": "$.sku", "periodMs": 1000}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let parent = api
        .enqueue(
            "parents",
            json!({"name": "order", "data": {"invoke": [
                {"queue": "kids", "name": "restock", "data": {"sku": "a-1"}},
            ]}}),
        )
        .await;
    let job = api.wait_done(&parent).await;
    assert_eq!(job["state"], "failed", "{job}");
    let reason = job["failedReason"].as_str().unwrap();
    assert!(
        reason.contains("jobs[0].data") && reason.contains("debounce"),
        "{reason}"
    );
    assert_eq!(
        api.redis.cli(&["KEYS", "bull:kids:c-*"]),
        "",
        "no child added"
    );
}
