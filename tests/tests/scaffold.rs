//! A newcomer's path, as the README gives it: `airlock new` writes a
//! project, one command builds it, `airlock run` runs it unchanged, and
//! `airlock deploy --queue` puts it on a running platform where a job of it
//! completes — in TypeScript, Python and Rust, with the tools a new user has
//! (npm, python3, cargo) and nothing else. The projects are light: a
//! TypeScript project's own directory stays small (the JS build toolchain
//! is installed once per machine, outside it), its `npm install` warns of
//! no peer dependencies, and a Python build writes nothing into the
//! Airlock checkout whose SDK it uses.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use airlock_tests::host::{HostOptions, HostProcess, tokens};
use airlock_tests::redis_server::RedisServer;
use airlock_tests::{airlock_bin, workspace_root};
use serde_json::Value;

/// What a command printed.
struct Printed {
    stdout: String,
    stderr: String,
}

/// Runs `program args` in `dir`; panics with its output unless it
/// succeeds. Both streams are returned: npm warns on stderr.
fn sh(dir: &Path, program: &str, args: &[&str], env: &[(&str, &str)]) -> Printed {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    let printed = Printed {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        out.status.success(),
        "`{program} {}` failed in {}:\n{}\n{}",
        args.join(" "),
        dir.display(),
        printed.stdout,
        printed.stderr
    );
    printed
}

/// `airlock new NAME --lang LANG`, the build commands the project's README
/// gives, then `airlock run` on its sample payload; what each build
/// command printed, in order.
fn new_project(
    parent: &Path,
    name: &str,
    lang: &str,
    build: &[&[&str]],
    wasm: &str,
) -> Vec<Printed> {
    let airlock = airlock_bin();
    let airlock = airlock.to_str().unwrap();
    let printed = sh(parent, airlock, &["new", name, "--lang", lang], &[]).stdout;
    assert!(printed.contains(&format!("created {name}")), "{printed}");
    let dir = parent.join(name);
    let steps = build
        .iter()
        .map(|step| sh(&dir, step[0], &step[1..], &[]))
        .collect();
    let payload = std::fs::read_to_string(dir.join("payload.json")).unwrap();
    let out = sh(
        &dir,
        airlock,
        &["run", wasm, "--data", &payload, "--json"],
        &[],
    )
    .stdout;
    let outcome: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(outcome["status"], "completed", "{lang}: {outcome}");
    assert!(dir.join(wasm).is_file(), "{lang}: no {wasm}");
    steps
}

/// The apparent size of what `dir` holds, in bytes, as `du -sb` counts it:
/// symlinks are not followed, since a TypeScript project's
/// `node_modules/@airlock/sdk` is a link to the SDK in the checkout, which
/// is not the project's to carry.
fn disk_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        // DirEntry::metadata does not traverse symlinks.
        let meta = entry.metadata().unwrap();
        total += meta.len();
        if meta.is_dir() {
            total += disk_bytes(&entry.path());
        }
    }
    total
}

/// Files by path, with their sizes and modification times.
type Files = BTreeMap<PathBuf, (u64, SystemTime)>;

/// Every file under `dir` (ignored ones too) with its size and
/// modification time: what `git status --ignored` cannot see, a file
/// rewritten in an ignored directory (`__pycache__/`), changes it.
fn files_under(dir: &Path, into: &mut Files) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            files_under(&entry.path(), into);
        } else {
            into.insert(entry.path(), (meta.len(), meta.modified().unwrap()));
        }
    }
}

/// The checkout's Python SDK as git sees it, ignored files listed one by
/// one (`__pycache__/*.pyc`, `*.egg-info/`), and as the file system does.
fn python_sdk_state() -> (String, Files) {
    let root = workspace_root();
    let status = sh(
        &root,
        "git",
        &[
            "status",
            "--porcelain",
            "--ignored",
            "--untracked-files=all",
            "--",
            "guest-sdk/python",
        ],
        &[],
    )
    .stdout;
    let mut files = BTreeMap::new();
    files_under(&root.join("guest-sdk").join("python"), &mut files);
    (status, files)
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
    )
    .stdout;
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
    )
    .stdout;
    assert!(out.contains("\"completed\""), "{name}: {out}");
}

