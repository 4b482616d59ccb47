//! Batches through a real host and Redis with the `batch-probe` guest,
//! whose completed jobs return the ids of every job of their batch: jobs
//! of different producers, handler versions, per-job limits or keys never
//! share a batch; each job of a batch ends with its own outcome (a
//! completion, a retry, a fatal failure); a panic retries every job of
//! its batch once; `minSize` and `timeoutMs` decide when a batch starts
//! (asserted on BullMQ's timestamps); a call that belongs to one job fails
//! the batch, naming it; a handler without `run-batch` cannot be bound
//! with `batch`.

use std::collections::{BTreeSet, HashMap};

use airlock_tests::api::{Api, error_field};
use airlock_tests::host::tokens;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The fleet's secrets key: it seals producers, which batches are
/// grouped by (a job whose producer does not verify runs alone).
const SECRETS_KEY: &str = "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

/// A host with the fleet's secrets key.
fn start() -> Api {
    Api::start_with(&["--secrets-key", SECRETS_KEY])
}

/// Adds a job to `queue` as `token`; its ref.
async fn add(api: &Api, queue: &str, token: &str, body: Value) -> String {
    let (status, accepted) = api
        .post(&format!("/v1/queues/{queue}/jobs"), token, body)
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    accepted["ref"].as_str().unwrap().to_string()
}

/// The ids a completed probe job shared its batch with (itself included).
fn batch_of(job: &Value) -> BTreeSet<String> {
    job["returnvalue"]["batch"]
        .as_array()
        .unwrap_or_else(|| panic!("no batch in {job}"))
        .iter()
        .map(|id| id.as_str().unwrap().to_string())
        .collect()
}

