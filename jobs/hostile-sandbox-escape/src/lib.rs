//! Hostile: tries to leave the sandbox through WASI — read files, list
//! directories, read environment variables and arguments, open TCP and UDP
//! sockets, resolve host names — and reports what each attempt got.
//!
//! Output: `{ "<attempt>": "denied: <error>" | "ALLOWED: <what it got>" }`.
//! The tests assert that every attempt is denied.

use std::collections::BTreeMap;
use std::net::{TcpStream, ToSocketAddrs, UdpSocket};

use airlock_guest::{Context, JobError};

fn report<T: std::fmt::Debug, E: std::fmt::Display>(result: Result<T, E>) -> String {
    match result {
        Ok(v) => format!("ALLOWED: {v:?}"),
        Err(e) => format!("denied: {e}"),
    }
}

fn escape(
    _ctx: &Context,
    _input: serde_json::Value,
) -> Result<BTreeMap<&'static str, String>, JobError> {
    let mut attempts = BTreeMap::new();
    attempts.insert("read_file", report(std::fs::read_to_string("/etc/passwd")));
    attempts.insert(
        "read_dir",
        report(std::fs::read_dir("/").map(|d| d.count())),
    );
    attempts.insert(
        "write_file",
        report(std::fs::write("/tmp/airlock-escape", b"owned")),
    );
    let vars: Vec<(String, String)> = std::env::vars().collect();
    attempts.insert(
        "env_vars",
        if vars.is_empty() {
            "denied: no environment variables".to_string()
        } else {
            format!("ALLOWED: {vars:?}")
        },
    );
    attempts.insert("env_home", report(std::env::var("HOME")));
    let args: Vec<String> = std::env::args().collect();
    attempts.insert(
        "args",
        if args.is_empty() {
            "denied: no arguments".to_string()
        } else {
            format!("ALLOWED: {args:?}")
        },
    );
    attempts.insert("tcp_connect", report(TcpStream::connect("127.0.0.1:6379")));
    attempts.insert("udp_bind", report(UdpSocket::bind("127.0.0.1:0")));
    attempts.insert(
        "dns_lookup",
        report(("localhost", 80).to_socket_addrs().map(|a| a.count())),
    );
    Ok(attempts)
}

airlock_guest::handler!(escape);
