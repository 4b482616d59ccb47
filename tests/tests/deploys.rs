//! Safe deploys through a real host and Redis: a canary sends its share
//! of new jobs to a candidate version and the stats report both versions
//! side by side; a rollback removes the canary, then puts the handler back
//! a version, and hosts follow within their registry poll.

use std::time::{Duration, Instant};

use airlock_tests::api::Api;
use airlock_tests::host::tokens;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The queue's completed runs by version, once they add up to `total`.
async fn completed_by_version(api: &Api, queue: &str, total: u64) -> Value {
    airlock_tests::eventually_some(
        "every run tallied by version",
        Duration::from_secs(120),
        || async {
            let (_, stats) = api
                .get(
                    &format!("/v1/stats?queue={queue}&minutes=10"),
                    tokens::READER,
                )
                .await;
            let sum: u64 = stats["versions"]
                .as_object()?
                .values()
                .map(|v| v["runs"]["completed"].as_u64().unwrap_or(0))
                .sum();
            (sum == total).then_some(stats["versions"].clone())
        },
    )
    .await
}

#[tokio::test]
async fn a_canary_at_ten_percent_runs_a_tenth_of_new_jobs_and_a_rollback_undoes_it() {
    let api = Api::start();
    let candidate = api.upload_version("probe", "data-probe").await;
    let current = api.upload_version("probe", "noop").await;

    // Bad canaries name their field.
    for (canary, field) in [
        (json!({"digest": "nope", "percent": 10}), "canary.digest"),
        (json!({"digest": candidate, "percent": 0}), "canary.percent"),
        (
            json!({"digest": "0".repeat(64), "percent": 10}),
            "canary.digest",
        ),
    ] {
        let (status, body) = api
            .put(
                "/v1/queues/probe",
                tokens::ADMIN,
                json!({"handler": "probe", "canary": canary}),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["field"], field, "{body}");
    }
    let (status, body) = api
        .put(
            "/v1/queues/probe",
            tokens::ADMIN,
            json!({"handler": "probe", "canary": {"digest": candidate, "percent": 10}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let jobs: Vec<Value> = (0..1000).map(|n| json!({"data": {"n": n}})).collect();
    let (status, body) = api
        .post(
            "/v1/queues/probe/jobs/bulk",
            tokens::PRODUCER,
            json!({"jobs": jobs}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let versions = completed_by_version(&api, "probe", 1000).await;
    let runs = |digest: &str| versions[digest]["runs"]["completed"].as_u64().unwrap_or(0);
    let (to_candidate, to_current) = (runs(&candidate), runs(&current));
    assert_eq!(to_candidate + to_current, 1000, "{versions}");
    println!("the canary took {to_candidate} of 1000 jobs");
    assert!(
        (60..=140).contains(&to_candidate),
        "about 10 % of 1000 to the candidate: {to_candidate} ({versions})"
    );
    for digest in [&candidate, &current] {
        assert!(versions[digest]["wallMs"].as_u64().is_some(), "{versions}");
        assert!(versions[digest]["fuel"].as_u64().unwrap() > 0, "{versions}");
    }
    // The CLI shows both side by side.
    let out = std::process::Command::new(airlock_tests::airlock_bin())
        .args(["queue", "versions", "probe", "--minutes", "10"])
        .env("AIRLOCK_URL", &api.url)
        .env("AIRLOCK_TOKEN", tokens::READER)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for (digest, n) in [(&candidate, to_candidate), (&current, to_current)] {
        assert!(text.contains(&format!("{digest}  {n} runs")), "{text}");
    }
    // Each job ran the version its hash chose, and says so.
    let refs: Vec<String> = body["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .take(50)
        .map(|j| j["ref"].as_str().unwrap().to_string())
        .collect();
    for job in &refs {
        let digest = api.job(job).await["handlerDigest"].clone();
        assert!(
            digest == json!(candidate) || digest == json!(current),
            "{digest}"
        );
    }

    // The first rollback removes the canary; the second puts the handler
    // back a version (data-probe, uploaded before the no-op); hosts follow
    // within their registry poll (500 ms).
    let (status, done) = api
        .post("/v1/queues/probe/rollback", tokens::ADMIN, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["canaryRemoved"], candidate, "{done}");
    let (_, binding) = api.get("/v1/queues/probe", tokens::ADMIN).await;
    assert_eq!(binding["canary"], Value::Null, "{binding}");

    let (status, done) = api
        .post("/v1/queues/probe/rollback", tokens::ADMIN, json!({}))
        .await;
    let rolled_back = Instant::now();
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(
        (&done["from"], &done["to"]),
        (&json!(current), &json!(candidate)),
        "{done}"
    );
    assert_eq!(done["queues"], json!(["probe"]));
    // One job every 50 ms for 1.5 s: each records when it was added and
    // the version it ran.
    let mut added = Vec::new();
    while rolled_back.elapsed() < Duration::from_millis(1500) {
        let job = api.enqueue("probe", json!({"data": {}})).await;
        added.push((rolled_back.elapsed(), job));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut switched_by = None;
    for (at, job) in &added {
        let done = api.wait_done(job).await;
        if done["handlerDigest"] == json!(candidate) && switched_by.is_none() {
            switched_by = Some(*at);
        }
        if *at >= Duration::from_millis(700) {
            assert_eq!(
                done["handlerDigest"], candidate,
                "a job added {at:?} after the rollback runs the version rolled back to"
            );
        }
    }
    let switched_by = switched_by.expect("some job ran the rolled-back version");
    println!("first job on the rolled-back version was added {switched_by:?} after the rollback");

    // Only an admin rolls back; a handler with one version has nothing to
    // go back to.
    let (status, body) = api
        .post("/v1/queues/probe/rollback", tokens::READER, json!({}))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    api.setup("solo", "noop", json!({})).await;
    let (status, body) = api
        .post("/v1/queues/solo/rollback", tokens::ADMIN, json!({}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("has no version before its current one"),
        "{body}"
    );
}