fn id_of(job_ref: &str) -> String {
    job_ref.split_once(':').unwrap().1.to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn batches_never_mix_producers_versions_limits_or_keys() {
    let api = start();
    // Two versions of a handler, both batch handlers: the queue runs the
    // first (`version`) and half its jobs on the second (`canary`). The
    // queue is bound once, so no job runs under a binding without the
    // canary.
    let current = api.upload_version("batch-probe", "batch-probe").await;
    let candidate = api.upload_version("batch-probe", "bulk-insert").await;
    assert_ne!(current, candidate);
    let (status, body) = api
        .put(
            "/v1/queues/rows",
            tokens::ADMIN,
            json!({"handler": "batch-probe", "version": current,
                   "canary": {"digest": candidate, "percent": 50},
                   "batch": {"size": 50, "timeoutMs": 1500, "key": "$.account"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // (token, account, per-job limits) of each job: every combination.
    let mut group_of: HashMap<String, String> = HashMap::new();
    for i in 0..48 {
        let token = if i % 2 == 0 {
            tokens::PRODUCER
        } else {
            tokens::OTHER_PRODUCER
        };
        let account = if i % 3 == 0 { "a" } else { "b" };
        let limited = i % 4 < 2;
        let mut body =
            json!({"data": {"account": account, "transactionId": format!("t{i}"), "amount": 1}});
        if limited {
            body["opts"] = json!({"limits": {"timeoutMs": 20_000}});
        }
        let job_ref = add(&api, "rows", token, body).await;
        group_of.insert(id_of(&job_ref), format!("{token}/{account}/{limited}"));
    }
    let mut digests: HashMap<String, String> = HashMap::new();
    let mut batches: HashMap<String, Vec<(String, Value)>> = HashMap::new();
    for id in group_of.keys() {
        let job = api.wait_recorded(&format!("rows:{id}")).await;
        assert_eq!(job["state"], "completed", "{job}");
        let digest = job["handlerDigest"].as_str().unwrap().to_string();
        digests.insert(id.clone(), digest);
        let batch = job["batch"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("no batch on {job}"))
            .to_string();
        batches.entry(batch).or_default().push((id.clone(), job));
    }
    assert!(
        digests.values().any(|d| *d == current) && digests.values().any(|d| *d == candidate),
        "both versions ran: {digests:?}"
    );
    for (batch, jobs) in &batches {
        let groups: BTreeSet<&String> = jobs.iter().map(|(id, _)| &group_of[id]).collect();
        let versions: BTreeSet<&String> = jobs.iter().map(|(id, _)| &digests[id]).collect();
        assert_eq!(groups.len(), 1, "batch {batch} mixed {groups:?}");
        assert_eq!(
            versions.len(),
            1,
            "batch {batch} mixed versions {versions:?}"
        );
        for (id, job) in jobs {
            assert_eq!(job["batch"]["size"], jobs.len(), "{job}");
            // The probe's own view of its batch, where it ran.
            if digests[id] == current {
                let ids: BTreeSet<String> = jobs.iter().map(|(id, _)| id.clone()).collect();
                assert_eq!(batch_of(job), ids, "batch {batch}");
            } else {
                assert_eq!(job["returnvalue"]["batchSize"], jobs.len(), "{job}");
            }
        }
    }
    // With a batch of 50 and 1.5 s to gather, the jobs of one group of
    // producer, key and limits that ran one version ran together.
    let pairs: BTreeSet<(&String, &String)> = group_of
        .iter()
        .map(|(id, group)| (group, &digests[id]))
        .collect();
    assert_eq!(batches.len(), pairs.len(), "{:?}", batches.keys());
    assert!(pairs.len() > 8, "eight groups, split by version: {pairs:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn each_job_of_a_batch_ends_with_its_own_outcome() {
    let api = start();
    api.setup(
        "rows",
        "batch-probe",
        json!({"batch": {"size": 3, "timeoutMs": 2000}}),
    )
    .await;
    let ok_ref = add(
        &api,
        "rows",
        tokens::PRODUCER,
        json!({"data": {}, "opts": {"attempts": 2}}),
    )
    .await;
    let fatal_ref = add(
        &api,
        "rows",
        tokens::PRODUCER,
        json!({"data": {"outcome": "fatal"}, "opts": {"attempts": 2}}),
    )
    .await;
    let retry = add(
        &api,
        "rows",
        tokens::PRODUCER,
        json!({"data": {"outcome": "retry"}, "opts": {"attempts": 2}}),
    )
    .await;

    let ok = api.wait_recorded(&ok_ref).await;
    assert_eq!(ok["state"], "completed", "{ok}");
    assert_eq!(ok["attemptsMade"], 1, "{ok}");
    assert_eq!(ok["batch"]["size"], 3, "the three ran as one batch: {ok}");
    assert_eq!(
        ok["progress"], 100,
        "the batch's progress is each job's: {ok}"
    );
    let logs = ok["logs"].to_string();
    assert!(
        logs.contains("batch of 3"),
        "the batch's log is each job's: {logs}"
    );

    let fatal = api.wait_done(&fatal_ref).await;
    assert_eq!(fatal["state"], "failed", "{fatal}");
    assert_eq!(
        fatal["attemptsMade"], 1,
        "a fatal error ends at once: {fatal}"
    );
    assert_eq!(fatal["failureKind"], "guest_fatal", "{fatal}");
    assert!(
        fatal["failedReason"]
            .as_str()
            .unwrap()
            .contains("asked to fail"),
        "{fatal}"
    );

    // `airlock job` names the batch and the jobs that ran in it.
    let out = std::process::Command::new(airlock_tests::airlock_bin())
        .args(["job", &ok_ref])
        .env("AIRLOCK_URL", &api.url)
        .env("AIRLOCK_TOKEN", tokens::ADMIN)
        .output()
        .expect("run airlock");
    let printed = String::from_utf8_lossy(&out.stdout);
    let line = printed
        .lines()
        .find(|l| l.starts_with("batch "))
        .unwrap_or_else(|| panic!("no batch line: {printed}"));
    assert!(line.contains("(3 jobs"), "{line}");
    for job_ref in [&ok_ref, &fatal_ref] {
        assert!(line.contains(job_ref.as_str()), "{job_ref} in {line}");
    }

    // The retried job ran again on its own attempt (a batch of one, after
    // the 2 s gathering timeout) and failed again, for good.
    let retry = api.wait_done(&retry).await;
    assert_eq!(retry["state"], "failed", "{retry}");
    assert_eq!(retry["attemptsMade"], 2, "{retry}");
    assert_eq!(retry["failureKind"], "guest_retry", "{retry}");
    assert!(
        retry["failedReason"]
            .as_str()
            .unwrap()
            .contains("asked to retry"),
        "{retry}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_panic_retries_every_job_of_its_batch_once() {
    let api = start();
    api.setup(
        "rows",
        "batch-probe",
        json!({"batch": {"size": 3, "timeoutMs": 2000}}),
    )
    .await;
    let mut refs = Vec::new();
    for outcome in ["ok", "ok", "panic"] {
        let body = json!({"data": {"outcome": outcome}, "opts": {"attempts": 3}});
        refs.push(add(&api, "rows", tokens::PRODUCER, body).await);
    }
    for job_ref in &refs {
        let job = api.wait_done(job_ref).await;
        // The probe panics on a first attempt only: every job failed once
        // with the batch, retryably, and completed on its second attempt.
        assert_eq!(job["state"], "completed", "{job}");
        assert_eq!(job["attemptsMade"], 2, "{job}");
        assert_eq!(job["returnvalue"]["attempt"], 2, "{job}");
        let logs = api.job(job_ref).await["logs"].to_string();
        assert!(
            logs.contains("panicked"),
            "the first run's end is in its log: {logs}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn min_size_and_timeout_decide_when_a_batch_starts() {
    let api = start();
    api.setup(
        "rows",
        "batch-probe",
        json!({"batch": {"size": 10, "minSize": 3, "timeoutMs": 1500}}),
    )
    .await;
    // Two jobs, fewer than `minSize`: they wait the whole timeout.
    let first = add(&api, "rows", tokens::PRODUCER, json!({"data": {}})).await;
    let second = add(&api, "rows", tokens::PRODUCER, json!({"data": {}})).await;
    let first = api.wait_done(&first).await;
    let second = api.wait_done(&second).await;
    let added = first["timestamp"].as_u64().unwrap();
    for job in [&first, &second] {
        assert_eq!(batch_of(job).len(), 2, "{job}");
        let finished = job["finishedOn"].as_u64().unwrap();
        assert!(
            finished >= added + 1500,
            "ran {} ms after the first add, before the 1500 ms timeout: {job}",
            finished - added
        );
    }
    // Three jobs reach `minSize`: they start without waiting it out.
    let mut refs = Vec::new();
    for _ in 0..3 {
        refs.push(add(&api, "rows", tokens::PRODUCER, json!({"data": {}})).await);
    }
    let mut jobs = Vec::new();
    for job_ref in &refs {
        jobs.push(api.wait_done(job_ref).await);
    }
    let first_added = jobs[0]["timestamp"].as_u64().unwrap();
    for job in &jobs {
        assert_eq!(batch_of(job).len(), 3, "{job}");
        let finished = job["finishedOn"].as_u64().unwrap();
        assert!(
            finished < first_added + 1500,
            "waited {} ms with minSize reached: {job}",
            finished - first_added
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_durable_step_in_a_batch_fails_it_naming_the_call() {
    let api = start();
    api.setup(
        "rows",
        "batch-probe",
        json!({"batch": {"size": 2, "timeoutMs": 2000}}),
    )
    .await;
    let plain = add(
        &api,
        "rows",
        tokens::PRODUCER,
        json!({"data": {}, "opts": {"attempts": 3}}),
    )
    .await;
    let step = add(
        &api,
        "rows",
        tokens::PRODUCER,
        json!({"data": {"outcome": "step"}, "opts": {"attempts": 3}}),
    )
    .await;
    for job_ref in [&plain, &step] {
        let job = api.wait_done(job_ref).await;
        assert_eq!(job["state"], "failed", "{job}");
        assert_eq!(job["attemptsMade"], 1, "fatal: not retried: {job}");
        assert_eq!(job["failureKind"], "guest_fatal", "{job}");
        let reason = job["failedReason"].as_str().unwrap();
        assert!(
            reason.contains("`step-lookup` is not available in a batch run"),
            "{reason}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_binding_needs_a_batch_handler_and_sane_bounds() {
    let api = start();
    api.setup("plain", "noop", json!({})).await;
    let (status, body) = api
        .put(
            "/v1/queues/plain",
            tokens::ADMIN,
            json!({"handler": "noop", "batch": {"size": 10, "timeoutMs": 100}}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_field(&body), "batch", "{body}");
    assert!(body.to_string().contains("run-batch"), "{body}");

    api.setup("rows", "batch-probe", json!({})).await;
    for (batch, field) in [
        (json!({"size": 0, "timeoutMs": 100}), "batch.size"),
        (
            json!({"size": 5, "minSize": 0, "timeoutMs": 100}),
            "batch.minSize",
        ),
        (json!({"size": 5, "timeoutMs": 600_000}), "batch.timeoutMs"),
    ] {
        let (status, body) = api
            .put(
                "/v1/queues/rows",
                tokens::ADMIN,
                json!({"handler": "batch-probe", "batch": batch}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(error_field(&body), field, "{body}");
    }
    let (status, body) = api
        .put(
            "/v1/queues/rows",
            tokens::ADMIN,
            json!({"handler": "batch-probe", "batch": {"size": 5, "timeoutMs": 100},
                   "warmInstances": {}}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_field(&body), "batch", "{body}");
}

/// A host SIGKILLed while its batch runs loses no job: the next host
/// recovers each, runs it once more, and it completes.
#[tokio::test(flavor = "multi_thread")]
async fn a_host_killed_mid_batch_loses_no_job_and_runs_each_once_more() {
    use airlock_tests::host::{HostOptions, HostProcess};
    let mut api = Api::start_with_options(HostOptions {
        extra: vec!["--secrets-key".into(), SECRETS_KEY.into()],
        ..HostOptions::default()
    });
    api.setup(
        "rows",
        "batch-probe",
        json!({"batch": {"size": 5, "timeoutMs": 500}}),
    )
    .await;
    let mut refs = Vec::new();
    for _ in 0..5 {
        let body = json!({"data": {"sleepMs": 3000}, "opts": {"attempts": 1}});
        refs.push(add(&api, "rows", tokens::PRODUCER, body).await);
    }
    // All five held by the host, the batch started (full: no timeout to
    // wait), its guest sleeping.
    airlock_tests::eventually_some(
        "the five jobs active in their batch",
        std::time::Duration::from_secs(20),
        || async {
            let mut active = 0;
            for job_ref in &refs {
                active += usize::from(api.job(job_ref).await["state"] == "active");
            }
            (active == 5).then_some(())
        },
    )
    .await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    api.host.kill9();

    let next = HostProcess::start(
        &api.redis.url(),
        HostOptions {
            id: "next".into(),
            api: true,
            extra: vec!["--secrets-key".into(), SECRETS_KEY.into()],
            ..HostOptions::default()
        },
    );
    api.url = next.api_url();
    for job_ref in &refs {
        let job = api.wait_done(job_ref).await;
        assert_eq!(job["state"], "completed", "{job}");
        assert_eq!(
            job["attemptsStarted"], 2,
            "taken twice: by the dead host, then once more: {job}"
        );
        assert_eq!(job["processedByHost"], "next", "{job}");
    }
}

/// A cancel answers for a job of a batch: one still gathering leaves its
/// group and fails at once as `cancelled` (its batch runs without it); one
/// whose batch runs ends `cancelled` when the batch has run, its outcome
/// dropped, while the other jobs of the batch complete.
#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_answers_for_a_job_of_a_batch() {
    let api = start();
    api.setup(
        "rows",
        "batch-probe",
        json!({"batch": {"size": 3, "timeoutMs": 2000}}),
    )
    .await;
    // Gathering: the group holds one job of three.
    let gathering = add(&api, "rows", tokens::PRODUCER, json!({"data": {}})).await;
    api.wait_until(&gathering, "active", |j| j["state"] == "active")
        .await;
    let (status, body) = api
        .post(
            &format!("/v1/jobs/{gathering}/cancel"),
            tokens::PRODUCER,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let cancelled = api.wait_done(&gathering).await;
    assert_eq!(cancelled["failureKind"], "cancelled", "{cancelled}");
    assert!(
        cancelled["finishedOn"].as_u64().unwrap() < cancelled["timestamp"].as_u64().unwrap() + 2000,
        "failed at once, not when the group's timeout came: {cancelled}"
    );
    assert!(
        cancelled["batch"].is_null(),
        "it ran in no batch: {cancelled}"
    );

    // Running: a batch of three sleeping 1.5 s, one of them cancelled.
    let mut refs = Vec::new();
    for _ in 0..3 {
        let body = json!({"data": {"sleepMs": 1500}});
        refs.push(add(&api, "rows", tokens::PRODUCER, body).await);
    }
    for job_ref in &refs {
        api.wait_until(job_ref, "active", |j| j["state"] == "active")
            .await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (status, body) = api
        .post(
            &format!("/v1/jobs/{}/cancel", refs[0]),
            tokens::PRODUCER,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let first = api.wait_recorded(&refs[0]).await;
    assert_eq!(first["failureKind"], "cancelled", "{first}");
    assert_eq!(first["batch"]["size"], 3, "it ran in its batch: {first}");
    for job_ref in &refs[1..] {
        let done = api.wait_done(job_ref).await;
        assert_eq!(done["state"], "completed", "{done}");
        assert_eq!(batch_of(&done).len(), 3, "{done}");
    }
}

/// `concurrency` counts batches: with 1, the batches of four keys (one job
/// each, each run 300 ms long) run one after another, never two at once.
#[tokio::test(flavor = "multi_thread")]
async fn concurrency_counts_batches_on_a_host() {
    let api = start();
    api.setup(
        "rows",
        "batch-probe",
        json!({"concurrency": 1,
               "batch": {"size": 4, "minSize": 1, "timeoutMs": 100, "key": "$.account"}}),
    )
    .await;
    let mut refs = Vec::new();
    for account in ["a", "b", "c", "d"] {
        let body = json!({"data": {"account": account, "sleepMs": 300}});
        refs.push(add(&api, "rows", tokens::PRODUCER, body).await);
    }
    // Each batch's run sleeps 300 ms from its start: one at a time, their
    // starts are at least that far apart. (BullMQ's `finishedOn` comes
    // after the run, with the job's own finish, so it is not compared.)
    let mut starts = Vec::new();
    for job_ref in &refs {
        let job = api.wait_done(job_ref).await;
        assert_eq!(job["state"], "completed", "{job}");
        assert_eq!(batch_of(&job).len(), 1, "one key a batch: {job}");
        starts.push(job["returnvalue"]["startedAt"].as_u64().unwrap());
    }
    starts.sort();
    for pair in starts.windows(2) {
        assert!(
            pair[1] >= pair[0] + 300,
            "two batches ran at once: {starts:?}"
        );
    }
}

/// Jobs the API added while their queue was bound without `batch` carry
/// BullMQ's integer ids and their producer beside them; once the queue is
/// bound with `batch`, two producers' such jobs never share a batch.
#[tokio::test(flavor = "multi_thread")]
async fn earlier_jobs_of_two_producers_never_share_a_batch() {
    let api = start();
    api.setup("rows", "batch-probe", json!({})).await;
    let (status, body) = api
        .post("/v1/queues/rows/pause", tokens::ADMIN, json!({}))
        .await;
    assert!(status.is_success(), "{body}");
    let mut producer_of = HashMap::new();
    for i in 0..6 {
        let token = if i % 2 == 0 {
            tokens::PRODUCER
        } else {
            tokens::OTHER_PRODUCER
        };
        let job_ref = add(&api, "rows", token, json!({"data": {}})).await;
        assert!(
            id_of(&job_ref).bytes().all(|b| b.is_ascii_digit()),
            "an id of BullMQ's: {job_ref}"
        );
        producer_of.insert(id_of(&job_ref), token);
    }
    let (status, body) = api
        .put(
            "/v1/queues/rows",
            tokens::ADMIN,
            json!({"handler": "batch-probe", "batch": {"size": 6, "timeoutMs": 1500}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // The host runs the new binding before the queue resumes.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let (status, body) = api
        .post("/v1/queues/rows/resume", tokens::ADMIN, json!({}))
        .await;
    assert!(status.is_success(), "{body}");
    for id in producer_of.keys() {
        let job = api.wait_done(&format!("rows:{id}")).await;
        assert_eq!(job["state"], "completed", "{job}");
        let batch = batch_of(&job);
        let producers: BTreeSet<&str> = batch.iter().map(|id| producer_of[id]).collect();
        assert_eq!(producers.len(), 1, "a batch mixed producers: {job}");
        assert_eq!(batch.len(), 3, "each producer's three together: {job}");
    }
}

/// A host stopped gracefully runs the batches still gathering at once,
/// rather than waiting out their timeout, and finishes their jobs.
#[tokio::test(flavor = "multi_thread")]
async fn a_stopping_host_runs_the_batches_gathering() {
    let mut api = start();
    api.setup(
        "rows",
        "batch-probe",
        json!({"batch": {"size": 10, "timeoutMs": 60_000}}),
    )
    .await;
    let mut refs = Vec::new();
    for _ in 0..2 {
        refs.push(add(&api, "rows", tokens::PRODUCER, json!({"data": {}})).await);
    }
    for job_ref in &refs {
        api.wait_until(job_ref, "active", |j| j["state"] == "active")
            .await;
    }
    let code = api.host.terminate(std::time::Duration::from_secs(20));
    assert_eq!(code, Some(0), "the host stopped cleanly");
    let mut conn = redis::Client::open(api.redis.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    for job_ref in &refs {
        let key = format!("bull:{}", job_ref);
        let returned: Option<String> = redis::AsyncCommands::hget(&mut conn, &key, "returnvalue")
            .await
            .unwrap();
        let returned: Value =
            serde_json::from_str(&returned.expect("completed before the host exited")).unwrap();
        assert_eq!(
            returned["batch"].as_array().map(Vec::len),
            Some(2),
            "{returned}"
        );
    }
}
