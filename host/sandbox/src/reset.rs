//! How a pool slot's linear memory is made clean for the next instance,
//! and the proof, at start-up, that it is.
//!
//! Between two instances on one slot, wasmtime's pooling allocator gives
//! the slot's memory back its pristine image in one of three ways
//! ([`SlotReset`]); which one is cheapest depends on the guest and the
//! kernel, and whether one *works* depends on the kernel too:
//!
//! - **scan**: Linux's `PAGEMAP_SCAN` reports the pages that were written,
//!   and those (up to the keep-resident budget) are copied back from the
//!   image in place; the rest is decommitted. wasmtime 50 asks for written
//!   pages without requiring them present, and since the Linux hotfix
//!   "fs/proc/task_mmu: fix PAGEMAP_SCAN written state for unpopulated
//!   ptes" (6.18 and stable kernels) a never-touched page inside a
//!   populated page table is reported written: every page of each 2 MiB
//!   range a job touched is reset, plus the scan's own walk. And a kernel
//!   series under review makes `WRITTEN` mean something only in
//!   userfaultfd write-protected ranges: there the scan would report
//!   nothing and nothing would be reset — the next job would see the last
//!   one's memory. This is what the start-up proof is for.
//! - **prefix**: no scan; the first keep-resident bytes are copied back
//!   from the image, the rest decommitted. Relies on nothing the kernel
//!   reports.
//! - **decommit**: everything is handed back to the kernel (`madvise`),
//!   which maps the image again; the next instance page-faults in what it
//!   touches, and every `madvise` shoots down the TLBs of the other cores
//!   running the host. Relies on nothing the kernel reports either.
//!
//! **The proof.** Before a host runs a job, [`prove_clean`] instantiates a
//! probe module on each engine, has it write a marker into its memory (in
//! its data image, in zero pages on both sides of a 2 MiB boundary, in a
//! page it grows) and a function into its table, drops the instance (the
//! slot is reset), instantiates the probe again on the same slot and has
//! it check that its memory, its size and its table are the pristine image.
//! The sandbox starts with the configured mode if that holds, else with the
//! next mode that clears without relying on what the failed one relied on
//! ([`SlotReset::fallbacks`]), logging why; if none holds, the sandbox
//! refuses to start.

use std::fmt;
use std::str::FromStr;

use wasmtime::{Engine, Instance, Module, PoolingAllocationConfig, Store};

/// How a pool slot's memory is reset between instances (see the module
/// docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SlotReset {
    /// The pages `PAGEMAP_SCAN` reports written are reset in place, up to
    /// the keep-resident budget; the rest is decommitted.
    Scan,
    /// The first keep-resident bytes are reset in place; the rest is
    /// decommitted.
    Prefix,
    /// Everything is decommitted (`madvise`).
    Decommit,
}

impl SlotReset {
    /// Every mode, as the CLI names them.
    pub const ALL: [SlotReset; 3] = [SlotReset::Scan, SlotReset::Prefix, SlotReset::Decommit];

    /// The mode's name: `scan`, `prefix`, `decommit`.
    pub fn as_str(self) -> &'static str {
        match self {
            SlotReset::Scan => "scan",
            SlotReset::Prefix => "prefix",
            SlotReset::Decommit => "decommit",
        }
    }

    /// This mode, then the modes to fall back on when the proof finds it
    /// leaves memory behind: each relies on less of what the kernel
    /// reports than the one before (the scan on `PAGEMAP_SCAN`; prefix and
    /// decommit on nothing but the mapping itself).
    pub fn fallbacks(self) -> &'static [SlotReset] {
        match self {
            SlotReset::Scan => &[SlotReset::Scan, SlotReset::Prefix, SlotReset::Decommit],
            SlotReset::Prefix => &[SlotReset::Prefix, SlotReset::Decommit],
            SlotReset::Decommit => &[SlotReset::Decommit],
        }
    }

    /// Sets `pool` up to reset this way, keeping up to `keep_resident`
    /// bytes of each memory in place (scan and prefix).
    pub(crate) fn configure(self, pool: &mut PoolingAllocationConfig, keep_resident: usize) {
        let (scan, keep) = match self {
            SlotReset::Scan => (wasmtime::Enabled::Auto, keep_resident),
            SlotReset::Prefix => (wasmtime::Enabled::No, keep_resident),
            SlotReset::Decommit => (wasmtime::Enabled::No, 0),
        };
        pool.pagemap_scan(scan)
            .linear_memory_keep_resident(keep)
            .table_keep_resident(keep.min(TABLE_KEEP_RESIDENT));
    }
}

