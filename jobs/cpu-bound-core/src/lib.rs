//! The CPU-bound workload: `rounds` chained SHA-256 hashes of a seed.
//!
//! The same code runs as the `cpu-bound` guest and natively in the
//! benchmarks, so the ratio between the two is what the sandbox costs on
//! compute-heavy work.

use sha2::{Digest, Sha256};

/// Hashes `seed` `rounds` times, feeding each digest into the next round,
/// and returns the final digest as lowercase hex.
pub fn hash_chain(seed: &str, rounds: u64) -> String {
    let mut digest: [u8; 32] = Sha256::digest(seed.as_bytes()).into();
    for _ in 0..rounds {
        digest = Sha256::digest(digest).into();
    }
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn zero_rounds_is_the_seed_digest() {
        assert_eq!(
            super::hash_chain("abc", 0),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
