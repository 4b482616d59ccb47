//! A host proves at start-up that a reused instance slot comes back clean
//! (`sandbox::reset`): with the configured reset mode if it holds, else
//! with the next mode that clears, and it refuses to start when none does.
//! The dirty case is forced through the sandbox's test hook
//! `AIRLOCK_TEST_LEAKY_SLOT_RESET`, which stands in for a kernel whose
//! `PAGEMAP_SCAN` reports nothing written: the probe of the named modes
//! then meets the marker it wrote.

use std::time::Duration;

use airlock::queue::JobState;
use airlock_tests::eventually;
use airlock_tests::eventually_some;
use airlock_tests::host::{Admin, HostOptions, HostProcess};
use airlock_tests::redis_server::RedisServer;
use serde_json::{Value, json};

fn host(redis: &RedisServer, extra: &[&str], leaky: Option<&str>) -> HostProcess {
    let mut opts = HostOptions {
        id: "reset-host".into(),
        extra: extra.iter().map(|s| s.to_string()).collect(),
        ..HostOptions::default()
    };
    if let Some(modes) = leaky {
        opts.env
            .push(("AIRLOCK_TEST_LEAKY_SLOT_RESET".into(), modes.into()));
    }
    HostProcess::start(&redis.url(), opts)
}

/// Runs `count` jobs of the isolation probe (which counts the runs its
/// instance saw and stamps a global with its job id) through the host and
/// checks each started from a clean instance.
async fn jobs_start_clean(admin: &Admin, count: usize) {
    let ids: Vec<String> = {
        let mut ids = Vec::new();
        for _ in 0..count {
            ids.push(
                admin
                    .enqueue("probe", "probe", json!({"spin": 1000}), json!({}))
                    .await,
            );
        }
        ids
    };
    for id in ids {
        let job = admin
            .wait_finished("probe", &id, Duration::from_secs(60))
            .await;
        assert_eq!(job.state, JobState::Completed, "{job:?}");
        let seen: Value = job.returnvalue.clone().expect("a result");
        assert_eq!(seen["runsSeen"], 1, "job {id} saw an earlier run: {seen}");
        assert_eq!(seen["stampBefore"], Value::Null, "job {id}: {seen}");
    }
}

async fn probe_queue(redis: &RedisServer) -> Admin {
    let admin = Admin::connect(&redis.url()).await;
    admin.deploy("probe", "isolation-probe").await;
    admin
        .bind("probe", "probe", json!({"concurrency": 2}))
        .await;
    admin
}

#[tokio::test]
async fn a_host_starts_with_the_mode_it_was_given_once_its_slots_prove_clean() {
    let redis = RedisServer::start();
    let admin = probe_queue(&redis).await;
    for mode in ["scan", "prefix", "decommit"] {
        let host = host(&redis, &["--slot-reset", mode], None);
        let line = format!("a reused instance slot proved clean slot_reset={mode}");
        eventually(&format!("the host proving {mode} clean"), || async {
            host.log().contains(&line)
        })
        .await;
        assert!(
            !host.log().contains("did not leave reused slots clean"),
            "{}",
            host.log()
        );
        jobs_start_clean(&admin, 20).await;
    }
}

#[tokio::test]
async fn a_scan_that_leaves_memory_behind_falls_back_to_a_mode_that_clears_it() {
    let redis = RedisServer::start();
    let admin = probe_queue(&redis).await;
    let host = host(&redis, &["--slot-reset", "scan"], Some("scan"));
    eventually("the host falling back from the scan", || async {
        host.log()
            .contains("a reused instance slot proved clean slot_reset=prefix")
    })
    .await;
    let log = host.log();
    assert!(
        log.contains("slot reset not proven clean: a reused slot showed the previous instance's writes to its data image mode=scan"),
        "the host says why it left the scan:\n{log}"
    );
    assert!(
        log.contains("configured=scan using=prefix"),
        "the host names both modes:\n{log}"
    );
    jobs_start_clean(&admin, 20).await;

    // Prefix leaking too: decommit, which relies on nothing the kernel
    // reports.
    drop(host);
    let host = self::host(&redis, &["--slot-reset", "scan"], Some("scan,prefix"));
    eventually("the host falling back to decommit", || async {
        host.log()
            .contains("a reused instance slot proved clean slot_reset=decommit")
    })
    .await;
    jobs_start_clean(&admin, 20).await;
}

#[tokio::test]
async fn a_host_refuses_to_start_when_no_reset_mode_leaves_a_slot_clean() {
    let redis = RedisServer::start();
    let admin = probe_queue(&redis).await;
    let id = admin
        .enqueue("probe", "probe", json!({"spin": 1000}), json!({}))
        .await;
    let mut host = host(&redis, &["--slot-reset", "scan"], Some("all"));
    let log = eventually_some("the host exiting", Duration::from_secs(60), || {
        let exited = !host.is_running();
        let log = host.log();
        async move { exited.then_some(log) }
    })
    .await;
    assert!(
        log.contains("error: no slot reset mode leaves a reused instance slot clean on this machine, so no job can run safely here (scan: a reused slot showed the previous instance's writes to its data image; prefix: "),
        "{log}"
    );
    assert!(
        log.contains(
            "decommit: a reused slot showed the previous instance's writes to its data image)"
        ),
        "{log}"
    );
    // It took no job: the one waiting is still there, untouched.
    let job = admin.job("probe", &id).await.expect("the job");
    assert_eq!(job.state, JobState::Waiting, "{job:?}");
}
