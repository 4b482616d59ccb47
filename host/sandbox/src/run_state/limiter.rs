//! [`MemoryLimiter`]: counts a run's linear-memory growth against its cap
//! and keeps the peak. Apart because wasmtime calls it on its own (the
//! store's resource limiter), not through the run's imports.

use wasmtime::ResourceLimiter;

/// Tracks linear-memory growth against the run's cap.
///
/// Wasmtime asks before every growth (including the initial allocation), so
/// the running total here is the guest's memory footprint and its maximum is
/// the run's peak.
pub struct MemoryLimiter {
    cap_bytes: u64,
    total_bytes: u64,
    peak_bytes: u64,
    /// Set when a growth was refused, so a trap that follows (Rust aborts
    /// on allocation failure) is reported as the memory limit it really is.
    pub limit_hit: bool,
    /// The last allowed growth, undone if the growth then fails.
    last_growth: u64,
}

impl MemoryLimiter {
    pub(super) fn new(cap_bytes: u64) -> Self {
        MemoryLimiter {
            cap_bytes,
            total_bytes: 0,
            peak_bytes: 0,
            limit_hit: false,
            last_growth: 0,
        }
    }

    /// Highest total linear memory reached.
    pub fn peak_bytes(&self) -> u64 {
        self.peak_bytes
    }

    /// Starts the next job of a warm instance under `cap_bytes`: its peak
    /// starts at the memory the instance already has (earlier jobs' growth
    /// stays: linear memory never shrinks), and counts from there.
    pub(super) fn begin_job(&mut self, cap_bytes: u64) {
        self.cap_bytes = cap_bytes;
        self.peak_bytes = self.total_bytes;
        self.limit_hit = false;
        self.last_growth = 0;
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let growth = (desired - current) as u64;
        if self.total_bytes + growth > self.cap_bytes {
            self.limit_hit = true;
            return Ok(false);
        }
        self.total_bytes += growth;
        self.peak_bytes = self.peak_bytes.max(self.total_bytes);
        self.last_growth = growth;
        Ok(true)
    }

    fn memory_grow_failed(&mut self, _error: wasmtime::Error) -> wasmtime::Result<()> {
        self.total_bytes -= self.last_growth;
        self.limit_hit = true;
        Ok(())
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Tables hold function references; a million is far past any real
        // handler and keeps a hostile one from using host memory this way.
        Ok(desired <= 1_000_000)
    }

    fn instances(&self) -> usize {
        64
    }

    fn tables(&self) -> usize {
        64
    }

    fn memories(&self) -> usize {
        16
    }
}
