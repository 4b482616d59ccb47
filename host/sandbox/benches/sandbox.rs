//! Sandbox benchmarks (`make bench`): per-job cost, throughput, compile and
//! load times, guest vs native compute, memory per live instance.
//!
//! Not a test: it prints figures (a markdown table) for docs/BENCHMARKS.md.
//! Every speed figure is set against a peer measured in the same run (the
//! native twin, the unmetered engine) so a noisy machine skews both sides.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use airlock_sandbox::{
    Completion, JobInput, Limits, LoadedComponent, LocalServices, Sandbox, SandboxConfig,
};

fn guest(name: &str) -> Vec<u8> {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let path = dir
        .join("wasm32-wasip2/release")
        .join(format!("{}.wasm", name.replace('-', "_")));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}; run `make guests`", path.display()))
}

fn job(data: &str) -> JobInput {
    JobInput {
        id: "bench".into(),
        queue: "bench".into(),
        name: "bench".into(),
        data: data.into(),
        attempt: 1,
        max_attempts: 1,
        enqueued_at_ms: 0,
        parent: None,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn millis(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

fn run_once(
    sandbox: &Sandbox,
    component: &LoadedComponent,
    data: &str,
    limits: &Limits,
) -> Duration {
    let outcome = sandbox.run(
        component,
        job(data),
        limits,
        Box::new(LocalServices::new()),
        None,
    );
    assert!(
        matches!(outcome.completion, Completion::Completed(_)),
        "{:?}",
        outcome.completion
    );
    outcome.wall_time
}

fn main() {
    let cache = tempfile_dir();
    let config = SandboxConfig {
        max_instances: 1024,
        cache_dir: Some(cache.clone()),
        // `AIRLOCK_BENCH_KEEP_RESIDENT` (bytes) compares resident sizes.
        memory_keep_resident: std::env::var("AIRLOCK_BENCH_KEEP_RESIDENT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(SandboxConfig::default().memory_keep_resident),
        ..SandboxConfig::default()
    };
    let sandbox = Arc::new(Sandbox::new(config.clone()).expect("sandbox"));
    let metered = Limits::default();
    let unmetered = Limits {
        fuel: None,
        ..Limits::default()
    };
    if std::env::var("AIRLOCK_BENCH_ONLY").as_deref() == Ok("languages") {
        languages(&config);
        let _ = std::fs::remove_dir_all(cache);
        return;
    }
    if std::env::var("AIRLOCK_BENCH_ONLY").as_deref() == Ok("reset") {
        slot_resets(&config);
        let _ = std::fs::remove_dir_all(cache);
        return;
    }
    println!("| benchmark | result |");
    println!("|---|---|");

    // Compile from source vs load the precompiled artifact.
    let payment = guest("payment-webhook");
    let started = Instant::now();
    sandbox.load(&payment).expect("load");
    let compile = started.elapsed();
    let restarted = Sandbox::new(config.clone()).expect("sandbox");
    let started = Instant::now();
    restarted.load(&payment).expect("load");
    let load = started.elapsed();
    assert_eq!(restarted.compilations(), 0);
    drop(restarted);
    println!(
        "| compile payment-webhook ({} KiB) | {} |",
        payment.len() / 1024,
        millis(compile)
    );
    println!(
        "| load precompiled artifact | {} ({:.0}× faster) |",
        millis(load),
        compile.as_secs_f64() / load.as_secs_f64()
    );

    // Per-job cost of the smallest guest: instantiate, call, drop.
    let noop = sandbox.load(&guest("noop")).expect("load");
    for limits in [&metered, &unmetered] {
        for _ in 0..500 {
            run_once(&sandbox, &noop, "{}", limits);
        }
        let mut samples: Vec<Duration> = (0..10_000)
            .map(|_| run_once(&sandbox, &noop, "{}", limits))
            .collect();
        samples.sort();
        let label = if limits.fuel.is_some() {
            "fuel"
        } else {
            "no fuel"
        };
        println!(
            "| noop per-job sandbox cost ({label}) | p50 {} · p99 {} |",
            micros(percentile(&samples, 0.5)),
            micros(percentile(&samples, 0.99))
        );
    }
    let started = Instant::now();
    let n = 20_000;
    for _ in 0..n {
        run_once(&sandbox, &noop, "{}", &metered);
    }
    let rate = n as f64 / started.elapsed().as_secs_f64();
    println!("| noop runs/s on one core (fuel) | {rate:.0} |");
    if std::env::var("AIRLOCK_BENCH_ONLY").as_deref() == Ok("noop") {
        return;
    }

    // Compute: the cpu-bound guest against the same code compiled natively.
    let cpu = sandbox.load(&guest("cpu-bound")).expect("load");
    let rounds = 2_000_000u64;
    let data = format!(r#"{{"rounds":{rounds},"seed":"bench"}}"#);
    let big = Limits {
        fuel: Some(500_000_000_000),
        timeout: Duration::from_secs(120),
        ..Limits::default()
    };
    let big_unmetered = Limits {
        fuel: None,
        ..big.clone()
    };
    run_once(&sandbox, &cpu, &data, &big);
    run_once(&sandbox, &cpu, &data, &big_unmetered);
    let best = |f: &dyn Fn() -> Duration| (0..5).map(|_| f()).min().unwrap();
    let native = best(&|| {
        let started = Instant::now();
        std::hint::black_box(cpu_bound_core::hash_chain("bench", rounds));
        started.elapsed()
    });
    let fueled = best(&|| run_once(&sandbox, &cpu, &data, &big));
    let unfueled = best(&|| run_once(&sandbox, &cpu, &data, &big_unmetered));
    println!(
        "| cpu-bound native ({rounds} sha256 rounds) | {} |",
        millis(native)
    );
    println!(
        "| cpu-bound guest, fuel | {} ({:.2}× native) |",
        millis(fueled),
        fueled.as_secs_f64() / native.as_secs_f64()
    );
    println!(
        "| cpu-bound guest, no fuel | {} ({:.2}× native) |",
        millis(unfueled),
        unfueled.as_secs_f64() / native.as_secs_f64()
    );

    // Memory held by live instances.
    let count = 200;
    let before = rss_bytes();
    let live: Vec<_> = (0..count)
        .map(|_| {
            sandbox
                .instantiate_idle(&payment_loaded(&sandbox, &payment), &metered)
                .expect("instantiate")
        })
        .collect();
    let after = rss_bytes();
    println!(
        "| memory per live instance (payment-webhook, {count} live) | {:.0} KiB RSS |",
        (after.saturating_sub(before)) as f64 / count as f64 / 1024.0
    );
    drop(live);
    let _ = std::fs::remove_dir_all(cache);
}

/// Per language: the same handlers built with Rust, QuickJS,
/// StarlingMonkey and componentize-py — component and artifact size,
/// compile time, per-job cost, memory per live instance.
fn languages(config: &SandboxConfig) {
    let payment_data = r#"{"transactionId":"tx_1","amount":42.5,"currency":"EUR"}"#;
    let builds = [
        ("Rust", "noop", "payment-webhook"),
        (
            "TypeScript, QuickJS",
            "js-noop-qjs",
            "js-payment-webhook-qjs",
        ),
        (
            "TypeScript, StarlingMonkey",
            "js-noop",
            "js-payment-webhook",
        ),
        ("Python", "py-noop", "py-payment-webhook"),
    ];
    println!(
        "| language | component | compile | artifact | noop p50 · p99 | payment p50 · p99 | RSS per live instance |"
    );
    println!("|---|---|---|---|---|---|---|");
    let limits = Limits {
        memory_bytes: 128 << 20,
        ..Limits::default()
    };
    for (language, noop_name, payment_name) in builds {
        let cache = tempfile_dir().join(noop_name);
        let sandbox = Sandbox::new(SandboxConfig {
            cache_dir: Some(cache.clone()),
            max_instances: 64,
            ..config.clone()
        })
        .expect("sandbox");
        let bytes = guest(payment_name);
        let started = Instant::now();
        let payment = sandbox.load(&bytes).expect("load");
        let compile = started.elapsed();
        let artifact: u64 = std::fs::read_dir(&cache)
            .expect("cache")
            .filter_map(|e| e.ok()?.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .max()
            .unwrap_or(0);
        let noop = sandbox.load(&guest(noop_name)).expect("load");
        let per_job = |component: &LoadedComponent, data: &str| {
            for _ in 0..20 {
                run_once(&sandbox, component, data, &limits);
            }
            let mut samples: Vec<Duration> = (0..300)
                .map(|_| run_once(&sandbox, component, data, &limits))
                .collect();
            samples.sort();
            format!(
                "{} · {}",
                millis(percentile(&samples, 0.5)),
                millis(percentile(&samples, 0.99))
            )
        };
        let noop_cost = per_job(&noop, "{}");
        let payment_cost = per_job(&payment, payment_data);
        let count = 40;
        let before = rss_bytes();
        let live: Vec<_> = (0..count)
            .map(|_| {
                sandbox
                    .instantiate_idle(&payment, &limits)
                    .expect("instantiate")
            })
            .collect();
        let rss = rss_bytes().saturating_sub(before) / count;
        drop(live);
        println!(
            "| {language} | {:.2} MiB | {} | {:.1} MiB | {noop_cost} | {payment_cost} | {:.0} KiB |",
            bytes.len() as f64 / (1 << 20) as f64,
            millis(compile),
            artifact as f64 / (1 << 20) as f64,
            rss as f64 / 1024.0
        );
        let _ = std::fs::remove_dir_all(cache);
    }
}

/// The process's CPU time (user + system) and minor page faults so far.
fn process_usage() -> (Duration, u64) {
    // SAFETY: getrusage writes into the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    (
        time(usage.ru_utime) + time(usage.ru_stime),
        usage.ru_minflt as u64,
    )
}

/// What a slot's reset costs per language (`AIRLOCK_BENCH_ONLY=reset`,
/// `AIRLOCK_BENCH_RESET_JOBS` jobs per row, default 2,000): the noop and
/// payment handlers of each language, a fresh instance per job, two jobs
/// at a time on the guest runtime (as a host's two cores run them, so a
/// decommit's TLB shootdown reaches a core running another guest), under
/// each slot reset mode; the process's CPU and minor faults per job.
fn slot_resets(config: &SandboxConfig) {
    let jobs: usize = std::env::var("AIRLOCK_BENCH_RESET_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    let payment_data = r#"{"transactionId":"tx_1","amount":42.5,"currency":"EUR"}"#;
    let builds = [
        ("Rust", "noop", "payment-webhook"),
        ("QuickJS", "js-noop-qjs", "js-payment-webhook-qjs"),
        ("StarlingMonkey", "js-noop", "js-payment-webhook"),
        ("Python", "py-noop", "py-payment-webhook"),
    ];
    let limits = Limits {
        memory_bytes: 128 << 20,
        ..Limits::default()
    };
    println!(
        "| slot reset, {jobs} jobs, 2 at a time | mode | noop CPU per job | noop faults | payment CPU per job | payment faults | peak memory |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (language, noop, payment) in builds {
        // Shared by the modes: each language compiles once.
        let cache = tempfile_dir().join(noop);
        for mode in airlock_sandbox::SlotReset::ALL {
            let sandbox = Arc::new(
                Sandbox::new(SandboxConfig {
                    cache_dir: Some(cache.clone()),
                    max_instances: 16,
                    slot_reset: mode,
                    ..config.clone()
                })
                .expect("sandbox"),
            );
            let mut row = Vec::new();
            let mut peak = 0;
            for (name, data) in [(noop, "{}"), (payment, payment_data)] {
                let component = sandbox.load(&guest(name)).expect("load");
                let measure = |n: usize| {
                    let (cpu, faults) = process_usage();
                    let tasks: Vec<_> = (0..2)
                        .map(|_| {
                            let (sandbox, component, limits) =
                                (sandbox.clone(), component.clone(), limits.clone());
                            sandbox.guest_runtime().clone().spawn(async move {
                                let mut peak = 0;
                                for _ in 0..n / 2 {
                                    let outcome = sandbox
                                        .run_async(
                                            &component,
                                            job(data),
                                            &limits,
                                            Box::new(LocalServices::new()),
                                            None,
                                            Default::default(),
                                        )
                                        .await;
                                    assert!(
                                        matches!(outcome.completion, Completion::Completed(_)),
                                        "{:?}",
                                        outcome.completion
                                    );
                                    peak = outcome.peak_memory_bytes;
                                }
                                peak
                            })
                        })
                        .collect();
                    let peaks: Vec<u64> = tasks
                        .into_iter()
                        .map(|t| sandbox.guest_runtime().block_on(t).expect("task"))
                        .collect();
                    let (cpu_after, faults_after) = process_usage();
                    (
                        (cpu_after - cpu) / n as u32,
                        (faults_after - faults) as f64 / n as f64,
                        peaks.into_iter().max().unwrap_or(0),
                    )
                };
                measure(jobs / 10);
                let (cpu, faults, p) = measure(jobs);
                peak = peak.max(p);
                row.push(format!("{:.1} µs | {faults:.1}", cpu.as_secs_f64() * 1e6));
            }
            println!(
                "| {language} | {mode} | {} | {:.1} MiB |",
                row.join(" | "),
                peak as f64 / (1 << 20) as f64
            );
        }
        let _ = std::fs::remove_dir_all(cache);
    }
}

fn payment_loaded(sandbox: &Sandbox, bytes: &[u8]) -> Arc<LoadedComponent> {
    sandbox.load(bytes).expect("load")
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("airlock-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}
