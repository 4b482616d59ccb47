//! The HTTP API (axum), versioned under `/v1`, JSON in and out.
//!
//! Every `/v1` route needs a bearer token ([`auth`]) but
//! `POST /v1/tokens/{token}/complete`, whose wait token is its credential
//! ([`tokens`]), and `GET /v1/jobs/{ref}/events`, which also takes a read
//! token in its query ([`read_tokens`], [`feed`]). Outside `/v1`, `/healthz`, `/readyz`, `/openapi.json` and
//! the dashboard's files (`/ui`, `/ui/…`) need none; `/metrics` needs a
//! reader token. Each handler enforces it by taking an [`auth::Caller`]
//! (there is no auth layer): a handler without one is public.
//!
//! Every error is a status with a JSON body naming the problem
//! ([`error`]), including axum's own refusals (unknown route, wrong method,
//! oversized body). Request bodies are read strictly: an array where the
//! document says object is refused ([`error::parse_json`]). The OpenAPI
//! document at `/openapi.json` is generated from the route definitions
//! themselves (utoipa) and completed by [`openapi`] with what every route
//! shares and what derive macros cannot say, so it lists what the server
//! really answers and accepts under `/v1` and the health routes
//! (`/openapi.json` itself and `/ui` are not in it). A property-based
//! fuzzer checks that in `make test` (`tests/tests/openapi_fuzz.rs`).
//!
//! | area | module |
//! |---|---|
//! | handler components | [`handlers`] |
//! | queue bindings, counts, pause/resume, drain/clean/obliterate, bulk retry of failed jobs, per-key state (`/keys`) | [`queues`] |
//! | what a queue's new jobs run: canary, promote, rollback | [`versions`] |
//! | a queue's secrets (set, list, delete; values never returned) | [`secrets`] |
//! | enqueue (one or bulk), list | [`jobs`] |
//! | one job: inspect, timeline, transcript, retry, remove, promote, cancel, repin, wait | [`job`] |
//! | replaying a job against a handler version; migrating a queue's parked jobs | [`replays`] |
//! | Server-Sent Events of a queue or a job (the SSE feed) | [`feed`] |
//! | a read token for one job's event stream, for a browser | [`read_tokens`] |
//! | flows | [`flows`] |
//! | schedules and their on-demand runs (`…/trigger`) | [`schedules`] |
//! | sending events and listing recent ones (`/v1/events`) | [`sent_events`] |
//! | completing a wait token (no bearer token) | [`tokens`] |
//! | managed API tokens: create, list, rotate, revoke | [`api_tokens`] |
//! | the audit log of every change (`/v1/audit`) | [`audit`] |
//! | the fleet: hosts, drain, resume | [`hosts`] |
//! | `/v1/me`, `/v1/stats` | [`stats`] |
//! | `/healthz`, `/readyz`, `/metrics` | [`health`] |
//! | `/openapi.json` (built by [`openapi`], served by [`router`]) | — |
//! | the dashboard, `/ui` | [`ui`] |

pub mod api_tokens;
pub mod audit;
pub mod auth;
pub mod error;
pub mod feed;
pub mod flows;
pub mod guard;
pub mod handlers;
pub mod health;
pub mod hosts;
pub mod job;
pub mod jobs;
pub mod lookup;
pub mod openapi;
pub mod queues;
pub mod read_tokens;
pub mod replays;
pub mod schedules;
pub mod secrets;
pub mod sent_events;
pub mod stats;
pub mod tokens;
pub mod ui;
pub mod versions;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::HeaderValue;
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use self::auth::Tokens;
use crate::access::ManagedTokens;
use crate::access::read_tokens::ReadTokens;
use crate::audit::Audit;
use crate::queue::QueueService;
use crate::registry::Registry;
use crate::worker::HostContext;

/// Request size limits.
#[derive(Debug, Clone)]
pub struct BodyLimits {
    /// Largest handler upload (the component size cap).
    pub max_upload_bytes: usize,
    /// Largest job data, per job.
    pub max_job_data_bytes: usize,
    /// Largest JSON request (a bulk enqueue).
    pub max_json_bytes: usize,
}

impl Default for BodyLimits {
    fn default() -> Self {
        BodyLimits {
            max_upload_bytes: 32 << 20,
            max_job_data_bytes: 1 << 20,
            max_json_bytes: 16 << 20,
        }
    }
}

