//! Scoped tokens through a real host and Redis: two teams on one fleet.
//! Team A's deployer, limited to `team-a*` queues and handlers, deploys,
//! binds, sets secrets and schedules, enqueues and reads within its scope.
//! On every route of the API, team B's handler, queue, jobs, secrets and
//! schedule answer it exactly as if they did not exist (404, the same body
//! as for a name nobody uses), fleet-wide routes answer 403, the lists hold
//! team A's alone, and team B's things are unchanged afterwards. Its events
//! start no job of team B; a flow cannot reach B's queue; a producer
//! inside the scope still sees only its own jobs. A Redis writer who drops
//! the scope from the token's record does not widen it: the record is
//! refused, counted, and the token keeps the scope it was sealed with.

use airlock_tests::api::{Api, ROUTES, error_code, error_field};
use airlock_tests::guest_bytes;
use airlock_tests::host::tokens;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const SECRETS_KEY: &str = "8f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";

/// Team B's things (created by the bootstrap admin), and names nobody uses
/// in their place.
struct TeamB {
    digest: String,
    job: String,
}

const B_HANDLER: &str = "team-b-noop";
const B_QUEUE: &str = "team-b-jobs";
const B_SCHEDULE: &str = "b-nightly";
const B_SECRET: &str = "B_KEY";
const GONE_HANDLER: &str = "team-b-gone";
const GONE_QUEUE: &str = "team-b-none";

async fn create_token(api: &Api, body: Value) -> String {
    let (status, issued) = api.post("/v1/api-tokens", tokens::ADMIN, body).await;
    assert_eq!(status, StatusCode::CREATED, "{issued}");
    issued["token"].as_str().unwrap().to_string()
}