/// A platform (Redis and one host with the API) to deploy new projects to,
/// and a directory to write them in.
fn platform(id: &str) -> (tempfile::TempDir, RedisServer, HostProcess) {
    let parent = tempfile::tempdir().unwrap();
    let redis = RedisServer::start();
    let host = HostProcess::start(
        &redis.url(),
        HostOptions {
            id: id.into(),
            api: true,
            ..HostOptions::default()
        },
    );
    (parent, redis, host)
}

#[test]
fn a_new_typescript_handler_builds_runs_and_deploys_and_stays_light() {
    let (parent, _redis, host) = platform("newcomer-ts");
    let parent = parent.path();
    let ts = new_project(
        parent,
        "hello-ts",
        "ts",
        &[
            &["npm", "install", "--no-audit", "--no-fund"],
            &["npm", "run", "build"],
        ],
        "hello-ts.wasm",
    );
    // The SDK depends on nothing (its build toolchain is installed outside
    // the project), so npm has no peer-dependency conflict to warn about.
    let install = format!("{}\n{}", ts[0].stdout, ts[0].stderr);
    let lower = install.to_lowercase();
    assert!(
        !lower.contains("peer") && !lower.contains("eresolve"),
        "npm install warned:\n{install}"
    );
    // A TypeScript project is light: its node_modules (TypeScript, a link
    // to the SDK) and the ~12 MiB component it built, 50 MB at most
    // (~43 MB when written), not the ~400 MB of the engines.
    let bytes = disk_bytes(&parent.join("hello-ts"));
    assert!(
        bytes <= 50_000_000,
        "the TypeScript project takes {bytes} bytes after npm install and a build"
    );
    deploy_and_run(&host, parent, "hello-ts", "hello-ts.wasm");
}

#[test]
fn a_new_python_handler_builds_without_writing_into_the_checkout() {
    let (parent, _redis, host) = platform("newcomer-py");
    let parent = parent.path();
    // A Python project builds with a copy of the SDK in its own .venv:
    // componentize-py writes bytecode next to the sources it is given, and
    // an editable install writes egg-info, neither of which belongs in the
    // checkout.
    let before = python_sdk_state();
    new_project(
        parent,
        "hello-py",
        "python",
        &[&["./build.sh"]],
        "hello-py.wasm",
    );
    let after = python_sdk_state();
    assert_eq!(
        before.0, after.0,
        "the Python build changed `git status --ignored guest-sdk/python`"
    );
    let changed: Vec<_> = after
        .1
        .iter()
        .filter(|(path, state)| before.1.get(*path) != Some(*state))
        .map(|(path, _)| path)
        .chain(before.1.keys().filter(|path| !after.1.contains_key(*path)))
        .collect();
    assert!(
        changed.is_empty(),
        "the Python build wrote into the checkout: {changed:?}"
    );
    deploy_and_run(&host, parent, "hello-py", "hello-py.wasm");
}

#[test]
fn a_new_rust_handler_builds_runs_and_deploys() {
    let (parent, _redis, host) = platform("newcomer-rs");
    let parent = parent.path();
    let rust_wasm = "target/wasm32-wasip2/release/hello_rs.wasm";
    new_project(
        parent,
        "hello-rs",
        "rust",
        &[&["cargo", "build", "--release", "--quiet"]],
        rust_wasm,
    );
    deploy_and_run(&host, parent, "hello-rs", rust_wasm);
}

/// A name the languages cannot all take is refused, naming the argument.
#[test]
fn a_name_some_language_cannot_take_is_refused() {
    let parent = tempfile::tempdir().unwrap();
    let parent = parent.path();
    let out = Command::new(airlock_bin())
        .args(["new", "2fast"])
        .current_dir(parent)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("NAME: `2fast`"));
}
