//! Airlock on a Redis Cluster: three masters started here on loopback,
//! queues with hash tags spread over them, jobs and flows run end to end.

use std::time::Duration;

use airlock::queue::JobState;
use airlock_tests::host::{Admin, HostOptions, HostProcess};
use airlock_tests::redis_server::{RedisServer, start_cluster};
use serde_json::json;

/// The port of the master owning `key`.
fn owner(nodes: &[RedisServer], key: &str) -> u16 {
    let slot: u64 = nodes[0].cli(&["CLUSTER", "KEYSLOT", key]).parse().unwrap();
    nodes
        .iter()
        .find(|n| {
            let myid = n.cli(&["CLUSTER", "MYID"]);
            let slots = n.cli(&["CLUSTER", "NODES"]);
            slots.lines().any(|line| {
                line.starts_with(&myid)
                    && line.split_whitespace().skip(8).any(|range| {
                        let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                        match (lo.parse::<u64>(), hi.parse::<u64>()) {
                            (Ok(lo), Ok(hi)) => lo <= slot && slot <= hi,
                            _ => false,
                        }
                    })
            })
        })
        .map(|n| n.port())
        .expect("some master owns the slot")
}

#[tokio::test]
async fn queues_jobs_and_flows_run_on_a_redis_cluster() {
    let nodes = start_cluster(3);
    let seeds = nodes.iter().map(|n| n.url()).collect::<Vec<_>>().join(",");
    let admin = Admin::connect(&seeds).await;

    // Queues carry hash tags: each queue's keys share a slot, and different
    // queues land on different masters.
    let candidates = [
        "{payments}",
        "{emails}",
        "{orders}",
        "{reports}",
        "{billing}",
        "{search}",
        "{media}",
    ];
    let mut by_master: std::collections::HashMap<u16, &str> = std::collections::HashMap::new();
    for q in candidates {
        by_master
            .entry(owner(&nodes, &format!("bull:{q}:wait")))
            .or_insert(q);
    }
    assert!(
        by_master.len() >= 2,
        "the candidate queues all hash to one master"
    );
    let queues: Vec<&str> = by_master.values().copied().collect();

    admin.deploy("payment-webhook", "payment-webhook").await;
    for q in &queues {
        admin.bind(q, "payment-webhook", json!({})).await;
    }
    // An untagged queue is refused on a cluster, naming the fix.
    let refused = admin
        .registry
        .bind(
            "untagged",
            &serde_json::from_value(json!({"handler": "payment-webhook"})).unwrap(),
            None,
        )
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("hash tag"), "{refused}");
    let refused = admin
        .queues
        .add(
            "untagged",
            airlock::queue::NewJob {
                name: "x".into(),
                data: json!({}),
                opts: Default::default(),
                producer: None,
                trace: None,
                parent: None,
            },
        )
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("hash tag"), "{refused}");

    let _host = HostProcess::start(
        &seeds,
        HostOptions {
            id: "cluster-host".into(),
            ..HostOptions::default()
        },
    );
    for (i, q) in queues.iter().enumerate() {
        let id = admin
            .enqueue(
                q,
                "payment",
                json!({"transactionId": format!("c{i}"), "amount": 5}),
                json!({"attempts": 2}),
            )
            .await;
        let job = admin.wait_recorded(q, &id, Duration::from_secs(60)).await;
        assert_eq!(job.state, JobState::Completed, "{q}: {job:#?}");
        assert_eq!(
            job.returnvalue.unwrap()["ledgerRecordId"],
            format!("led_c{i}")
        );
        assert!(
            job.metrics.fuel_used.is_some(),
            "Airlock's job fields work on the cluster"
        );
    }
    // Keys of one queue stay in one slot; jobs of different queues live on
    // different masters.
    let masters: std::collections::HashSet<u16> = queues
        .iter()
        .map(|q| owner(&nodes, &format!("bull:{q}:1")))
        .collect();
    assert!(masters.len() >= 2);

    // A flow: parent and children share one tag (BullMQ adds a flow in one
    // script), here `{reports}`.
    admin.deploy("data-extraction", "data-extraction").await;
    admin.deploy("report-aggregator", "report-aggregator").await;
    admin
        .bind("{reports}.extract", "data-extraction", json!({}))
        .await;
    admin
        .bind("{reports}.aggregate", "report-aggregator", json!({}))
        .await;
    let flow: airlock::queue::FlowSpec = serde_json::from_value(json!({
        "name": "aggregate-final-report",
        "queue": "{reports}.aggregate",
        "data": {"reportId": "cluster"},
        "children": [
            {"name": "data-extraction", "queue": "{reports}.extract", "data": {"source": "a", "records": 2, "amountCents": 20}},
            {"name": "data-extraction", "queue": "{reports}.extract", "data": {"source": "b", "records": 3, "amountCents": 30}},
        ],
    }))
    .unwrap();
    let node = admin.queues.add_flow(&flow, None).await.unwrap();
    let parent = admin
        .wait_finished("{reports}.aggregate", &node.id, Duration::from_secs(60))
        .await;
    assert_eq!(parent.state, JobState::Completed, "{parent:#?}");
    assert_eq!(parent.returnvalue.unwrap()["records"], 5);
}
