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

/// The digests the next `n` jobs of `queue` ran, each to its end.
async fn ran(api: &Api, queue: &str, n: usize) -> Vec<String> {
    let jobs: Vec<Value> = (0..n).map(|i| json!({"data": {"n": i}})).collect();
    let (status, body) = api
        .post(
            &format!("/v1/queues/{queue}/jobs/bulk"),
            tokens::PRODUCER,
            json!({"jobs": jobs}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let mut digests = Vec::with_capacity(n);
    for job in body["jobs"].as_array().unwrap() {
        // Recorded: a job is pinned to the version it ran as its run is.
        let done = api.wait_recorded(job["ref"].as_str().unwrap()).await;
        assert_eq!(done["state"], "completed", "{done}");
        digests.push(done["handlerDigest"].as_str().unwrap().to_string());
    }
    digests
}

fn all(digests: &[String], digest: &str) -> bool {
    digests.iter().all(|d| d == digest)
}

/// The flow as a user runs it: a candidate uploaded beside the current
/// version runs nowhere; a 20 % canary (set by the CLI from the digest)
/// sends about a fifth of new jobs to it; a promote makes it what this
/// queue runs while another queue of the same handler stays; a rollback
/// undoes the promote; a promote to every queue moves the other one too.
#[tokio::test]
async fn a_candidate_runs_nowhere_until_its_canary_and_a_promote_moves_only_its_queue() {
    let api = Api::start();
    let current = api.upload_version("probe", "noop").await;
    for queue in ["probe", "other"] {
        let (status, body) = api
            .put(
                &format!("/v1/queues/{queue}"),
                tokens::ADMIN,
                json!({"handler": "probe"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (status, uploaded) = api
        .call(
            reqwest::Method::POST,
            "/v1/handlers/probe?candidate=true",
            Some(tokens::ADMIN),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{uploaded}");
    let resp = api
        .http
        .post(format!("{}/v1/handlers/probe?candidate=true", api.url))
        .bearer_auth(tokens::ADMIN)
        .header("content-type", "application/wasm")
        .body(airlock_tests::guest_bytes("data-probe"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let uploaded: Value = resp.json().await.unwrap();
    assert_eq!(uploaded["candidate"], true, "{uploaded}");
    let candidate = uploaded["digest"].as_str().unwrap().to_string();
    let (_, handler) = api.get("/v1/handlers/probe", tokens::ADMIN).await;
    assert_eq!(handler["current"]["digest"], json!(current), "{handler}");

    // Uploaded, it runs nowhere.
    assert!(all(&ran(&api, "probe", 10).await, &current));
    assert!(all(&ran(&api, "other", 5).await, &current));

    // A fifth of new jobs, with a tolerance, once the CLI sets the canary.
    let out = std::process::Command::new(airlock_tests::airlock_bin())
        .args(["queue", "canary", "probe", &candidate, "--percent", "20"])
        .env("AIRLOCK_URL", &api.url)
        .env("AIRLOCK_TOKEN", tokens::ADMIN)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    airlock_tests::eventually("the hosts follow the canary", || async {
        ran(&api, "probe", 10).await.contains(&candidate)
    })
    .await;
    let canaried = ran(&api, "probe", 300).await;
    let to_candidate = canaried.iter().filter(|d| **d == candidate).count();
    println!("the 20 % canary took {to_candidate} of 300 jobs");
    assert!(
        (36..=84).contains(&to_candidate),
        "about 20 % of 300 to the candidate: {to_candidate}"
    );
    assert!(all(&ran(&api, "other", 5).await, &current));

    // Promoted on this queue: all of its new jobs, none of the other's.
    let (status, done) = api
        .post("/v1/queues/probe/promote", tokens::ADMIN, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(
        (&done["to"], &done["queues"], &done["current"]),
        (&json!(candidate), &json!(["probe"]), &json!(false)),
        "{done}"
    );
    airlock_tests::eventually("the hosts follow the promote", || async {
        all(&ran(&api, "probe", 3).await, &candidate)
    })
    .await;
    assert!(all(&ran(&api, "probe", 20).await, &candidate));
    assert!(all(&ran(&api, "other", 5).await, &current));
    let (status, done) = api
        .post("/v1/queues/probe/promote", tokens::ADMIN, json!({}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "no canary left: {done}");

    // Rolled back: the promote undone, on this queue only.
    let (status, done) = api
        .post("/v1/queues/probe/rollback", tokens::ADMIN, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(
        (&done["from"], &done["to"], &done["queues"]),
        (&json!(candidate), &json!(current), &json!(["probe"])),
        "{done}"
    );
    airlock_tests::eventually("the hosts follow the rollback", || async {
        all(&ran(&api, "probe", 3).await, &current)
    })
    .await;
    assert!(all(&ran(&api, "probe", 20).await, &current));

    // A canary from the component file (uploaded as a candidate: the same
    // bytes, the same version), then promoted to every queue: the other
    // one follows.
    let file = airlock_tests::guest_path("data-probe");
    let out = std::process::Command::new(airlock_tests::airlock_bin())
        .args(["queue", "canary", "probe"])
        .arg(&file)
        .args(["--percent", "50"])
        .env("AIRLOCK_URL", &api.url)
        .env("AIRLOCK_TOKEN", tokens::ADMIN)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains(&format!("50 % of new jobs run {candidate}")),
        "{said}"
    );
    let (_, handler) = api.get("/v1/handlers/probe", tokens::ADMIN).await;
    assert_eq!(handler["current"]["digest"], json!(current), "{handler}");
    let (status, done) = api
        .post(
            "/v1/queues/probe/promote",
            tokens::ADMIN,
            json!({"allQueues": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["current"], true, "{done}");
    let mut moved: Vec<&str> = (done["queues"].as_array().unwrap().iter())
        .filter_map(Value::as_str)
        .collect();
    moved.sort();
    assert_eq!(moved, ["other", "probe"], "{done}");
    airlock_tests::eventually("the other queue follows", || async {
        all(&ran(&api, "other", 3).await, &candidate)
    })
    .await;
}
