//! Warm instances (`warmInstances` on a binding; `sandbox::warm`): a job
//! may run in the instance an earlier completed job of the same owner left.
//! These tests hold the rules a security reviewer relies on, against real
//! guests that keep every job they ran in a global (`warm-probe` in Rust,
//! TypeScript and Python): nothing of one owner (tenant) ever reaches
//! another, nothing at all persists with reuse off, an instance that
//! trapped, failed, ran out of fuel or time, was cancelled or hit its
//! memory cap is never used again, and per-job fuel and memory stay the
//! job's own.

use std::sync::Arc;
use std::time::Duration;

use airlock::sandbox::{
    Completion, FailureKind, JobInput, Limits, LoadedComponent, LocalServices, Reuse, RunEnv,
    RunOutcome, Sandbox, SandboxConfig, stop_pair,
};
use airlock_tests::guest_bytes;
use serde_json::{Value, json};

/// A sandbox on the run's shared artifact cache: each probe compiles once
/// per `make test`, not once per test (what is tested is reuse, not
/// compiling).
fn sandbox() -> Arc<Sandbox> {
    Arc::new(
        Sandbox::new(SandboxConfig {
            max_instances: 16,
            ..airlock_tests::shared_cache_config()
        })
        .expect("sandbox"),
    )
}

fn limits() -> Limits {
    Limits {
        fuel: Some(200_000_000),
        memory_bytes: 64 << 20,
        timeout: Duration::from_secs(10),
        ..Limits::default()
    }
}

fn reuse(owner: &str) -> Option<Reuse> {
    Some(Reuse {
        owner: owner.into(),
        max_jobs: 1000,
        max_idle: Duration::from_secs(60),
        max_kept: 4,
    })
}

/// Runs job `id` with `data` under `limits`, sharing instances as `reuse`
/// says.
fn run(
    sandbox: &Sandbox,
    component: &LoadedComponent,
    id: &str,
    data: Value,
    limits: &Limits,
    reuse: Option<Reuse>,
) -> RunOutcome {
    let env = RunEnv {
        reuse,
        ..RunEnv::default()
    };
    let job = JobInput {
        id: id.into(),
        queue: "warm".into(),
        name: "probe".into(),
        data: data.to_string(),
        attempt: 1,
        max_attempts: 1,
        enqueued_at_ms: 0,
        parent: None,
    };
    sandbox.guest_runtime().block_on(sandbox.run_async(
        component,
        job,
        limits,
        Box::new(LocalServices::new()),
        None,
        env,
    ))
}

/// The tags of the earlier jobs the probe saw in its instance.
fn seen(outcome: &RunOutcome) -> Vec<String> {
    let Completion::Completed(out) = &outcome.completion else {
        panic!("the probe did not complete: {:?}", outcome.completion);
    };
    out["seen"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["tag"].as_str().unwrap().to_string())
        .collect()
}

