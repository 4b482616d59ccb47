//! Cancellation and a job's time to finish, through real hosts and Redis:
//! a running guest stopped on whichever host runs it, waiting, delayed and
//! sleeping jobs failed without running, a cancel that outlives the host
//! running the job, the refusals, and `finishTimeoutMs` while a job runs,
//! sleeps or waits.

use airlock_tests::api::{Api, error_field};
use airlock_tests::host::{HostOptions, HostProcess, tokens};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// A queue whose guest spins until something stops it: no fuel, and a
/// run deadline far beyond any test.
fn spinning() -> Value {
    json!({"metered": false, "concurrency": 1, "limits": {"timeoutMs": 120_000}})
}

async fn cancel(api: &Api, job_ref: &str, body: Value) -> (StatusCode, Value) {
    api.post(
        &format!("/v1/jobs/{job_ref}/cancel"),
        tokens::PRODUCER,
        body,
    )
    .await
}

/// Asserts the job failed as `cancelled` on its first attempt.
fn assert_cancelled(job: &Value) {
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["failureKind"], "cancelled", "{job}");
    assert_eq!(job["attemptsMade"], 1, "not retried: {job}");
}

/// Whether a guest ran for the job: every run that does not complete
/// leaves its summary line in the job's log.
fn ran(job: &Value) -> bool {
    job["logs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l.as_str().unwrap().starts_with("[airlock] run "))
}

fn second_host(api: &Api, id: &str) -> HostProcess {
    HostProcess::start(
        &api.redis.url(),
        HostOptions {
            id: id.into(),
            ..HostOptions::default()
        },
    )
}

#[tokio::test]
async fn a_running_guest_is_stopped_on_whichever_host_runs_it() {
    let api = Api::start();
    api.setup("spin", "hostile-infinite-loop", spinning()).await;
    api.setup("noop", "noop", json!({})).await;
    let _b = second_host(&api, "host-b");

    // One job per host: each serves the queue one job at a time.
    let jobs = [
        api.enqueue("spin", json!({"data": {}, "opts": {"attempts": 3}}))
            .await,
        api.enqueue("spin", json!({"data": {}, "opts": {"attempts": 3}}))
            .await,
    ];
    let mut hosts = Vec::new();
    for job in &jobs {
        let active = api
            .wait_until(job, "active", |j| j["state"] == "active")
            .await;
        hosts.push(active["processedByHost"].as_str().unwrap().to_string());
    }
    hosts.sort();
    assert_eq!(hosts, ["api-host", "host-b"], "one job on each host");
    // Active is not running yet: a host may still be compiling the
    // component, and a cancel then fails the job before its guest starts
    // (the compile test below). A host holds memory for a guest once the
    // component is loaded, right before the guest starts: wait until both
    // hosts' heartbeats say so.
    airlock_tests::eventually("both hosts to start their guest", || async {
        let (status, fleet) = api.get("/v1/hosts", tokens::ADMIN).await;
        assert_eq!(status, StatusCode::OK, "{fleet}");
        let holding = fleet["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|h| h["memoryHeldBytes"].as_u64().unwrap_or(0) > 0)
            .count();
        holding == 2
    })
    .await;

    for job in &jobs {
        let (status, accepted) = cancel(&api, job, json!({"reason": "customer left"})).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
        assert_eq!(accepted["was"], "active", "{accepted}");
    }
    for job in &jobs {
        let done = api.wait_done(job).await;
        assert_cancelled(&done);
        assert_eq!(
            done["failedReason"],
            "cancelled: customer left (by `web` through the API)"
        );
        let job = api.job(job).await;
        assert!(
            ran(&job) && job["logs"].to_string().contains("run failed (cancelled)"),
            "the run was stopped, and says so: {job}"
        );
    }

    // Both hosts go on running jobs.
    let mut served = std::collections::BTreeSet::new();
    for _ in 0..20 {
        let job = api.enqueue("noop", json!({"data": {}})).await;
        let done = api.wait_done(&job).await;
        assert_eq!(done["state"], "completed", "{done}");
        served.insert(done["processedByHost"].as_str().unwrap().to_string());
        if served.len() == 2 {
            break;
        }
    }
    assert_eq!(served.len(), 2, "both hosts still serve: {served:?}");
}

/// The state a cancel answers is the one its mark met: a running job is
/// `active` even though the host it runs on fails it within milliseconds
/// of hearing the cancel (the state used to be read after the fleet was
/// told, and could say `failed`). Several cancels at once widen the window
/// the old order lost.
#[tokio::test]
async fn a_cancel_answers_the_state_its_mark_met() {
    let api = Api::start();
    let queue = json!({"metered": false, "concurrency": 6, "limits": {"timeoutMs": 120_000}});
    api.setup("spin", "hostile-infinite-loop", queue).await;
    let mut jobs = Vec::new();
    for _ in 0..6 {
        jobs.push(api.enqueue("spin", json!({"data": {}})).await);
    }
    for job in &jobs {
        api.wait_until(job, "active", |j| j["state"] == "active")
            .await;
    }
    let answers =
        futures::future::join_all(jobs.iter().map(|job| cancel(&api, job, json!({})))).await;
    for (status, accepted) in &answers {
        assert_eq!(*status, StatusCode::ACCEPTED, "{accepted}");
        assert_eq!(accepted["was"], "active", "{accepted}");
    }
    for job in &jobs {
        assert_cancelled(&api.wait_done(job).await);
    }
    // Finished now: a second cancel is refused, naming the state.
    let (status, again) = cancel(&api, &jobs[0], json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    assert!(again.to_string().contains("is failed"), "{again}");
}

#[tokio::test]
async fn waiting_delayed_and_sleeping_jobs_fail_without_running() {
    let api = Api::start();
    api.setup("noop", "noop", json!({})).await;
    api.setup("spin", "hostile-infinite-loop", spinning()).await;
    api.setup("orders", "order-workflow", json!({})).await;

    // Delayed by an hour: failed now, not in an hour, and never run.
    let delayed = api
        .enqueue("noop", json!({"data": {}, "opts": {"delay": 3_600_000}}))
        .await;
    let (status, accepted) = cancel(&api, &delayed, json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    assert_eq!(accepted["was"], "delayed");
    let done = api.wait_done(&delayed).await;
    assert_cancelled(&done);
    assert_eq!(done["failedReason"], "cancelled: by `web` through the API");
    assert!(!ran(&api.job(&delayed).await));

    // Retried, a cancelled job runs again.
    let (status, body) = api
        .post(
            &format!("/v1/jobs/{delayed}/retry"),
            tokens::PRODUCER,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let again = api.wait_done(&delayed).await;
    assert_eq!(again["state"], "completed", "{again}");

    // In a durable sleep: failed, and its charge is not repeated.
    let order = api
        .enqueue(
            "orders",
            json!({"data": {"orderId": "S", "amount": 5, "reviewDelayMs": 3_600_000}}),
        )
        .await;
    api.wait_until(&order, "asleep", |j| j["state"] == "delayed")
        .await;
    let (status, accepted) = cancel(&api, &order, json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    assert_eq!(accepted["was"], "delayed");
    assert_cancelled(&api.wait_done(&order).await);
    let kv = "bull:airlock:kv:order-workflow:charges:S";
    assert_eq!(api.redis.cli(&["GET", kv]), "1", "charged once");

    // Waiting behind a running job: the next job its queue takes, and it
    // fails without running.
    let blocker = api.enqueue("spin", json!({"data": {}})).await;
    api.wait_until(&blocker, "active", |j| j["state"] == "active")
        .await;
    let behind: Vec<String> = {
        let mut refs = Vec::new();
        for _ in 0..3 {
            refs.push(api.enqueue("spin", json!({"data": {}})).await);
        }
        refs
    };
    let last = &behind[2];
    let (status, accepted) = cancel(&api, last, json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    assert_eq!(accepted["was"], "waiting");
    let (status, _) = cancel(&api, &blocker, json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_cancelled(&api.wait_done(&blocker).await);
    let done = api.wait_done(last).await;
    assert_cancelled(&done);
    assert!(!ran(&api.job(last).await));
    // It went first: the one enqueued before it took the freed slot after.
    let next = api
        .wait_until(&behind[0], "active", |j| j["state"] == "active")
        .await;
    assert!(
        next["processedOn"].as_u64().unwrap() >= done["finishedOn"].as_u64().unwrap(),
        "the cancelled job was taken first: {next} {done}"
    );
    for job in &behind[..2] {
        cancel(&api, job, json!({})).await;
    }
}

#[tokio::test]
async fn a_cancel_outlives_the_host_running_the_job() {
    let mut api = Api::start();
    api.setup("spin", "hostile-infinite-loop", spinning()).await;
    let mut b = second_host(&api, "host-b");
    let job = api.enqueue("spin", json!({"data": {}})).await;
    let active = api
        .wait_until(&job, "active", |j| j["state"] == "active")
        .await;
    let runner = active["processedByHost"].as_str().unwrap().to_string();
    // Kill the host running it, then cancel: only the mark can stop it.
    let survivor = if runner == "api-host" {
        api.host.kill9();
        let survivor = HostProcess::start(
            &api.redis.url(),
            HostOptions {
                id: "api-2".into(),
                api: true,
                ..HostOptions::default()
            },
        );
        api.url = survivor.api_url();
        Some(survivor)
    } else {
        b.kill9();
        None
    };
    let (status, accepted) = cancel(&api, &job, json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    assert_eq!(accepted["was"], "active");
    // The live host's stalled check takes the job back; its worker fails
    // it on the mark, without running it again.
    let done = api.wait_done(&job).await;
    assert_eq!(done["state"], "failed", "{done}");
    assert_eq!(done["failureKind"], "cancelled", "{done}");
    assert!(!ran(&api.job(&job).await), "no run after the kill finished");
    drop(survivor);
}

#[tokio::test]
async fn cancels_are_refused_clearly() {
    let api = Api::start();
    api.setup("noop", "noop", json!({})).await;
    let job = api.enqueue("noop", json!({"data": {}})).await;
    api.wait_done(&job).await;

    let (status, body) = cancel(&api, &job, json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is completed"),
        "{body}"
    );

    let waiting = api
        .enqueue("noop", json!({"data": {}, "opts": {"delay": 3_600_000}}))
        .await;
    let (status, body) = cancel(&api, &waiting, json!({"reason": "x".repeat(501)})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_field(&body), "reason");
    let (status, body) = cancel(&api, &waiting, json!({"why": "no"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = api
        .post(
            &format!("/v1/jobs/{waiting}/cancel"),
            tokens::OTHER_PRODUCER,
            json!({}),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "another tenant's job: {body}"
    );
    let (status, body) = api
        .post(
            &format!("/v1/jobs/{waiting}/cancel"),
            tokens::READER,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = cancel(&api, "noop:nope", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    // None of those touched the job.
    let still = api.job(&waiting).await;
    assert_eq!(still["state"], "delayed", "{still}");
}

#[tokio::test]
async fn a_job_past_its_time_to_finish_fails_as_timed_out() {
    let api = Api::start();
    let mut spin = spinning();
    spin["finishTimeoutMs"] = json!(1500);
    api.setup("spin", "hostile-infinite-loop", spin).await;
    api.setup("orders", "order-workflow", json!({"finishTimeoutMs": 2000}))
        .await;
    api.setup("noop", "noop", json!({"finishTimeoutMs": 1000}))
        .await;

    // Running: stopped at the deadline, not the run's own 120 s one.
    let running = api
        .enqueue("spin", json!({"data": {}, "opts": {"attempts": 3}}))
        .await;
    let done = api.wait_done(&running).await;
    assert_eq!(done["failureKind"], "timed_out", "{done}");
    assert_eq!(done["attemptsMade"], 1, "not retried: {done}");
    let took = done["finishedOn"].as_u64().unwrap() - done["timestamp"].as_u64().unwrap();
    assert!(took >= 1500, "{took} ms");

    // Sleeping past it: woken at the deadline to fail, charged once.
    let order = api
        .enqueue(
            "orders",
            json!({"data": {"orderId": "T", "amount": 5, "reviewDelayMs": 3_600_000}}),
        )
        .await;
    let asleep = api
        .wait_until(&order, "asleep", |j| j["state"] == "delayed")
        .await;
    assert_eq!(asleep["attemptsMade"], 0);
    let done = api.wait_done(&order).await;
    assert_eq!(done["failureKind"], "timed_out", "{done}");
    let kv = "bull:airlock:kv:order-workflow:charges:T";
    assert_eq!(api.redis.cli(&["GET", kv]), "1");

    // Waiting past it (a paused queue): failed when taken, never run.
    let (status, _) = api
        .post("/v1/queues/noop/pause", tokens::ADMIN, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let waiting = api.enqueue("noop", json!({"data": {}})).await;
    let job = api.job(&waiting).await;
    let deadline = job["timestamp"].as_u64().unwrap() + 1000;
    while airlock_core::clock::now_ms() <= deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (status, _) = api
        .post("/v1/queues/noop/resume", tokens::ADMIN, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let done = api.wait_done(&waiting).await;
    assert_eq!(done["failureKind"], "timed_out", "{done}");
    assert_eq!(
        done["failedReason"],
        "timed_out: not finished within 1s of becoming ready (the binding's finishTimeoutMs)"
    );

    // A job enqueued with a delay counts from when the delay ends.
    let later = api
        .enqueue("noop", json!({"data": {}, "opts": {"delay": 1200}}))
        .await;
    assert_eq!(api.wait_done(&later).await["state"], "completed");
}

#[tokio::test]
async fn a_finish_timeout_out_of_range_is_refused() {
    let api = Api::start();
    api.setup("noop", "noop", json!({})).await;
    for bad in [json!(0), json!(31_536_000_001u64), json!("10s")] {
        let (status, body) = api
            .put(
                "/v1/queues/noop",
                tokens::ADMIN,
                json!({"handler": "noop", "finishTimeoutMs": bad}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_eq!(error_field(&body), "finishTimeoutMs", "{body}");
    }
}

#[tokio::test]
async fn an_event_cancels_the_running_and_sleeping_jobs_it_matches() {
    let api = Api::start();
    api.setup(
        "orders",
        "order-workflow",
        json!({
            "metered": false,
            "limits": {"timeoutMs": 120_000},
            "cancelOn": [{"event": "order.cancelled", "match": "$.orderId", "eventMatch": "$.order.id"}],
        }),
    )
    .await;
    let _b = second_host(&api, "host-b");
    let order = |id: &str, extra: Value| {
        let mut data = json!({"orderId": id, "amount": 5, "reviewDelayMs": 3_600_000});
        data.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({ "data": data })
    };
    let asleep = api.enqueue("orders", order("A", json!({}))).await;
    let untouched = api.enqueue("orders", order("C", json!({}))).await;
    let running = api
        .enqueue("orders", order("B", json!({"pauseAfterChargeMs": 60_000})))
        .await;
    for job in [&asleep, &untouched] {
        api.wait_until(job, "asleep", |j| j["state"] == "delayed")
            .await;
    }
    api.wait_until(&running, "charged", |j| {
        j["state"] == "active" && j["steps"].to_string().contains("charge-payment")
    })
    .await;
    let send = |token: &'static str, id: &str| {
        let event = json!({"name": "order.cancelled", "data": {"order": {"id": id}}});
        let api = &api;
        async move {
            let (status, delivery) = api.post("/v1/events", token, event).await;
            assert_eq!(status, StatusCode::ACCEPTED, "{delivery}");
            delivery
        }
    };

    // Another tenant's event matches nothing of ours.
    let delivery = send(tokens::OTHER_PRODUCER, "A").await;
    assert_eq!(delivery["cancelled"], json!([]), "{delivery}");
    assert_eq!(api.job(&asleep).await["state"], "delayed");

    let delivery = send(tokens::PRODUCER, "A").await;
    assert_eq!(delivery["cancelled"], json!([asleep]), "{delivery}");
    // The events view lists what the event cancelled (the sender sees it).
    let (status, recent) = api.get("/v1/events?limit=5", tokens::PRODUCER).await;
    assert_eq!(status, StatusCode::OK, "{recent}");
    let listed = recent["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == delivery["eventId"])
        .unwrap_or_else(|| panic!("the event is listed: {recent}"));
    assert_eq!(listed["cancelled"], json!([asleep]), "{listed}");
    assert_eq!(listed["resumed"], json!([]), "{listed}");
    let done = api.wait_done(&asleep).await;
    assert_cancelled(&done);
    assert!(
        done["failedReason"]
            .as_str()
            .unwrap()
            .starts_with("cancelled: event `order.cancelled` ("),
        "{done}"
    );
    assert!(
        done["failedReason"]
            .as_str()
            .unwrap()
            .ends_with(r#"matched $.orderId = "A""#),
        "{done}"
    );

    let delivery = send(tokens::PRODUCER, "B").await;
    assert_eq!(delivery["cancelled"], json!([running]), "{delivery}");
    let done = api.wait_done(&running).await;
    assert_cancelled(&done);

    // The same event again finds nothing left to cancel; C sleeps on.
    let delivery = send(tokens::PRODUCER, "A").await;
    assert_eq!(delivery["cancelled"], json!([]), "{delivery}");
    assert_eq!(api.job(&untouched).await["state"], "delayed");
    for order in ["A", "B"] {
        let kv = format!("bull:airlock:kv:order-workflow:charges:{order}");
        assert_eq!(api.redis.cli(&["GET", &kv]), "1", "{order} charged once");
    }
}

/// A cancel that arrives while the host is still compiling the job's
/// component fails the job at once, without its guest ever starting; the
/// compile goes on, for the cache and the jobs after it. The host that
/// takes the job has no fleet artifact key, so it cannot use the artifact
/// the upload published, and a cache directory of its own (the test hosts
/// share one), so it compiles the (StarlingMonkey, ~12 MiB) component
/// itself.
#[tokio::test]
async fn a_cancel_during_the_compile_does_not_wait_for_it() {
    let api = Api::start_with(&["--queues", "noop"]);
    api.setup("slow", "js_warm_probe", json!({})).await;
    let cache = tempfile::tempdir().unwrap();
    let compiler = HostProcess::start(
        &api.redis.url(),
        HostOptions {
            id: "compiler".into(),
            env: Vec::new(),
            extra: vec!["--cache-dir".into(), cache.path().display().to_string()],
            ..HostOptions::default()
        },
    );
    let job = api.enqueue("slow", json!({"data": {}})).await;
    let active = api
        .wait_until(&job, "active", |j| j["state"] == "active")
        .await;
    assert_eq!(active["processedByHost"], "compiler", "{active}");
    assert!(
        !compiler.log().contains("compiled a component"),
        "the compile should still be going: {}",
        compiler.log()
    );

    let (status, accepted) = cancel(&api, &job, json!({"reason": "too slow"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    assert_eq!(accepted["was"], "active", "{accepted}");
    let done = api.wait_done(&job).await;
    assert_cancelled(&done);
    assert!(
        !compiler.log().contains("compiled a component"),
        "the job was failed only once the compile ended: {}",
        compiler.log()
    );
    assert!(!ran(&api.job(&job).await), "its guest never started");
    // The compile went on without the job.
    airlock_tests::eventually::eventually("the compile to finish", || async {
        compiler.log().contains("compiled a component")
    })
    .await;
}