/// Most bytes of each table reset in place (scan, prefix): a table is
/// small, and every guest's is under this.
const TABLE_KEEP_RESIDENT: usize = 64 << 10;

impl fmt::Display for SlotReset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SlotReset {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SlotReset::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| format!("`{s}` is not a slot reset mode (scan, prefix, decommit)"))
    }
}

/// What the proof found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unproven {
    /// The second instance saw what the first left.
    #[error("a reused slot showed the previous instance's {0}")]
    Leaked(&'static str),
    /// The probe did not get the same slot twice, so it proved nothing.
    #[error("the probe never got the same pool slot twice")]
    NoReuse,
    /// The probe itself failed.
    #[error("the probe failed: {0}")]
    Probe(String),
}

/// The probe. Its memory starts at 48 pages (3 MiB, across a 2 MiB
/// boundary) with an image at 1024; `mark` writes the marker into the image,
/// into zero pages below and above 2 MiB and at the top of the initial
/// memory, grows the memory by a page and writes it there too, and puts a
/// function into the table; `check` answers 0 when memory, its size and the
/// table are pristine, else which part was not (1 the image, 2 the zero
/// pages, 3 the size, 4 the grown page, 5 the table).
const PROBE: &str = r#"
(module
  (memory (export "memory") 48)
  (table 4 8 funcref)
  (data (i32.const 1024) "airlock: pristine image")
  (func $f)
  (elem declare func $f)
  (func (export "mark") (param $m i64)
    (i64.store (i32.const 1024) (local.get $m))
    (i64.store (i32.const 20480) (local.get $m))
    (i64.store (i32.const 2097144) (local.get $m))
    (i64.store (i32.const 2097152) (local.get $m))
    (i64.store (i32.const 3145720) (local.get $m))
    (drop (memory.grow (i32.const 1)))
    (i64.store (i32.const 3145728) (local.get $m))
    (table.set (i32.const 3) (ref.func $f)))
  (func (export "check") (result i32)
    (if (i64.ne (i64.load (i32.const 1024)) (i64.const 0x3a6b636f6c726961)) (then (return (i32.const 1))))
    (if (i64.ne
          (i64.or (i64.or (i64.load (i32.const 20480)) (i64.load (i32.const 2097144)))
                  (i64.or (i64.load (i32.const 2097152)) (i64.load (i32.const 3145720))))
          (i64.const 0))
      (then (return (i32.const 2))))
    (if (i32.ne (memory.size) (i32.const 48)) (then (return (i32.const 3))))
    (drop (memory.grow (i32.const 1)))
    (if (i64.ne (i64.load (i32.const 3145728)) (i64.const 0)) (then (return (i32.const 4))))
    (if (i32.eqz (ref.is_null (table.get (i32.const 3)))) (then (return (i32.const 5))))
    (i32.const 0))
)
"#;

/// The marker the probe writes.
const MARKER: i64 = 0x5a5a_a1a1_0c0c_7e7e;

/// How many times the probe tries to get the same slot twice.
const TRIES: usize = 4;