fn kind(outcome: &RunOutcome) -> FailureKind {
    match &outcome.completion {
        Completion::Failed(f) => f.kind,
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// The Rust, TypeScript (StarlingMonkey) and Python probes: the same data
/// and result shapes. Trap, spin and reveal modes are the Rust probe's only.
const PROBES: [&str; 3] = ["warm-probe", "js-warm-probe", "py-warm-probe"];

/// The TypeScript and Python SDKs reset their per-job state for every job:
/// a `ctx` an earlier job kept in a global refuses to be used (it would
/// otherwise log, step or fetch on behalf of a job that has ended), while
/// the global itself persists, as a module global of a reused BullMQ child
/// process would.
#[test]
fn a_context_kept_from_an_earlier_job_refuses_to_serve_a_later_one() {
    let sandbox = sandbox();
    for guest in ["js-warm-probe", "py-warm-probe"] {
        let probe = sandbox.load(&guest_bytes(guest)).unwrap();
        let l = limits();
        let owner = format!("{guest}-ctx");
        let first = run(
            &sandbox,
            &probe,
            "keep",
            json!({"tag": "k", "mode": "keep-ctx"}),
            &l,
            reuse(&owner),
        );
        assert_eq!(seen(&first), Vec::<String>::new(), "{guest}");
        let second = run(
            &sandbox,
            &probe,
            "next",
            json!({"tag": "n"}),
            &l,
            reuse(&owner),
        );
        assert!(second.warm, "{guest}");
        assert_eq!(seen(&second), vec!["k".to_string()], "{guest}");
        let Completion::Completed(out) = &second.completion else {
            unreachable!()
        };
        let stale = out["staleCtx"].as_str().unwrap_or_default();
        assert!(
            stale.starts_with("threw: "),
            "{guest}: a kept ctx {stale:?}"
        );
        assert!(
            !second.logs.iter().any(|l| l.message.contains("stale")),
            "{guest}: the stale ctx logged into the next job: {:?}",
            second.logs
        );
    }
}

#[test]
fn an_owner_sees_only_its_own_jobs_and_nothing_persists_without_reuse() {
    let sandbox = sandbox();
    for guest in PROBES {
        let probe = sandbox.load(&guest_bytes(guest)).unwrap();
        let l = limits();
        // With reuse off, every job starts from the pristine image.
        for i in 0..3 {
            let out = run(
                &sandbox,
                &probe,
                &format!("off-{i}"),
                json!({"tag": "off"}),
                &l,
                None,
            );
            assert_eq!(
                seen(&out),
                Vec::<String>::new(),
                "{guest}: state survived without reuse"
            );
            assert!(!out.warm, "{guest}");
        }
        // Two owners interleaved: each sees its own earlier jobs only.
        for i in 0..3 {
            for owner in ["tenant-a", "tenant-b"] {
                let out = run(
                    &sandbox,
                    &probe,
                    &format!("{owner}-{i}"),
                    json!({"tag": owner}),
                    &l,
                    reuse(owner),
                );
                assert_eq!(
                    seen(&out),
                    vec![owner.to_string(); i],
                    "{guest}: {owner} job {i}"
                );
                assert_eq!(out.warm, i > 0, "{guest}");
            }
        }
        // Other limits are another instance: nothing of tenant-a's.
        let other = Limits {
            fuel: Some(300_000_000),
            ..limits()
        };
        let out = run(
            &sandbox,
            &probe,
            "a-other",
            json!({"tag": "x"}),
            &other,
            reuse("tenant-a"),
        );
        assert_eq!(
            seen(&out),
            Vec::<String>::new(),
            "{guest}: shared across limits"
        );
    }
}

/// `n` jobs that complete, on `owner`'s warm instance.
fn warm_up(sandbox: &Sandbox, probe: &LoadedComponent, owner: &str, limits: &Limits, n: usize) {
    for i in 0..n {
        let out = run(
            sandbox,
            probe,
            &format!("ok-{i}"),
            json!({"tag": "ok"}),
            limits,
            reuse(owner),
        );
        assert!(
            matches!(out.completion, Completion::Completed(_)),
            "{:?}",
            out.completion
        );
    }
}

/// The next job of `owner` after a failed run starts on a fresh instance:
/// it sees no earlier job.
fn assert_fresh_after(
    sandbox: &Sandbox,
    probe: &LoadedComponent,
    owner: &str,
    limits: &Limits,
    what: &str,
) {
    let out = run(
        sandbox,
        probe,
        &format!("after-{what}"),
        json!({"tag": "n"}),
        limits,
        reuse(owner),
    );
    assert_eq!(seen(&out), Vec::<String>::new(), "reused after {what}");
}

/// The Rust probe, on a sandbox of its own.
fn rust_probe() -> (Arc<Sandbox>, Arc<LoadedComponent>) {
    let sandbox = sandbox();
    let probe = sandbox.load(&guest_bytes("warm-probe")).unwrap();
    (sandbox, probe)
}

#[test]
fn an_instance_whose_guest_failed_is_never_used_again() {
    let sandbox = sandbox();
    for guest in PROBES {
        let probe = sandbox.load(&guest_bytes(guest)).unwrap();
        let (l, owner) = (limits(), format!("{guest}-failures"));
        warm_up(&sandbox, &probe, &owner, &l, 2);
        let out = run(
            &sandbox,
            &probe,
            "retry",
            json!({"tag": "r", "mode": "retry"}),
            &l,
            reuse(&owner),
        );
        assert_eq!(kind(&out), FailureKind::GuestRetry, "{guest}");
        assert!(out.warm, "{guest}: the failing job ran warm");
        assert_fresh_after(&sandbox, &probe, &owner, &l, &format!("{guest}'s error"));
    }
}

#[test]
fn an_instance_that_trapped_is_never_used_again() {
    let (sandbox, probe) = rust_probe();
    let l = limits();
    warm_up(&sandbox, &probe, "trap", &l, 1);
    let out = run(
        &sandbox,
        &probe,
        "trap",
        json!({"tag": "t", "mode": "trap"}),
        &l,
        reuse("trap"),
    );
    assert!(
        matches!(kind(&out), FailureKind::Trap | FailureKind::GuestRetry),
        "{:?}",
        out.completion
    );
    assert_fresh_after(&sandbox, &probe, "trap", &l, "a trap");
}

#[test]
fn an_instance_that_ran_out_of_fuel_is_never_used_again() {
    let (sandbox, probe) = rust_probe();
    let l = limits();
    warm_up(&sandbox, &probe, "fuel", &l, 1);
    let out = run(
        &sandbox,
        &probe,
        "spin",
        json!({"tag": "s", "mode": "spin"}),
        &l,
        reuse("fuel"),
    );
    assert_eq!(kind(&out), FailureKind::FuelExhausted);
    assert_fresh_after(&sandbox, &probe, "fuel", &l, "running out of fuel");
}

#[test]
fn an_instance_past_its_deadline_is_never_used_again() {
    let (sandbox, probe) = rust_probe();
    let unmetered = Limits {
        fuel: None,
        timeout: Duration::from_millis(300),
        ..limits()
    };
    warm_up(&sandbox, &probe, "deadline", &unmetered, 2);
    let out = run(
        &sandbox,
        &probe,
        "slow",
        json!({"tag": "s", "mode": "spin"}),
        &unmetered,
        reuse("deadline"),
    );
    assert_eq!(kind(&out), FailureKind::Timeout);
    assert_fresh_after(&sandbox, &probe, "deadline", &unmetered, "a timeout");
}

#[test]
fn an_instance_cancelled_from_outside_is_never_used_again() {
    let (sandbox, probe) = rust_probe();
    let long = Limits {
        fuel: None,
        timeout: Duration::from_secs(10),
        ..limits()
    };
    warm_up(&sandbox, &probe, "cancel", &long, 2);
    // The cancelled run holds the same key as the next one; it spins until
    // the stop, 200 ms in (the time only decides how long it spins).
    let (stop, signal) = stop_pair();
    let cancel = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        stop.stop(airlock::sandbox::Failure::new(
            FailureKind::Cancelled,
            "cancelled by the test",
        ));
    });
    let env = RunEnv {
        reuse: reuse("cancel"),
        stop: Some(signal),
        ..RunEnv::default()
    };
    let job = JobInput {
        id: "cancel".into(),
        queue: "warm".into(),
        name: "probe".into(),
        data: json!({"tag": "c", "mode": "spin"}).to_string(),
        attempt: 1,
        max_attempts: 1,
        enqueued_at_ms: 0,
        parent: None,
    };
    let out = sandbox.guest_runtime().block_on(sandbox.run_async(
        &probe,
        job,
        &long,
        Box::new(LocalServices::new()),
        None,
        env,
    ));
    cancel.join().unwrap();
    assert_eq!(kind(&out), FailureKind::Cancelled);
    assert_fresh_after(&sandbox, &probe, "cancel", &long, "a cancel");
}

