//! Hostile: allocates (and touches) memory until something stops it. Must be
//! stopped by the memory cap.

use airlock_guest::{Context, JobError};

fn bomb(_ctx: &Context, _input: serde_json::Value) -> Result<usize, JobError> {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        hoard.push(vec![0xAB; 1 << 20]);
        std::hint::black_box(&hoard);
    }
}

airlock_guest::handler!(bomb);
