//! Hostile: spins forever. Must be stopped by fuel (or the deadline when the
//! queue runs without fuel).

use airlock_guest::{Context, JobError};

fn spin(_ctx: &Context, _input: serde_json::Value) -> Result<(), JobError> {
    let mut x: u64 = 0;
    loop {
        x = std::hint::black_box(x.wrapping_add(1));
    }
}

airlock_guest::handler!(spin);