/// Memory never shrinks: a guest that keeps a little more every job
/// reaches its cap on a warm instance and fails as `memory_limit` — the
/// instance is then discarded, not the host. Fuel and peak memory are each
/// job's own.
#[test]
fn per_job_figures_stay_right_and_a_growing_guest_hits_its_cap() {
    let sandbox = sandbox();
    for guest in PROBES {
        let probe = sandbox.load(&guest_bytes(guest)).unwrap();
        let owner = format!("{guest}-growth");
        let l = limits();
        let first = run(
            &sandbox,
            &probe,
            "f-0",
            json!({"tag": "f"}),
            &l,
            reuse(&owner),
        );
        let second = run(
            &sandbox,
            &probe,
            "f-1",
            json!({"tag": "f"}),
            &l,
            reuse(&owner),
        );
        assert!(second.warm, "{guest}");
        let (f1, f2) = (first.fuel_used.unwrap(), second.fuel_used.unwrap());
        assert!(f2 < l.fuel.unwrap(), "{guest}");
        // Counted from zero again: a budget carried over would show the
        // first job's fuel on top of the second's (a warm JavaScript or
        // Python job uses far less than a fresh one: no engine start-up).
        assert!(
            f2 < f1 + f1 / 2,
            "{guest}: fuel {f2} on a warm instance after {f1}"
        );
        assert!(second.peak_memory_bytes >= first.peak_memory_bytes.min(second.peak_memory_bytes));
        assert!(second.peak_memory_bytes > 0, "{guest}");

        let capped = Limits {
            memory_bytes: first.peak_memory_bytes + (8 << 20),
            ..limits()
        };
        let mut failed_at = None;
        for i in 0..40 {
            let out = run(
                &sandbox,
                &probe,
                &format!("g-{i}"),
                json!({"tag": "g", "mode": "grow"}),
                &capped,
                reuse(&owner),
            );
            match &out.completion {
                Completion::Completed(_) => {
                    assert!(out.peak_memory_bytes <= capped.memory_bytes, "{guest}");
                }
                Completion::Failed(f) => {
                    assert_eq!(f.kind, FailureKind::MemoryLimit, "{guest}: {f:?}");
                    failed_at = Some(i);
                    break;
                }
                other => panic!("{guest}: {other:?}"),
            }
        }
        let failed_at = failed_at.unwrap_or_else(|| panic!("{guest} never reached its cap"));
        assert!(failed_at >= 2, "{guest}: hit the cap at once ({failed_at})");
        let out = run(
            &sandbox,
            &probe,
            "after-cap",
            json!({"tag": "g"}),
            &capped,
            reuse(&owner),
        );
        assert_eq!(
            seen(&out),
            Vec::<String>::new(),
            "{guest}: reused after its memory cap"
        );
    }
}

