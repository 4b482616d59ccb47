//! Rebuilds the binary when `airlock new`'s templates or the dashboard's
//! build change: both are compiled in with `include_dir!`, which cargo does
//! not track by itself.
//!
//! The dashboard (`ui/`, built with npm by `make ui` into `ui/dist`) is
//! copied into `$OUT_DIR/ui`, which the binary embeds. Without a build —
//! a plain `cargo build` on a fresh clone — the binary embeds one page
//! saying how to build it, so everything else still builds and runs.
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=templates");
    println!("cargo:rerun-if-changed=ui/dist");
    let out = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("ui");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("create $OUT_DIR/ui");
    let dist = Path::new("ui/dist");
    if dist.join("index.html").is_file() {
        copy_dir(dist, &out);
    } else {
        std::fs::write(
            out.join("index.html"),
            "<!doctype html><meta charset=utf-8><title>Airlock</title>\
             <p>This binary was built without its dashboard: run <code>make ui</code> \
             (or <code>make host</code>), then build again.</p>",
        )
        .expect("write the placeholder page");
    }
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read ui/dist") {
        let entry = entry.expect("read ui/dist");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            std::fs::create_dir_all(&target).expect("create a dashboard folder");
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a dashboard file");
        }
    }
}