/// What every route can reach.
#[derive(Clone)]
pub struct ApiState {
    host: Arc<HostContext>,
    tokens: Arc<Tokens>,
    /// The managed tokens, on a host with the fleet's key.
    managed: Option<Arc<ManagedTokens>>,
    /// The fleet's audit log.
    audit: Arc<Audit>,
    /// Read tokens for a browser's event stream, on a host with the
    /// fleet's key.
    read_tokens: Option<Arc<ReadTokens>>,
    /// The origins whose pages may read the API cross-origin (CORS,
    /// `--cors-origin`); none: no CORS headers at all.
    cors_origins: Arc<Vec<HeaderValue>>,
    limits: Arc<BodyLimits>,
    redis_health: guard::RedisHealth,
}

impl ApiState {
    /// State over a host's context, with its bootstrap tokens, its managed
    /// tokens (on a host with the fleet's key) and limits.
    pub fn new(
        host: Arc<HostContext>,
        tokens: Tokens,
        managed: Option<Arc<ManagedTokens>>,
        limits: BodyLimits,
    ) -> Self {
        let redis_health = guard::RedisHealth::watch(host.queues.store().clone());
        let audit_key = host.sandbox.fleet_derived_key(crate::audit::PURPOSE);
        let audit = Arc::new(Audit::new(host.queues.store().clone(), audit_key));
        let read_tokens = (host.sandbox)
            .fleet_derived_key(crate::access::read_tokens::PURPOSE)
            .map(|key| Arc::new(ReadTokens::new(key)));
        ApiState {
            host,
            tokens: Arc::new(tokens),
            managed,
            audit,
            read_tokens,
            cors_origins: Arc::default(),
            limits: Arc::new(limits),
            redis_health,
        }
    }

    /// The same state, answering cross-origin requests from `origins`'
    /// pages (CORS: `GET` only, so a page can open a job's event stream
    /// with a read token; a request with an `Authorization` header is
    /// never allowed cross-origin).
    pub fn with_cors_origins(mut self, origins: Vec<HeaderValue>) -> Self {
        self.cors_origins = Arc::new(origins);
        self
    }

    /// Read tokens (`None` on a host without the fleet's key).
    pub fn read_tokens(&self) -> Option<&ReadTokens> {
        self.read_tokens.as_deref()
    }

    /// The managed tokens (`None` on a host without the fleet's key).
    pub fn managed_tokens(&self) -> Option<&Arc<ManagedTokens>> {
        self.managed.as_ref()
    }

    /// The fleet's audit log.
    pub fn audit_log(&self) -> &Audit {
        &self.audit
    }

    /// Records in the audit log that `caller` did `action` to `target`
    /// (after the change succeeded; `details` never holds a secret's
    /// value).
    pub async fn audit(
        &self,
        caller: &auth::Caller,
        action: &str,
        target: &str,
        details: serde_json::Value,
    ) {
        self.audit.record(caller, action, target, details).await;
    }

    /// Whether Redis is reachable (probed in the background).
    pub fn redis_health(&self) -> &guard::RedisHealth {
        &self.redis_health
    }

    /// The configured tokens.
    pub fn tokens(&self) -> &Tokens {
        &self.tokens
    }

    /// Request size limits.
    pub fn limits(&self) -> &BodyLimits {
        &self.limits
    }

    /// The queues.
    pub fn queues(&self) -> &QueueService {
        &self.host.queues
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.host.registry
    }

    /// The host context.
    pub fn host(&self) -> &Arc<HostContext> {
        &self.host
    }
}