/// A value revealed in one job stays redacted from every later job of the
/// instance: the guest may still hold it (here it returns it from a
/// global in the next job, whose own services never revealed anything).
#[test]
fn a_revealed_secret_stays_redacted_in_later_jobs_of_a_warm_instance() {
    use airlock::sandbox::secrets::{self, SecretPolicy, SecretsKey};
    let sandbox = sandbox();
    let probe = sandbox.load(&guest_bytes("warm-probe")).unwrap();
    let key = SecretsKey::generate();
    let value = "sk_live_warm_0123456789";
    let services = LocalServices::new();
    let policy = SecretPolicy {
        reveal: true,
        ..SecretPolicy::default()
    };
    let envelope = secrets::encrypt(&key, "warm", "API_KEY", value, &policy, 0);
    services
        .store()
        .lock()
        .unwrap()
        .secrets
        .insert("API_KEY".into(), envelope);
    let l = limits();
    let job = |id: &str, data: Value| JobInput {
        id: id.into(),
        queue: "warm".into(),
        name: "probe".into(),
        data: data.to_string(),
        attempt: 1,
        max_attempts: 1,
        enqueued_at_ms: 0,
        parent: None,
    };
    let env = || RunEnv {
        reuse: reuse("secretive"),
        secrets_key: Some(key.clone()),
        ..RunEnv::default()
    };
    let revealed = sandbox.guest_runtime().block_on(sandbox.run_async(
        &probe,
        job("reveal", json!({"tag": "API_KEY", "mode": "reveal"})),
        &l,
        Box::new(services),
        None,
        env(),
    ));
    assert!(
        matches!(revealed.completion, Completion::Completed(_)),
        "{:?}",
        revealed.completion
    );
    let leaked = sandbox.guest_runtime().block_on(sandbox.run_async(
        &probe,
        job("leak", json!({"tag": "x", "mode": "leak"})),
        &l,
        Box::new(LocalServices::new()),
        None,
        env(),
    ));
    assert!(
        leaked.warm,
        "the second job must run in the first one's instance"
    );
    let Completion::Completed(out) = &leaked.completion else {
        panic!("{:?}", leaked.completion);
    };
    let out = out.to_string();
    assert!(
        !out.contains(value),
        "a revealed value left in a later job's output: {out}"
    );
    assert!(out.contains("[redacted:API_KEY]"), "{out}");
}

