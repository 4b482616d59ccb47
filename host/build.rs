//! Rebuilds the binary when `airlock new`'s templates change: they are
//! compiled in with `include_dir!`, which cargo does not track by itself.
fn main() {
    println!("cargo:rerun-if-changed=templates");
}
