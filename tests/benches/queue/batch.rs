//! What batches give (`BENCH_ONLY=batch`): 20,000 jobs drained by one host
//! from a queue bound with `batch` (batches of 10 and of 50, 100 jobs held
//! at once: 10 and 2 batches), no-op and payment handlers in Rust and
//! TypeScript, against Node BullMQ's plain worker running the same work one
//! job at a time at concurrency 100, and the Rust port's no-op worker's
//! Redis CPU per job, same run. Warm host, no compile in the span (see
//! [`drain`]).

use super::*;

/// Jobs held at once, by Airlock's batches and by Node's worker.
const IN_FLIGHT: usize = 100;

/// The batch drains against Node's worker.
pub async fn batch_drains(count: usize) {
    let node_noop = drain(Peer::Node("noop"), count, IN_FLIGHT, "noop", "{}").await;
    let node_payment = drain(Peer::Node("payment"), count, IN_FLIGHT, "payment", PAYMENT).await;
    let port = drain(Peer::Port, count, IN_FLIGHT, "noop", "{}").await;
    println!(
        "| drain {count} jobs, {IN_FLIGHT} held | Airlock, jobs/s | Node BullMQ, jobs/s | Airlock / Node | host CPU per job | Redis CPU per job (port: {}) |",
        per_job_us(port.redis_us)
    );
    println!("|---|---|---|---|---|---|");
    let rows: [(&str, &'static str, &str, &str, &Drain); 4] = [
        ("no-op, Rust", "noop-batch", "noop", "{}", &node_noop),
        (
            "no-op, TypeScript",
            "js_noop_batch",
            "noop",
            "{}",
            &node_noop,
        ),
        (
            "payment, Rust",
            "bulk-insert",
            "payment",
            PAYMENT,
            &node_payment,
        ),
        (
            "payment, TypeScript",
            "js_bulk_insert",
            "payment",
            PAYMENT,
            &node_payment,
        ),
    ];
    for (label, guest, name, data, node) in rows {
        for size in [10, 50] {
            let airlock = drain(
                Peer::AirlockBatch(guest, size),
                count,
                IN_FLIGHT,
                name,
                data,
            )
            .await;
            println!(
                "| {label}, batches of {size} | {:.0} | {:.0} | {:.2}× | {} | {} |",
                airlock.rate,
                node.rate,
                airlock.rate / node.rate,
                per_job_us(airlock.host_us),
                per_job_us(airlock.redis_us),
            );
        }
    }
    println!();
    println!(
        "Node's plain no-op worker at concurrency {IN_FLIGHT}: {:.0} jobs/s, {} of Redis CPU per job.",
        node_noop.rate,
        per_job_us(node_noop.redis_us)
    );
}
