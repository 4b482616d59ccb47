//! Shared helpers for Airlock's integration tests: where the built guests
//! and the `airlock` binary are, and (for queue tests) a private
//! `redis-server` per test.

use std::path::{Path, PathBuf};

pub mod redis_server;

pub use eventually::{eventually, eventually_blocking, eventually_some};

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace root")
        .to_path_buf()
}

/// Cargo's target directory (honours `CARGO_TARGET_DIR`).
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => workspace_root().join("target"),
    }
}

/// Path of a built guest, by crate name (`payment-webhook`).
///
/// Panics with the fix when guests have not been built: tests must run real
/// guests, never skip them.
pub fn guest_path(crate_name: &str) -> PathBuf {
    let file = format!("{}.wasm", crate_name.replace('-', "_"));
    let path = target_dir()
        .join("wasm32-wasip2")
        .join("release")
        .join(file);
    assert!(
        path.exists(),
        "guest {} is not built ({}); run `make guests` first",
        crate_name,
        path.display()
    );
    path
}

/// The bytes of a built guest.
pub fn guest_bytes(crate_name: &str) -> Vec<u8> {
    std::fs::read(guest_path(crate_name)).expect("read guest")
}

/// A port on 127.0.0.1 that was free a moment ago: bind port 0, read it,
/// release it (for a server another process must know the address of
/// before it starts).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local address").port()
}

pub mod api;
pub mod eventually;
pub mod host;
pub mod http_server;
pub mod mock_gateway;
pub mod otlp;

/// Path of a Node interop script (`tests/interop/<name>`), checking that
/// its npm dependencies are installed.
pub fn interop_script(name: &str) -> PathBuf {
    let dir = workspace_root().join("tests").join("interop");
    assert!(
        dir.join("node_modules").join("bullmq").exists(),
        "Node's bullmq is not installed in {}; run `make interop-deps` (npm ci) first",
        dir.display()
    );
    dir.join(name)
}

/// Path of a dashboard browser script (`tests/ui/<name>`), checking that its
/// npm dependencies (`playwright-core`) are installed.
pub fn ui_script(name: &str) -> PathBuf {
    let dir = workspace_root().join("tests").join("ui");
    assert!(
        dir.join("node_modules").join("playwright-core").exists(),
        "playwright-core is not installed in {}; run `make ui-test-deps` (npm ci) first",
        dir.display()
    );
    dir.join(name)
}

/// A compiled-component cache shared by every test process of a run, so
/// each guest compiles once per `make test`, not once per test.
pub fn shared_cache_dir() -> PathBuf {
    target_dir().join("airlock-test-cache")
}

/// A sandbox configuration on [`shared_cache_dir`], sealing with the test
/// fleet's key like the tests' hosts: for tests of what runs, not of
/// compiling, so each guest compiles once per run.
pub fn shared_cache_config() -> airlock_sandbox::SandboxConfig {
    airlock_sandbox::SandboxConfig {
        cache_dir: Some(shared_cache_dir()),
        fleet_key: Some(
            airlock_sandbox::ArtifactKey::fleet(host::TEST_FLEET_KEY.as_bytes())
                .expect("the test fleet key is long enough"),
        ),
        ..airlock_sandbox::SandboxConfig::default()
    }
}

/// A Python tool of the API tests (`python`, `schemathesis`), from the
/// pinned virtualenv `make openapi-tools` builds under the target dir.
pub fn python_tool(name: &str) -> PathBuf {
    let path = target_dir().join("py").join("bin").join(name);
    assert!(
        path.exists(),
        "{} is missing; run `make openapi-tools` first (make test does)",
        path.display()
    );
    path
}

/// An HTTP client for API tests. reqwest is built (for the `airlock` CLI)
/// without a bundled TLS provider, so one is installed first.
pub fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// Path of the `airlock` binary built by `cargo build`.
pub fn airlock_bin() -> PathBuf {
    let path = target_dir().join("debug").join("airlock");
    assert!(
        path.exists(),
        "airlock binary missing at {}; run `cargo build` first (make test does)",
        path.display()
    );
    path
}
