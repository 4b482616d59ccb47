//! Hostile: recurses without bound. Must be stopped by the wasm stack limit
//! (or a memory fault when the shadow stack in linear memory runs out first).

use airlock_guest::{Context, JobError};

#[inline(never)]
#[allow(unconditional_recursion)]
fn descend(depth: u64, trail: &mut [u64; 8]) -> u64 {
    trail[(depth % 8) as usize] = depth;
    let mut local = [depth; 16];
    std::hint::black_box(&mut local);
    descend(depth + 1, trail) + local[3]
}

fn recurse(_ctx: &Context, _input: serde_json::Value) -> Result<u64, JobError> {
    let mut trail = [0u64; 8];
    Ok(descend(0, &mut trail))
}

airlock_guest::handler!(recurse);