/// The OpenAPI document's fixed parts; paths and schemas come from the routes.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Airlock",
        description = "Run untrusted background jobs as WebAssembly components on BullMQ queues.",
        version = "0.1.0"
    ),
    modifiers(&BearerAuth),
    tags(
        (name = "handlers", description = "Handler components"),
        (name = "queues", description = "Queue bindings and queue actions"),
        (name = "jobs", description = "Jobs"),
        (name = "events", description = "Events: the live feed of queue activity (Server-Sent Events) and events sent to the queues subscribed to them"),
        (name = "flows", description = "Parent jobs with children"),
        (name = "schedules", description = "Cron and interval schedules"),
        (name = "hosts", description = "The fleet"),
        (name = "tokens", description = "Managed API tokens: create, list, rotate, revoke"),
        (name = "audit", description = "The audit log of every change"),
        (name = "health", description = "Health, readiness, metrics")
    )
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The routes and the OpenAPI document describing them.
pub fn routes(state: ApiState) -> (Router, utoipa::openapi::OpenApi) {
    let limits = state.limits.clone();
    let uploads = OpenApiRouter::new()
        .routes(routes!(handlers::upload))
        .layer(DefaultBodyLimit::max(limits.max_upload_bytes));
    let json = OpenApiRouter::new()
        .routes(routes!(handlers::list))
        .routes(routes!(handlers::get, handlers::delete))
        .routes(routes!(queues::list))
        .routes(routes!(queues::get, queues::bind, queues::unbind))
        .routes(routes!(queues::pause))
        .routes(routes!(versions::rollback))
        .routes(routes!(versions::set_canary))
        .routes(routes!(versions::promote))
        .routes(routes!(queues::resume))
        .routes(routes!(queues::drain))
        .routes(routes!(queues::clean))
        .routes(routes!(queues::retry_failed))
        .routes(routes!(queues::obliterate))
        .routes(routes!(queues::keys))
        .routes(routes!(jobs::enqueue, jobs::list))
        .routes(routes!(jobs::enqueue_bulk))
        .routes(routes!(jobs::search))
        .routes(routes!(job::get, job::remove))
        .routes(routes!(job::timeline))
        .routes(routes!(job::transcript))
        .routes(routes!(replays::replay_job))
        .routes(routes!(replays::migrate))
        .routes(routes!(job::retry))
        .routes(routes!(job::promote))
        .routes(routes!(job::cancel))
        .routes(routes!(job::repin))
        .routes(routes!(job::wait))
        .routes(routes!(feed::queue_events))
        .routes(routes!(feed::job_events))
        .routes(routes!(read_tokens::issue))
        .routes(routes!(flows::add))
        .routes(routes!(schedules::list))
        .routes(routes!(schedules::get, schedules::put, schedules::delete))
        .routes(routes!(schedules::trigger))
        .routes(routes!(secrets::list))
        .routes(routes!(secrets::put, secrets::delete))
        .routes(routes!(sent_events::send, sent_events::recent))
        .routes(routes!(tokens::complete))
        .routes(routes!(api_tokens::create, api_tokens::list))
        .routes(routes!(api_tokens::revoke))
        .routes(routes!(api_tokens::rotate))
        .routes(routes!(audit::list))
        .routes(routes!(hosts::list))
        .routes(routes!(stats::me))
        .routes(routes!(stats::stats))
        .routes(routes!(hosts::drain))
        .routes(routes!(hosts::resume))
        .routes(routes!(health::healthz))
        .routes(routes!(health::readyz))
        .routes(routes!(health::metrics))
        .layer(DefaultBodyLimit::max(limits.max_json_bytes));
    let (router, api) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(uploads)
        .merge(json)
        .with_state(state)
        .split_for_parts();
    (router, api)
}

/// The complete application: routes plus `/openapi.json` (served without
/// a token: it holds no secrets, and tools must be able to read it).
pub fn router(state: ApiState) -> Router {
    let (router, api) = routes(state.clone());
    let doc = Arc::new(openapi::document(&api));
    let guard = axum::middleware::from_fn_with_state(state.clone(), guard::guard);
    let router = router
        .route("/ui", axum::routing::get(ui::root))
        .route("/ui/", axum::routing::get(ui::index))
        .route("/ui/{*path}", axum::routing::get(ui::asset))
        .route(
            "/openapi.json",
            axum::routing::get(move || {
                let doc = doc.clone();
                async move { axum::Json(doc.as_ref().clone()) }
            }),
        )
        .fallback(|| async { error::ApiError::not_found("route") })
        .layer(guard)
        .layer(axum::middleware::from_fn(error::json_errors));
    match cors(&state.cors_origins) {
        Some(layer) => router.layer(layer),
        None => router,
    }
}

/// The CORS layer for `origins`, or none without any: `GET` from those
/// origins' pages, with no header but `Last-Event-ID` (so no bearer token:
/// only a job's event stream with a read token answers such a request).
fn cors(origins: &[HeaderValue]) -> Option<tower_http::cors::CorsLayer> {
    use tower_http::cors::{AllowOrigin, CorsLayer};
    if origins.is_empty() {
        return None;
    }
    Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins.iter().cloned()))
            .allow_methods([axum::http::Method::GET])
            .allow_headers([axum::http::HeaderName::from_static("last-event-id")]),
    )
}
