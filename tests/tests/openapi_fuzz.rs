//! The OpenAPI document tells the truth: an independent property-based
//! fuzzer (schemathesis) generates requests from the served
//! `/openapi.json` — valid ones, invalid ones, sequences — against a real
//! host, with every check on: no server errors, only documented statuses,
//! content types and bodies matching the schemas, schema-valid requests
//! accepted, schema-invalid ones refused, authentication enforced. Any
//! finding fails the test.
//!
//! The number of examples is bounded (`AIRLOCK_FUZZ_EXAMPLES`, default 40
//! per operation) and the seed fixed (`AIRLOCK_FUZZ_SEED`) so a run is
//! repeatable; set either to explore further.

use std::process::Command;

use airlock_tests::api::Api;
use airlock_tests::host::tokens;
use airlock_tests::python_tool;

fn schemathesis(api: &Api, args: &[&str]) {
    let examples = std::env::var("AIRLOCK_FUZZ_EXAMPLES").unwrap_or_else(|_| "40".into());
    let seed = std::env::var("AIRLOCK_FUZZ_SEED").unwrap_or_else(|_| "20261201".into());
    let out = Command::new(python_tool("schemathesis"))
        .arg("--no-color")
        .arg("run")
        .arg(format!("{}/openapi.json", api.url))
        .args([
            "--header",
            &format!("Authorization: Bearer {}", tokens::ADMIN),
        ])
        .args(["--checks", "all"])
        .args(["--max-examples", &examples])
        .args(["--seed", &seed])
        // No example database: a run depends on its seed alone, and
        // leaves nothing behind in the tree.
        .args(["--generation-database", "none"])
        // One worker: Python 3.11's AST parser trips over hypothesis
        // describing strategies from two threads at once.
        .args(["--workers", "1"])
        .args(args)
        .output()
        .expect("run schemathesis");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "schemathesis found the document and the server disagreeing (seed {seed}):\n{report}"
    );
    assert!(
        report.contains(" passed"),
        "schemathesis ran no test cases:\n{report}"
    );
}

#[test]
fn the_served_document_and_the_server_agree() {
    let api = Api::start();
    // Every operation, every phase, every check...
    schemathesis(&api, &["--exclude-operation-id", "handlers_upload"]);
    // ... and the upload, whose body is bytes: whether they are a handler
    // component cannot be said in JSON Schema, so a schema-valid upload may
    // still be refused (422, naming why); every other check holds.
    schemathesis(
        &api,
        &[
            "--include-operation-id",
            "handlers_upload",
            "--exclude-checks",
            "positive_data_acceptance",
        ],
    );
}