/// Proves that `engine`'s pool hands a reused slot over clean (see the
/// module docs). `metered`: the engine consumes fuel. Runs on the calling
/// thread, blocking it on `runtime` for the probe's async calls.
pub(crate) fn prove_clean(
    engine: &Engine,
    metered: bool,
    runtime: &tokio::runtime::Handle,
    mode: SlotReset,
) -> Result<(), Unproven> {
    let probe = wat::parse_str(PROBE).map_err(|e| Unproven::Probe(e.to_string()))?;
    let module = Module::new(engine, probe).map_err(|e| Unproven::Probe(format!("{e:#}")))?;
    let instance_of = |store: &mut Store<()>| -> Result<(Instance, usize), Unproven> {
        if metered {
            store
                .set_fuel(u64::MAX / 2)
                .map_err(|e| Unproven::Probe(e.to_string()))?;
        }
        store.set_epoch_deadline(u64::MAX / 2);
        let instance = runtime
            .block_on(Instance::new_async(&mut *store, &module, &[]))
            .map_err(|e| Unproven::Probe(format!("{e:#}")))?;
        let memory = instance
            .get_memory(&mut *store, "memory")
            .ok_or_else(|| Unproven::Probe("no memory".into()))?;
        Ok((instance, memory.data_ptr(&*store) as usize))
    };
    for _ in 0..TRIES {
        let mut first = Store::new(engine, ());
        let (instance, slot) = instance_of(&mut first)?;
        let mark = instance
            .get_typed_func::<i64, ()>(&mut first, "mark")
            .map_err(|e| Unproven::Probe(e.to_string()))?;
        runtime
            .block_on(mark.call_async(&mut first, MARKER))
            .map_err(|e| Unproven::Probe(format!("{e:#}")))?;
        let (mut second, instance, reused) = if forced_leak(mode) {
            // The test hook's stand-in for a reset that resets nothing: the
            // "next" instance is the one the marker was written into.
            (first, instance, slot)
        } else {
            // Dropping the store deallocates the instance: the slot is reset
            // now, and the next instantiation of the same module prefers it
            // (wasmtime's module affinity).
            drop(first);
            let mut second = Store::new(engine, ());
            let (instance, reused) = instance_of(&mut second)?;
            (second, instance, reused)
        };
        if reused != slot {
            continue;
        }
        let check = instance
            .get_typed_func::<(), i32>(&mut second, "check")
            .map_err(|e| Unproven::Probe(e.to_string()))?;
        let found = runtime
            .block_on(check.call_async(&mut second, ()))
            .map_err(|e| Unproven::Probe(format!("{e:#}")))?;
        return match found {
            0 => Ok(()),
            1 => Err(Unproven::Leaked("writes to its data image")),
            2 => Err(Unproven::Leaked("writes to zero pages")),
            3 => Err(Unproven::Leaked("grown memory size")),
            4 => Err(Unproven::Leaked("writes to a grown page")),
            5 => Err(Unproven::Leaked("table entries")),
            other => Err(Unproven::Probe(format!("unknown answer {other}"))),
        };
    }
    Err(Unproven::NoReuse)
}

/// Whether the test hook `AIRLOCK_TEST_LEAKY_SLOT_RESET` (a comma-separated
/// list of modes, or `all`) makes the probe of `mode` see a reset that
/// left its marker behind. Only with the `test-hooks` feature.
#[cfg(feature = "test-hooks")]
fn forced_leak(mode: SlotReset) -> bool {
    std::env::var("AIRLOCK_TEST_LEAKY_SLOT_RESET").is_ok_and(|modes| {
        modes
            .split(',')
            .any(|m| m.trim() == "all" || m.trim() == mode.as_str())
    })
}

#[cfg(not(feature = "test-hooks"))]
fn forced_leak(_mode: SlotReset) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_back_as_they_are_written() {
        for mode in SlotReset::ALL {
            assert_eq!(mode.as_str().parse::<SlotReset>(), Ok(mode));
        }
        let refused = "memset".parse::<SlotReset>().unwrap_err();
        assert!(refused.contains("scan, prefix, decommit"), "{refused}");
    }

    #[test]
    fn a_fallback_never_relies_on_the_scan_it_replaces() {
        for mode in SlotReset::ALL {
            let chain = mode.fallbacks();
            assert_eq!(chain[0], mode);
            assert!(!chain[1..].contains(&SlotReset::Scan), "{mode}: {chain:?}");
        }
        assert_eq!(SlotReset::Decommit.fallbacks(), &[SlotReset::Decommit]);
    }

    #[test]
    fn the_probes_image_is_what_check_compares_it_with() {
        // The first 8 bytes of the data segment, as `check` loads them.
        assert_eq!(
            0x3a6b636f6c726961u64.to_le_bytes(),
            *b"airlock:",
            "check compares bytes 1024..1032"
        );
        assert!(PROBE.contains(r#"(data (i32.const 1024) "airlock: "#));
    }
}