async fn team_b(api: &Api) -> TeamB {
    let digest = api.upload_version(B_HANDLER, "noop").await;
    let (status, body) = api
        .put(
            &format!("/v1/queues/{B_QUEUE}"),
            tokens::ADMIN,
            json!({"handler": B_HANDLER, "events": ["order.created"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let job = api.enqueue(B_QUEUE, json!({"data": {"team": "b"}})).await;
    api.wait_done(&job).await;
    let (status, body) = api
        .put(
            &format!("/v1/queues/{B_QUEUE}/secrets/{B_SECRET}"),
            tokens::ADMIN,
            json!({"value": "b-secret-value", "allow": ["https://b.example.com"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = api
        .put(
            &format!("/v1/queues/{B_QUEUE}/schedules/{B_SCHEDULE}"),
            tokens::ADMIN,
            json!({"pattern": "0 3 * * *"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    TeamB { digest, job }
}

/// `method path` with team B's names in it (`gone`: names nobody uses
/// instead) and the query it needs.
fn concrete(method: &str, path: &str, b: &TeamB, gone: bool) -> String {
    let (handler, queue) = match gone {
        false => (B_HANDLER, B_QUEUE),
        true => (GONE_HANDLER, GONE_QUEUE),
    };
    let job_ref = match gone {
        false => b.job.clone(),
        true => format!("{GONE_QUEUE}:1"),
    };
    let name = if path.starts_with("/v1/handlers") {
        handler
    } else if path.contains("/secrets/") {
        B_SECRET
    } else {
        "team-b"
    };
    let id = if path.starts_with("/v1/hosts") {
        "api-host"
    } else {
        B_SCHEDULE
    };
    let path = path
        .replace("{name}", name)
        .replace("{queue}", queue)
        .replace("{ref}", &job_ref)
        .replace("{id}", id)
        .replace("{token}", &format!("wt_{}", "0".repeat(64)));
    match (method, path.as_str()) {
        ("get", "/v1/jobs") => format!("{path}?q={}", b.job.split(':').nth(1).unwrap()),
        ("get", p) if p.ends_with("/jobs") => format!("{path}?state=completed"),
        _ => path,
    }
}

/// A body each route takes (valid but for the names), with `queue` and
/// team B's digest.
fn body_for(method: &str, path: &str, queue: &str, b: &TeamB) -> Option<Value> {
    if method == "get" || method == "delete" {
        return None;
    }
    let tail = path.rsplit('/').next().unwrap();
    Some(match (method, tail) {
        ("put", "{queue}") => json!({"handler": "team-a-noop"}),
        (_, "canary") => json!({"digest": b.digest, "percent": 10}),
        (_, "clean") => json!({"confirm": queue, "state": "completed"}),
        (_, "drain" | "obliterate") if path.starts_with("/v1/queues") => json!({"confirm": queue}),
        (_, "jobs") => json!({"data": {}}),
        (_, "bulk") => json!({"jobs": [{"data": {}}]}),
        (_, "migrate") => json!({"to": b.digest}),
        (_, "replay") => json!({"digest": b.digest}),
        ("put", "{id}") => json!({"pattern": "0 4 * * *"}),
        ("put", "{name}") => json!({"value": "a-value", "allow": ["https://a.example.com"]}),
        (_, "flows") => json!({"name": "f", "queue": queue, "data": {}}),
        (_, "events") if path == "/v1/events" => json!({"name": "order.created", "data": {}}),
        (_, "api-tokens") => json!({"name": "x", "role": "reader"}),
        _ => json!({}),
    })
}

async fn call(
    api: &Api,
    token: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    if method == "post" && path.starts_with("/v1/handlers/") {
        let name = path.rsplit('/').next().unwrap();
        return api
            .upload(name, guest_bytes("noop"), "application/wasm", token)
            .await;
    }
    let m = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
    api.call(m, path, Some(token), body).await
}

/// What a route answers a scoped token about team B.
enum Expect {
    /// 404, as for names nobody uses.
    Absent,
    /// 403: a route about the whole fleet, or an admin's.
    Forbidden,
    /// 200/202 with nothing of team B in the answer.
    WithoutB,
    /// Not the token's to call (no token, or health).
    Skip,
}

fn expect(method: &str, path: &str) -> Expect {
    match path {
        "/healthz" | "/readyz" | "/v1/tokens/{token}/complete" => Expect::Skip,
        "/metrics" | "/v1/hosts" | "/v1/audit" => Expect::Forbidden,
        p if p.starts_with("/v1/api-tokens") || p.starts_with("/v1/hosts/") => Expect::Forbidden,
        "/v1/me" | "/v1/handlers" | "/v1/queues" | "/v1/jobs" | "/v1/stats" => Expect::WithoutB,
        "/v1/events" => Expect::WithoutB,
        "/v1/flows" => Expect::Absent,
        _ => {
            assert!(
                path.contains('{'),
                "{method} {path}: what should a scoped token get?"
            );
            Expect::Absent
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_scoped_token_sees_and_touches_its_own_queues_and_handlers_only() {
    let api = Api::start_with(&["--secrets-key", SECRETS_KEY]);
    let b = team_b(&api).await;
    let team_a = create_token(
        &api,
        json!({
            "name": "team-a",
            "role": "deployer",
            "scope": {"queues": ["team-a*"], "handlers": ["team-a*"]},
        }),
    )
    .await;

    // Inside its scope, team A's deployer does a deployer's work.
    let (status, body) = api
        .upload(
            "team-a-noop",
            guest_bytes("noop-batch"),
            "application/wasm",
            &team_a,
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    for (path, body) in [
        (
            "/v1/queues/team-a-jobs",
            json!({"handler": "team-a-noop", "events": ["order.created"]}),
        ),
        (
            "/v1/queues/team-a-jobs/secrets/A_KEY",
            json!({"value": "a-secret-value", "allow": ["https://a.example.com"]}),
        ),
        (
            "/v1/queues/team-a-jobs/schedules/a-nightly",
            json!({"pattern": "0 2 * * *"}),
        ),
    ] {
        let (status, answer) = api.put(path, &team_a, body).await;
        assert_eq!(status, StatusCode::OK, "PUT {path}: {answer}");
    }
    let (status, accepted) = api
        .post(
            "/v1/queues/team-a-jobs/jobs",
            &team_a,
            json!({"data": {"team": "a"}}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    let a_job = accepted["ref"].as_str().unwrap().to_string();
    let (status, job) = api.get(&format!("/v1/jobs/{a_job}/wait"), &team_a).await;
    assert_eq!(status, StatusCode::OK, "{job}");
    let (status, me) = api.get("/v1/me", &team_a).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["role"], "deployer", "{me}");
    assert_eq!(me["scope"]["queues"], json!(["team-a*"]), "{me}");

    // Outside it, every route answers as if team B's things were not there.
    let mut checked = 0;
    for &(method, path) in ROUTES {
        let expected = expect(method, path);
        if matches!(expected, Expect::Skip) {
            continue;
        }
        let theirs = concrete(method, path, &b, false);
        let (status, answer) = call(
            &api,
            &team_a,
            method,
            &theirs,
            body_for(method, path, B_QUEUE, &b),
        )
        .await;
        let what = format!("{method} {theirs}");
        match expected {
            Expect::Skip => unreachable!(),
            Expect::Forbidden => {
                assert_eq!(status, StatusCode::FORBIDDEN, "{what}: {answer}");
                assert_eq!(error_code(&answer), "forbidden", "{what}: {answer}");
            }
            Expect::WithoutB => {
                assert!(status.is_success(), "{what}: {status} {answer}");
                let text = answer.to_string();
                assert!(!text.contains("team-b"), "{what} shows team B: {answer}");
                assert!(
                    !text.contains(&b.digest),
                    "{what} shows team B's digest: {answer}"
                );
            }
            Expect::Absent => {
                let gone = concrete(method, path, &b, true);
                let (gone_status, gone_answer) = call(
                    &api,
                    &team_a,
                    method,
                    &gone,
                    body_for(method, path, GONE_QUEUE, &b),
                )
                .await;
                assert_eq!(status, StatusCode::NOT_FOUND, "{what}: {answer}");
                assert_eq!(
                    gone_status,
                    StatusCode::NOT_FOUND,
                    "{method} {gone}: {gone_answer}"
                );
                // The same answer as for a name nobody uses: nothing of
                // team B shows, not even that it exists.
                let unnamed = |v: &Value, names: [&str; 3]| {
                    let mut text = v.to_string();
                    for (i, n) in names.iter().enumerate() {
                        text = text.replace(n, &format!("<{i}>"));
                    }
                    text
                };
                let b_id = b.job.split(':').nth(1).unwrap();
                assert_eq!(
                    unnamed(&answer, [B_HANDLER, B_QUEUE, b_id]),
                    unnamed(&gone_answer, [GONE_HANDLER, GONE_QUEUE, "1"]),
                    "{what} answers otherwise than for a name nobody uses"
                );
            }
        }
        checked += 1;
    }
    assert!(checked >= 50, "only {checked} routes checked");

    // A binding of team A's queue cannot name team B's handler: the same
    // refusal as for a handler nobody deployed.
    let (status, theirs) = api
        .put(
            "/v1/queues/team-a-more",
            &team_a,
            json!({"handler": B_HANDLER}),
        )
        .await;
    let (_, gone) = api
        .put(
            "/v1/queues/team-a-more",
            &team_a,
            json!({"handler": GONE_HANDLER}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{theirs}");
    assert_eq!(error_field(&theirs), "handler");
    assert_eq!(
        theirs.to_string().replace(B_HANDLER, "<h>"),
        gone.to_string().replace(GONE_HANDLER, "<h>")
    );
    // A queue of team A's that an admin bound to team B's handler: team A
    // changes none of that handler's versions through it.
    let (status, body) = api
        .put(
            "/v1/queues/team-a-legacy",
            tokens::ADMIN,
            json!({"handler": B_HANDLER}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for (path, body) in [
        ("rollback", json!({})),
        ("promote", json!({})),
        ("migrate", json!({"to": b.digest})),
    ] {
        let (status, refused) = api
            .post(&format!("/v1/queues/team-a-legacy/{path}"), &team_a, body)
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {refused}");
        assert!(
            refused
                .to_string()
                .contains(&format!("handler `{B_HANDLER}`")),
            "{path}: {refused}"
        );
    }
    let (status, refused) = api
        .put(
            "/v1/queues/team-a-legacy/canary",
            &team_a,
            json!({"digest": b.digest, "percent": 10}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "canary: {refused}");
    // A flow cannot put a child on team B's queue.
    let (status, refused) = api
        .post(
            "/v1/flows",
            &team_a,
            json!({"name": "p", "queue": "team-a-jobs", "data": {},
                   "children": [{"name": "c", "queue": B_QUEUE, "data": {}}]}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{refused}");
    assert_eq!(error_field(&refused), "children[0].queue", "{refused}");
    // Team A's event starts a job on its own queue, none on team B's,
    // though both subscribe to it.
    let (status, delivery) = api
        .post(
            "/v1/events",
            &team_a,
            json!({"name": "order.created", "id": "a-1", "data": {}}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{delivery}");
    assert_eq!(
        delivery["jobs"],
        json!(["team-a-jobs:evt-a-1"]),
        "{delivery}"
    );
    let (status, _) = api
        .get(&format!("/v1/jobs/{B_QUEUE}:evt-a-1"), tokens::ADMIN)
        .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "team A's event started a job of team B"
    );

    // Team B's things are as they were.
    let (status, handler) = api
        .get(&format!("/v1/handlers/{B_HANDLER}"), tokens::ADMIN)
        .await;
    assert_eq!(status, StatusCode::OK, "{handler}");
    assert_eq!(handler["current"]["digest"], json!(b.digest), "{handler}");
    let (status, queue) = api
        .get(&format!("/v1/queues/{B_QUEUE}"), tokens::ADMIN)
        .await;
    assert_eq!(status, StatusCode::OK, "{queue}");
    assert_eq!(queue["handler"], B_HANDLER, "{queue}");
    assert_eq!(queue["counts"]["paused"], json!(false), "{queue}");
    // Its one job, and its schedule's next: nothing added, nothing removed.
    assert_eq!(queue["counts"]["completed"], 1, "{queue}");
    assert_eq!(queue["counts"]["waiting"], 0, "{queue}");
    assert_eq!(queue["counts"]["delayed"], 1, "{queue}");
    assert!(queue["canary"].is_null(), "{queue}");
    let job = api.job(&b.job).await;
    assert_eq!(job["state"], "completed", "{job}");
    let (_, secrets) = api
        .get(&format!("/v1/queues/{B_QUEUE}/secrets"), tokens::ADMIN)
        .await;
    assert_eq!(secrets["secrets"][0]["name"], B_SECRET, "{secrets}");
    let (status, schedule) = api
        .get(
            &format!("/v1/queues/{B_QUEUE}/schedules/{B_SCHEDULE}"),
            tokens::ADMIN,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{schedule}");
    assert_eq!(schedule["pattern"], "0 3 * * *", "{schedule}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_producer_inside_a_scope_sees_only_its_jobs_and_a_scope_is_sealed() {
    let api = Api::start();
    api.setup("team-a-jobs", "noop", json!({})).await;
    let web = create_token(
        &api,
        json!({"name": "team-a-web", "role": "producer", "scope": {"queues": ["team-a-*"]}}),
    )
    .await;
    let (status, mine) = api
        .post("/v1/queues/team-a-jobs/jobs", &web, json!({"data": {}}))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{mine}");
    let mine = mine["ref"].as_str().unwrap().to_string();
    let theirs = api.enqueue("team-a-jobs", json!({"data": {}})).await;
    let (status, _) = api.get(&format!("/v1/jobs/{mine}"), &web).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = api.get(&format!("/v1/jobs/{theirs}"), &web).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "a producer reads another's job in its scope"
    );
    let (status, refused) = api
        .put("/v1/queues/team-a-jobs", &web, json!({"handler": "noop"}))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");

    // Refused at creation, naming the field.
    for (body, field) in [
        (
            json!({"name": "x", "role": "admin", "scope": {"queues": ["a*"]}}),
            "scope",
        ),
        (
            json!({"name": "x", "role": "reader", "scope": {"queues": ["a:*"]}}),
            "scope.queues[0]",
        ),
        (
            json!({"name": "x", "role": "reader", "scope": {"queues": [], "handlers": []}}),
            "scope",
        ),
    ] {
        let (status, refused) = api.post("/v1/api-tokens", tokens::ADMIN, body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
        assert_eq!(error_field(&refused), field, "{refused}");
    }
    let (_, list) = api.get("/v1/api-tokens", tokens::ADMIN).await;
    let listed = list["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "team-a-web")
        .cloned()
        .unwrap();
    assert_eq!(
        listed["scope"],
        json!({"queues": ["team-a-*"], "handlers": []}),
        "{listed}"
    );

    // A Redis writer drops the scope from the record, keeping its seal:
    // the host refuses the record and keeps the one it verified, so the
    // token stays inside its scope.
    api.setup("team-b-jobs", "noop", json!({})).await;
    let key = "bull:{airlock}:api-tokens";
    let stored: Value =
        serde_json::from_str(api.redis.cli(&["HGET", key, "team-a-web"]).trim()).unwrap();
    let mut entry: Value = serde_json::from_str(stored["entry"].as_str().unwrap()).unwrap();
    entry.as_object_mut().unwrap().remove("scope");
    let widened = json!({"entry": entry.to_string(), "seal": stored["seal"]});
    api.redis
        .cli(&["HSET", key, "team-a-web", &widened.to_string()]);
    airlock_tests::eventually::eventually_some(
        "the host to refuse the record whose scope was dropped",
        std::time::Duration::from_secs(2),
        || async {
            let (_, metrics) = api.get("/metrics", tokens::READER).await;
            metrics
                .as_str()
                .unwrap_or("")
                .lines()
                .any(|l| l == "airlock_api_tokens_refused 1")
                .then_some(())
        },
    )
    .await;
    let (status, me) = api.get("/v1/me", &web).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(me["scope"]["queues"], json!(["team-a-*"]), "{me}");
    let (status, refused) = api.get("/v1/queues/team-b-jobs", &web).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "the dropped scope took: {refused}"
    );
    let (_, queues) = api.get("/v1/queues", &web).await;
    assert_eq!(queues["queues"].as_array().unwrap().len(), 1, "{queues}");
}
