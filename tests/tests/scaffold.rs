//! A newcomer's path, as the README gives it: `airlock new` writes a
//! project, one command builds it, `airlock run` runs it unchanged, and
//! `airlock deploy --queue` puts it on a running platform where a job of it
//! completes — in TypeScript, Python and Rust, with the tools a new user has
//! (npm, python3, cargo) and nothing else.

use std::path::Path;
use std::process::Command;

use airlock_tests::airlock_bin;
use airlock_tests::host::{HostOptions, HostProcess, tokens};
use airlock_tests::redis_server::RedisServer;
use serde_json::Value;

/// Runs `program args` in `dir`; panics with its output unless it succeeds.
fn sh(dir: &Path, program: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "`{program} {}` failed in {}:\n{stdout}\n{}",
        args.join(" "),
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `airlock new NAME --lang LANG`, the build command the project's README
/// gives, then `airlock run` on its sample payload; the built component.
fn new_project(parent: &Path, name: &str, lang: &str, build: &[&[&str]], wasm: &str) -> Vec<u8> {
    let airlock = airlock_bin();
    let airlock = airlock.to_str().unwrap();
    let printed = sh(parent, airlock, &["new", name, "--lang", lang], &[]);
    assert!(printed.contains(&format!("created {name}")), "{printed}");
    let dir = parent.join(name);
    for step in build {
        sh(&dir, step[0], &step[1..], &[]);
    }
    let payload = std::fs::read_to_string(dir.join("payload.json")).unwrap();
    let out = sh(
        &dir,
        airlock,
        &["run", wasm, "--data", &payload, "--json"],
        &[],
    );
    let outcome: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(outcome["status"], "completed", "{lang}: {outcome}");
    std::fs::read(dir.join(wasm)).unwrap()
}

/// Deploys `wasm` of project `name` with `airlock deploy --queue` and
/// enqueues its sample payload with `--wait`: the job completes.
fn deploy_and_run(host: &HostProcess, parent: &Path, name: &str, wasm: &str) {
    let dir = parent.join(name);
    let airlock = airlock_bin();
    let airlock = airlock.to_str().unwrap();
    let url = host.api_url();
    let env = [
        ("AIRLOCK_URL", url.as_str()),
        ("AIRLOCK_TOKEN", tokens::ADMIN),
    ];
    let out = sh(
        &dir,
        airlock,
        &["deploy", wasm, "--name", name, "--queue", name],
        &env,
    );
    assert!(
        out.contains(&format!("bound queue {name} to {name}")),
        "{out}"
    );
    let payload = std::fs::read_to_string(dir.join("payload.json")).unwrap();
    let out = sh(
        &dir,
        airlock,
        &["--json", "enqueue", name, &payload, "--wait"],
        &env,
    );
    assert!(out.contains("\"completed\""), "{name}: {out}");
}

#[test]
fn a_new_handler_in_each_language_builds_runs_and_deploys() {
    let parent = tempfile::tempdir().unwrap();
    let parent = parent.path();
    let redis = RedisServer::start();
    let host = HostProcess::start(
        &redis.url(),
        HostOptions {
            id: "newcomer".into(),
            api: true,
            ..HostOptions::default()
        },
    );

    new_project(
        parent,
        "hello-ts",
        "ts",
        &[
            &["npm", "install", "--no-audit", "--no-fund"],
            &["npm", "run", "build"],
        ],
        "hello-ts.wasm",
    );
    deploy_and_run(&host, parent, "hello-ts", "hello-ts.wasm");

    new_project(
        parent,
        "hello-py",
        "python",
        &[&["./build.sh"]],
        "hello-py.wasm",
    );
    deploy_and_run(&host, parent, "hello-py", "hello-py.wasm");

    let rust_wasm = "target/wasm32-wasip2/release/hello_rs.wasm";
    new_project(
        parent,
        "hello-rs",
        "rust",
        &[&["cargo", "build", "--release", "--quiet"]],
        rust_wasm,
    );
    deploy_and_run(&host, parent, "hello-rs", rust_wasm);

    // A name the languages cannot all take is refused, naming the argument.
    let out = Command::new(airlock_bin())
        .args(["new", "2fast"])
        .current_dir(parent)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("NAME: `2fast`"));
}
