//! Where a host's CPU goes per job, by phase of the job path: a `perf
//! record` profile of a drain (stacks unwound from DWARF call-frame
//! information, which a release build keeps: no frame pointers needed),
//! each sample put in the first phase its stack names, from the sampled
//! function outwards. Included by the queue benchmark (`#[path]`); a
//! module of its own so the rules stay in one place.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// The phases, in the order a job meets them, and the functions whose
/// presence on a sample's stack puts the sample there. A sample goes to
/// the phase of the innermost function that matches any phase: a page
/// fault under the guest's call is the run's, a `memset` under the
/// store's drop the reset's.
pub const PHASES: [(&str, &[&str]); 11] = [
    (
        "fetch (BullMQ's moveToActive, the job parsed)",
        &[
            "try_fetch_job_fast",
            "from_redis_hash",
            "run_main_driver",
            "process_fetched_job",
        ],
    ),
    (
        "admit (cancels, time to finish, flow control)",
        &[
            "Executor>::admit",
            "Cancels>::register",
            "FinishDeadline",
            "Admission>::admit",
        ],
    ),
    (
        "load (pin, limits, component, permit)",
        &[
            "Executor>::load",
            "Executor>::pinned",
            "ComponentLoader",
            "Capacity>::acquire",
        ],
    ),
    (
        "instantiate (store, WASI context, instance)",
        &[
            "instantiate_async",
            "Sandbox>::instance",
            "RunState>::new",
            "Wasi>::new",
        ],
    ),
    (
        "reset (the pool slot, as the store is dropped)",
        &[
            "drop_glue::<wasmtime::runtime::store::StoreInner",
            "deallocate_module",
            "DecommitQueue",
        ],
    ),
    (
        "run (the guest's call, its reports, its outcome)",
        &[
            "call_run",
            "Func>::call_raw",
            "fiber_start",
            "invoke_wasm_and_catch_traps",
            "Sandbox>::call",
            "Sandbox>::settle",
            "Sandbox>::run_async",
            "Sandbox>::run_isolated",
            "Executor>::run_guest",
            "reporter::",
        ],
    ),
    (
        "finish (the result, BullMQ's moveToFinished)",
        &[
            "Executor>::finish",
            "move_to_finished_fast",
            "handle_job_completed",
            "handle_job_failed",
        ],
    ),
    (
        "record (the run's record, tallies)",
        &["recorder::", "Runs>::write", "Runs>::add_tallies"],
    ),
    (
        "Redis connections (sending, reading, parsing replies)",
        &[
            "redis::aio",
            "redis::parser",
            "multiplexed_connection",
            "combine::",
        ],
    ),
    (
        "runtime (scheduling, waking, parking threads)",
        &[
            "Context>::park",
            "park_internal",
            "Parker",
            "unpark",
            "finish_task_switch",
            "__schedule",
            "schedule_hrtimeout",
            "try_to_wake_up",
            "epoll_wait",
            "futex",
            "Context>::run",
        ],
    ),
    ("other", &[]),
];

/// Each phase's share of the profile's samples; `None` (with why) when
/// `perf` could not read it.
pub fn split(profile: &Path) -> Result<BTreeMap<usize, f64>, String> {
    let out = Command::new("perf")
        .args(["script", "-F", "ip,sym", "-i"])
        .arg(profile)
        .output()
        .map_err(|e| format!("perf script: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut counts: BTreeMap<usize, u64> = BTreeMap::new();
    let mut samples = 0u64;
    for sample in text.split("\n\n") {
        let frames: Vec<&str> = sample
            .lines()
            .filter_map(|l| l.trim().split_once(' ').map(|(_, sym)| sym))
            .collect();
        if frames.is_empty() {
            continue;
        }
        samples += 1;
        let phase = frames
            .iter()
            .find_map(|frame| {
                PHASES
                    .iter()
                    .position(|(_, names)| names.iter().any(|n| frame.contains(n)))
            })
            .unwrap_or(PHASES.len() - 1);
        *counts.entry(phase).or_default() += 1;
    }
    if samples == 0 {
        return Err("the profile holds no samples".into());
    }
    Ok(counts
        .into_iter()
        .map(|(phase, n)| (phase, n as f64 / samples as f64))
        .collect())
}