/// The fleet's secrets key of the queue tests: it seals producers.
const SECRETS_KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/// On a queue host, the tenant is the producer token that enqueued a job,
/// as Airlock sealed it: two producers' jobs, interleaved on one slot,
/// never share an instance; jobs without a producer (BullMQ's own
/// producers) share only among themselves; a job whose producer field was
/// written straight into Redis — no seal, or a wrong one — never enters a
/// producer's instance; and a queue without `warmInstances` keeps nothing.
/// Each job is enqueued only once the one before it finished, and the
/// instances never idle out (an hour): a job whose instance is kept must
/// finish when its run ends, not when the instance is next used.
#[tokio::test]
async fn tenants_never_share_an_instance_on_a_queue_host() {
    use airlock_tests::api::Api;
    use airlock_tests::host::tokens;
    use reqwest::StatusCode;

    let api = Api::start_with(&["--secrets-key", SECRETS_KEY]);
    api.setup(
        "warm",
        "warm-probe",
        json!({"concurrency": 1, "warmInstances": {"maxJobs": 100, "idleMs": 3_600_000}}),
    )
    .await;
    api.setup("cold", "warm-probe", json!({"concurrency": 1}))
        .await;

    let enqueue = |queue: &'static str, token: &'static str, tag: &'static str| {
        let api = &api;
        async move {
            let (status, accepted) = api
                .post(
                    &format!("/v1/queues/{queue}/jobs"),
                    token,
                    json!({"data": {"tag": tag}}),
                )
                .await;
            assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
            let job = accepted["ref"].as_str().unwrap().to_string();
            let done = api.wait_done(&job).await;
            assert_eq!(done["state"], "completed", "{done}");
            // Its own log line, and no other job's.
            let (_, snapshot) = api.get(&format!("/v1/jobs/{job}"), tokens::ADMIN).await;
            let id = job.split_once(':').unwrap().1;
            let lines: Vec<&str> = snapshot["logs"]
                .as_array()
                .unwrap_or_else(|| panic!("{snapshot}"))
                .iter()
                .filter_map(|l| l.as_str())
                .filter(|l| l.contains("warm-probe runs"))
                .collect();
            assert_eq!(lines.len(), 1, "{job}: {lines:?}");
            assert!(
                lines[0].contains(&format!("warm-probe runs {id} ({tag})")),
                "{lines:?}"
            );
            done["returnvalue"].clone()
        }
    };
    let tags = |result: &Value| -> Vec<String> {
        result["seen"]
            .as_array()
            .unwrap_or_else(|| panic!("{result}"))
            .iter()
            .map(|s| s["tag"].as_str().unwrap().to_string())
            .collect()
    };
    for round in 0..3 {
        let web = enqueue("warm", tokens::PRODUCER, "web").await;
        assert_eq!(tags(&web), vec!["web"; round], "web, round {round}: {web}");
        let other = enqueue("warm", tokens::OTHER_PRODUCER, "other").await;
        assert_eq!(
            tags(&other),
            vec!["other"; round],
            "other, round {round}: {other}"
        );
        let cold = enqueue("cold", tokens::PRODUCER, "cold").await;
        assert_eq!(
            tags(&cold),
            Vec::<String>::new(),
            "a cold queue kept state: {cold}"
        );
    }

    // Jobs without a producer, as BullMQ's own producers add them.
    let admin = airlock_tests::host::Admin::connect(&api.redis.url()).await;
    let plain = |tag: &'static str| {
        let admin = &admin;
        let api = &api;
        async move {
            let id = admin
                .enqueue("warm", "probe", json!({"tag": tag}), json!({}))
                .await;
            let done = api.wait_done(&format!("warm:{id}")).await;
            assert_eq!(done["state"], "completed", "{done}");
            done["returnvalue"].clone()
        }
    };
    assert_eq!(tags(&plain("plain").await), Vec::<String>::new());
    assert_eq!(tags(&plain("plain").await), vec!["plain"]);

    // A producer's name written straight into Redis, with no seal or a
    // forged one: a fresh instance, never web's.
    let client = redis::Client::open(api.redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    for seal in [None, Some("0123456789abcdef0123456789abcdef")] {
        admin.queues.pause("warm").await.unwrap();
        let id = admin
            .enqueue("warm", "probe", json!({"tag": "forged"}), json!({}))
            .await;
        let key = format!("bull:warm:{id}");
        let _: () = redis::cmd("HSET")
            .arg(&key)
            .arg("airlock.producer")
            .arg("web")
            .query_async(&mut conn)
            .await
            .unwrap();
        if let Some(seal) = seal {
            let _: () = redis::cmd("HSET")
                .arg(&key)
                .arg("airlock.producerSeal")
                .arg(seal)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
        admin.queues.resume("warm").await.unwrap();
        let done = api.wait_done(&format!("warm:{id}")).await;
        assert_eq!(done["state"], "completed", "{done}");
        assert_eq!(
            tags(&done["returnvalue"]),
            Vec::<String>::new(),
            "a forged producer ({seal:?}) entered an instance: {done}"
        );
    }
    // web's own instance is still web's alone.
    let web = enqueue("warm", tokens::PRODUCER, "web").await;
    assert_eq!(tags(&web), vec!["web"; 3], "{web}");
}
