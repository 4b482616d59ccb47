/**
 * Generated from openapi.json (what the host serves at /openapi.json) by
 * `npm run types` (openapi-typescript). Do not edit: refresh openapi.json
 * and run `npm run types` again (host/ui/README.md says how).
 */

export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Liveness: the process answers. */
        get: operations["health_healthz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Prometheus metrics: job runs by outcome and failure kind, durations,
         *     fuel, memory, queue depths, live hosts. Needs a reader token (Prometheus
         *     scrape configs carry one with `authorization: credentials`).
         */
        get: operations["health_metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Readiness: Redis answered its last probe (every 250 ms). While it does
         *     not, 503 with the error body (`unavailable`), its message
         *     `redis unreachable: ` and the probe's error.
         */
        get: operations["health_readyz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/api-tokens": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The fleet's tokens (admin): names, roles, times, last use — never a
         *     secret. Configured tokens are listed on a host without the fleet key
         *     too.
         */
        get: operations["api_tokens_list"];
        put?: never;
        /**
         * Create a managed token (admin). The answer holds its secret, shown this
         *     once; every API host of the fleet takes it within about a second.
         */
        post: operations["api_tokens_create"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/api-tokens/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Revoke a managed token (admin): it stops working on every API host
         *     within about a second. Its record stays, marked revoked.
         */
        delete: operations["api_tokens_revoke"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/api-tokens/{name}/rotate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Give a managed token a new secret (admin): the old secret stops working
         *     on every API host within about a second; the answer holds the new one,
         *     shown this once.
         */
        post: operations["api_tokens_rotate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/audit": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The audit log (admin): every change made through the API — who (the
         *     token's name and role), what, to what, when, from where — newest first.
         *     Filters apply to the newest 10,000 entries of the time range. An entry
         *     whose seal does not verify (written or altered by hand, or read on a
         *     host without the fleet key) says `sealed: false`; `gaps` names entry
         *     numbers missing among those read (entries removed by hand).
         */
        get: operations["audit_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The most recent events sent to `POST /v1/events` (the fleet keeps about
         *     the last 10,000, each of at most 64 KiB as JSON), newest first, with the
         *     jobs each created, resumed and cancelled. A producer token sees only
         *     the events it sent (among the last 1,000). Entries of the stream that do not parse, that are
         *     larger than the stream keeps (64 KiB of JSON), whose name or id is longer
         *     than `POST /v1/events` accepts (256 and 200 characters), or that name a
         *     producer of more than 256 characters are left out: any Redis client can
         *     add them.
         */
        get: operations["events_recent"];
        put?: never;
        /**
         * Send an event: every queue whose binding lists its name gets a job with
         *     the event (`{name, data, id, ts}`) as data, owned by the producer token
         *     that sent it (as if it had enqueued them). With an `id`, the same event
         *     within 24 hours creates no new jobs (`duplicate`), and sending it again
         *     after a failure (a 503) completes the delivery: exactly one job per
         *     subscribed queue. The event also cancels the started jobs its name and
         *     data match through their bindings' `cancelOn` rules (`cancelled`), and
         *     ends the durable waits (`wait-for-event`) it matches, waking their jobs
         *     (`resumed`); from a producer token, both only for jobs that token
         *     enqueued.
         */
        post: operations["events_send"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/flows": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Add a flow. Every queue in the tree must be bound (a job on an unbound
         *     queue would wait forever), and each node takes its queue binding's
         *     default job options where it sets none. A child's `onFailure` says what
         *     its failure does to the parent: `fail` (default), `ignore`, `remove` or
         *     `continue`. A node whose `jobId` names a job that exists is refused
         *     (409, naming the node): a flow never adopts an existing job.
         */
        post: operations["flows_add"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/handlers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List handlers. */
        get: operations["handlers_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/handlers/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A handler with its digest history and the imports/exports of its
         *     current component.
         */
        get: operations["handlers_get"];
        put?: never;
        /**
         * Upload a handler component (raw `application/wasm` body). It is
         *     validated — a component, exporting the Airlock `handler` world,
         *     importing nothing the host does not provide — then stored under its
         *     sha256 digest and made the handler's current version — or, with
         *     `candidate=true`, kept beside it for a canary. The answer's `candidate`
         *     says which.
         */
        post: operations["handlers_upload"];
        /**
         * Delete a handler (refused with 409 while a queue binds it). Stored
         *     components stay for jobs pinned to them.
         */
        delete: operations["handlers_delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/hosts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The live hosts: id, address, version, queues, running jobs, capacity,
         *     start time, last heartbeat, state.
         */
        get: operations["hosts_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/hosts/{id}/drain": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Drain a host: it stops taking jobs and finishes the ones it runs (its
         *     state goes `draining`, then `drained`). Takes effect at its next
         *     heartbeat.
         */
        post: operations["hosts_drain"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/hosts/{id}/resume": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Let a drained host take jobs again. */
        post: operations["hosts_resume"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Search every bound queue for jobs whose id, name or data contain a
         *     text, ignoring case: the newest 100 jobs of each state of each queue
         *     are looked at, and a job whose id is the text exactly is found in any
         *     queue however old. A producer token finds only the jobs it enqueued.
         */
        get: operations["jobs_search"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/{ref}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A job: state, progress, result or failure (kind and reason), attempts,
         *     timestamps, fuel/memory/time, handler digest, and its log.
         */
        get: operations["jobs_get"];
        put?: never;
        post?: never;
        /** Remove a job (refused while it runs). */
        delete: operations["jobs_remove"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/{ref}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel a job that has not finished: it fails as `cancelled` and is not
         *     retried. A running job's guest is stopped on whichever host runs it; a
         *     waiting, prioritized or delayed job (a durable sleep too) is moved to
         *     the head of its queue and failed by the next worker without running. A
         *     job in a paused queue, or a flow parent waiting for its children, fails
         *     when it is next taken.
         */
        post: operations["jobs_cancel"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/{ref}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * One job's events as Server-Sent Events, ending with `completed` or
         *     `failed`. The first event, `state`, is the job as it is now; then
         *     BullMQ's events for the job (`active`, `progress`, `delayed`, …) and a
         *     `log` event for each log line it writes (`{"index": N, "line": TEXT}`,
         *     read every 250 ms; on a reconnect they start again from index 0), the
         *     lines written before its end coming before `completed` or `failed`. A
         *     job that already finished gets only its `state` (unless the request
         *     resumes with `Last-Event-ID`). With a read token (`?token=`) instead of
         *     a bearer token, the stream also ends when the token expires.
         */
        get: operations["events_job_events"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/{ref}/promote": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Run a delayed job now. A job in a durable sleep wakes up and goes on
         *     past the sleep.
         */
        post: operations["jobs_promote"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/{ref}/read-token": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Make a read token for one job's event stream (any role that may read
         *     the job: a producer, its own jobs only). The token opens
         *     `GET /v1/jobs/{ref}/events?token=…` and no other route or job — with
         *     `flow`, also the streams of the jobs below this one in its flow that
         *     the same producer enqueued — on every API host of the fleet, until it
         *     expires; it cannot be revoked earlier.
         */
        post: operations["jobs_read_token"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/{ref}/repin": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Move a job to its handler's current version (admin or deployer). Its next run uses
         *     the new code; recorded steps stay.
         */
        post: operations["jobs_repin"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/{ref}/replay": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Replay a job against an uploaded handler version, on this host (admin or deployer):
         *     each run of the job again, in order, every call answered from its
         *     transcripts (no request leaves the host, nothing is written). The
         *     report says whether the version did the same, something different, or
         *     diverged at step N.
         */
        post: operations["jobs_replay"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/{ref}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Retry a failed (or completed) job: back to waiting. Recorded durable
         *     steps stay, so a workflow resumes where it failed.
         */
        post: operations["jobs_retry"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/{ref}/timeline": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A job's timeline: each run (start, wall time, fuel, peak memory,
         *     outbound HTTP, host, how it ended), its recorded steps with their
         *     results and times, its durable sleeps and waits.
         */
        get: operations["jobs_timeline"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/{ref}/transcript": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * What each run of a job received from outside its sandbox — the job,
         *     every durable call and its answer, each configuration read, each
         *     outbound request with its response (bounded), how it ended — when its
         *     binding records transcripts (`recordTranscripts`). Never a secret's
         *     value or a wait token. The job's own read rules apply: a producer
         *     token reads only its own jobs'. A run in a batch answers its batch's
         *     one transcript (kept a week): the batch's calls, its own end
         *     (`completed` when each job got an outcome) and `batch`, every job of
         *     the batch (one producer's) with its data and its end. `airlock replay`
         *     runs another handler version against them.
         */
        get: operations["jobs_transcript"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/jobs/{ref}/wait": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Wait until the job completes or fails, up to `timeout`. Answers 200 in
         *     both cases; `finished` says which.
         */
        get: operations["jobs_wait"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/me": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Who the token is: its name, role and scope. */
        get: operations["me"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List bound queues with their counts. */
        get: operations["queues_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A queue's binding and counts. */
        get: operations["queues_get"];
        /**
         * Create or replace a queue's binding.
         * @description On a host that runs jobs, an `egress` rule that no pattern of the host
         *     operator's `--egress-allow` list overlaps is refused (400 naming
         *     `egress[i]`): every request under it would be refused.
         */
        put: operations["queues_bind"];
        post?: never;
        /** Remove a queue's binding; its jobs stay (and wait for a new binding). */
        delete: operations["queues_unbind"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/canary": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /**
         * Send a share of a queue's new jobs to a candidate version (admin or deployer); the
         *     rest run what they ran. Replaces a canary it had.
         */
        put: operations["queues_set_canary"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/clean": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Remove jobs of one state older than a grace period. */
        post: operations["queues_clean"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/drain": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Remove every waiting (and optionally delayed) job. */
        post: operations["queues_drain"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A queue's events as Server-Sent Events (`added`, `active`, `progress`,
         *     `completed`, `failed`, `stalled`, `delayed`, ...).
         */
        get: operations["events_queue_events"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/jobs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List a queue's jobs in one state, newest first. A producer token sees
         *     only its own jobs (a page may then hold fewer than `limit`; follow
         *     `next`).
         */
        get: operations["jobs_list"];
        put?: never;
        /**
         * Enqueue a job. Returns at once (202) with its id; follow it with
         *     `GET /v1/jobs/{ref}`, `/wait` or `/events`. A 503 means the outcome is
         *     unknown: retry with the same `jobId` or `Idempotency-Key` and the job is
         *     never doubled.
         */
        post: operations["jobs_enqueue"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/jobs/bulk": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Enqueue 1 to 1000 jobs; one invalid job rejects the whole request. With
         *     an `Idempotency-Key`, job `i` of the bulk is keyed `key` + `i`.
         */
        post: operations["jobs_enqueue_bulk"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The keys of a queue with `keyConcurrency` and, for each, how many of
         *     its jobs run and wait. Keys are found among the queue's newest 500
         *     active, waiting, prioritized and delayed jobs; the counts of each key
         *     found are exact for its slots and line.
         */
        get: operations["queues_keys"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/migrate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Move a queue's jobs parked in durable sleeps and waits onto another
         *     version of its handler (admin or deployer), each only after replaying its recorded
         *     runs against that version on this host: a job whose replay diverges
         *     before the sleep or wait it is parked in stays where it is. Looks at the
         *     newest 1,000 delayed jobs. Jobs with no transcripts are refused.
         */
        post: operations["queues_migrate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/obliterate": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Delete a bound queue, all its jobs, and its binding (refused with 409
         *     while jobs run, unless `force`).
         */
        post: operations["queues_obliterate"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/pause": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Pause a queue: no host takes new jobs from it. */
        post: operations["queues_pause"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/promote": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Make a queue's canary candidate what its new jobs run (admin or deployer): on this
         *     queue alone (its binding's `version`), or, with `allQueues`, as the
         *     handler's current version for every queue bound to it without a
         *     version of its own. The canary goes. Hosts see it at their next registry
         *     poll (`--poll`, 500 ms); jobs already started stay on their version.
         */
        post: operations["queues_promote"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/resume": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Resume a paused queue. */
        post: operations["queues_resume"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Retry a queue's failed jobs, newest first (all of them up to `limit`,
         *     or those whose last failure was of `failureKind`, among the newest
         *     100,000 failed jobs): each goes back to waiting as `POST
         *     /v1/jobs/{ref}/retry` would send it, its recorded steps kept. A job a
         *     worker or another retry took meanwhile is left out.
         */
        post: operations["queues_retry_failed"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/rollback": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Undo the last change to what a queue's new jobs run (admin or deployer): its
         *     canary is removed; without one, a queue with a version of its own
         *     (`version`) goes back to its handler's current one; else its handler
         *     goes back to the version before its current one — for every queue
         *     bound to that handler without a version of its own (the answer lists
         *     them) — unless `queueOnly`, which gives this queue alone the version
         *     before the one it runs as its own.
         *     Hosts see it at their next registry poll (`--poll`, 500 ms); jobs
         *     already started stay on their version.
         */
        post: operations["queues_rollback"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/schedules": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A queue's schedules with their next run times. */
        get: operations["schedules_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/schedules/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One schedule. */
        get: operations["schedules_get"];
        /**
         * Create or replace a schedule: a cron `pattern` (with `tz`) or an `every`
         *     interval; each tick enqueues one job across the whole fleet.
         */
        put: operations["schedules_put"];
        post?: never;
        /** Delete a schedule (jobs it already enqueued stay). */
        delete: operations["schedules_delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/schedules/{id}/trigger": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Run a schedule now, with its template (admin, deployer or `cron` token — the
         *     `Authorization: Bearer CRON_SECRET` pattern). Refused with 409 while a
         *     run of the schedule is active; a trigger arriving while the previous
         *     trigger still waits joins it (`coalesced`). Never doubled.
         */
        post: operations["schedules_trigger"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/secrets": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A queue's secrets: names, destinations, flags, update times — never a
         *     value.
         */
        get: operations["secrets_list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/queues/{queue}/secrets/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /**
         * Set (create or replace) a secret of a queue. The value is encrypted with
         *     the fleet's secrets key before it reaches Redis.
         */
        put: operations["secrets_put"];
        post?: never;
        /** Delete a secret of a queue. */
        delete: operations["secrets_delete"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Runs per minute by how they ended, and their latency percentiles (a
         *     first run's enqueue→start, every run's run time), over every bound
         *     queue, one queue or the queues of one handler, as the hosts recorded
         *     them (kept 25 hours). Jobs failed before any run
         *     — a cancel mark, a rate limit, a time to finish that passed while the
         *     job waited — are not runs and are not counted.
         */
        get: operations["stats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tokens/{token}/complete": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Complete a wait token with a JSON result: any JSON value, which the
         *     waiting job's `wait-for-token` returns. No bearer token is needed (the
         *     wait token in the path is the credential); a token that is unknown,
         *     expired or whose job is gone answers 404, a used one 409.
         */
        post: operations["tokens_complete"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description An accepted job. */
        Accepted: {
            /** @description The job id within its queue. */
            id: string;
            /** @description The queue. */
            queue: string;
            /** @description `<queue>:<id>`, the job's address under `/v1/jobs`. */
            ref: string;
            /**
             * @description True when a job with the same id (or deduplication id) already
             *     existed: nothing new was added.
             */
            duplicate: boolean;
        };
        /** @description Result of an action on a job. */
        ActionResult: {
            /** @description The job after the action. */
            job: components["schemas"]["JobSnapshot"];
        };
        /** @description Another rule that holds a waiting job back (see [`WaitReason::also`]). */
        AlsoWaits: {
            /** @description Which rule: `key_limit` or `tenant_turn`. */
            kind: components["schemas"]["WaitKind"];
            /** @description The same, in words. */
            message: string;
            /** @description Its key's value (its tenant for `tenant_turn`). */
            key: unknown;
            /**
             * Format: int64
             * @description Slots its key (its tenant) holds now.
             */
            running: number;
            /**
             * Format: int64
             * @description Its key's limit (its tenant's share for `tenant_turn`).
             */
            limit: number;
        };
        /** @description A service's answer: a value or an error. */
        Answer_Option: {
            ok: null | string;
        } | {
            /** @description The error, as the guest saw it. */
            error: components["schemas"]["RecordedError"];
        };
        /** @description A service's answer: a value or an error. */
        Answer_Option_Option: {
            ok: null | (null | string);
        } | {
            /** @description The error, as the guest saw it. */
            error: components["schemas"]["RecordedError"];
        };
        /** @description A service's answer: a value or an error. */
        Answer_Option_RecordedWaitState: {
            ok: null | {
                /**
                 * Format: int64
                 * @description Its deadline, ms since the epoch.
                 */
                deadline: number;
                outcome?: components["schemas"]["Option"] | null;
            };
        } | {
            /** @description The error, as the guest saw it. */
            error: components["schemas"]["RecordedError"];
        };
        /** @description A service's answer: a value or an error. */
        Answer_Option_String: {
            ok: null | string;
        } | {
            /** @description The error, as the guest saw it. */
            error: components["schemas"]["RecordedError"];
        };
        /** @description A service's answer: a value or an error. */
        Answer_Option_u64: {
            ok: null | number;
        } | {
            /** @description The error, as the guest saw it. */
            error: components["schemas"]["RecordedError"];
        };
        /** @description A service's answer: a value or an error. */
        Answer_RecordedInvoke: {
            /** @description An invoke's state as recorded. */
            ok: {
                /**
                 * Format: int64
                 * @description When it times out, ms since the epoch.
                 */
                deadline?: number | null;
                /** @description Each child's end so far (`null`: not ended). */
                ends: (components["schemas"]["RecordedChildEnd"] | null)[];
            };
        } | {
            /** @description The error, as the guest saw it. */
            error: components["schemas"]["RecordedError"];
        };
        /** @description A service's answer: a value or an error. */
        Answer_String: {
            ok: string;
        } | {
            /** @description The error, as the guest saw it. */
            error: components["schemas"]["RecordedError"];
        };
        /** @description A service's answer: a value or an error. */
        Answer_Vec_RecordedChild: {
            ok: {
                /** @description Its queue. */
                queue: string;
                /** @description Its id. */
                id: string;
                /** @description Its output (JSON text), when it completed. */
                output?: string | null;
                /** @description Why it failed, when it did. */
                failed?: string | null;
            }[];
        } | {
            /** @description The error, as the guest saw it. */
            error: components["schemas"]["RecordedError"];
        };
        /** @description A service's answer: a value or an error. */
        Answer_Vec_String: {
            ok: string[];
        } | {
            /** @description The error, as the guest saw it. */
            error: components["schemas"]["RecordedError"];
        };
        /** @description A service's answer: a value or an error. */
        Answer_bool: {
            ok: boolean;
        } | {
            /** @description The error, as the guest saw it. */
            error: components["schemas"]["RecordedError"];
        };
        /** @description A service's answer: a value or an error. */
        Answer_u32: {
            /** Format: int32 */
            ok: number;
        } | {
            /** @description The error, as the guest saw it. */
            error: components["schemas"]["RecordedError"];
        };
        /** @description One change. */
        AuditEntry: {
            /**
             * Format: int64
             * @description Its number: consecutive across the fleet.
             */
            seq: number;
            /**
             * Format: int64
             * @description When, ms since the epoch (the writing host's clock).
             */
            at: number;
            /** @description The token's name. */
            who: string;
            /** @description Its role. */
            role: components["schemas"]["Role"];
            /** @description What was done, e.g. `queue.bind`, `handler.deploy`, `secret.set`. */
            action: string;
            /**
             * @description What it was done to: a queue, a handler, a token, a host, a job
             *     (`<queue>:<id>`).
             */
            target: string;
            /** @description The caller's address, as the host saw it (a proxy's, behind one). */
            from?: string | null;
            /** @description What the change was, in brief (never a secret's value). */
            details: Record<string, never>;
        };
        /** @description A run of missing numbers: entries removed from the middle of the log. */
        AuditGap: {
            /**
             * Format: int64
             * @description The first missing number.
             */
            fromSeq: number;
            /**
             * Format: int64
             * @description The last missing number.
             */
            toSeq: number;
        };
        /** @description A listing. */
        AuditListing: {
            /** @description The entries that match, newest first. */
            entries: components["schemas"]["ListedEntry"][];
            /** @description Numbers missing among the entries read (whether they match or not). */
            gaps: components["schemas"]["AuditGap"][];
            /** @description Entries whose text is not an entry at all (written by hand). */
            unreadable: number;
        };
        /** @description How a failed attempt is spaced from the next one. */
        Backoff: {
            /**
             * Format: int64
             * @description Delay in milliseconds (at most a year).
             */
            delay: number;
            /** @enum {string} */
            type: "fixed";
        } | {
            /**
             * Format: int64
             * @description Base delay in milliseconds (at most a year).
             */
            delay: number;
            /** @enum {string} */
            type: "exponential";
        };
        /**
         * @description Batches (`batch`): a host gathers the queue's ready jobs and runs up to
         *     `size` of them in one call of the handler's `run-batch` (the
         *     `batch-handler` world of `airlock:job@0.6.0`), then ends each job on its
         *     own with its own outcome. A batch starts as soon as it holds `size`
         *     jobs; before that, once it holds `minSize` and no job has joined it for
         *     5 ms (`worker::batches::SETTLE`: the jobs the host had to hand); at the
         *     latest `timeoutMs` after its first job joined, with what it holds. Jobs of
         *     different producers (tenants), handler versions, per-job limits or
         *     (with `key`) keys never share a batch.
         */
        Batch: {
            /**
             * Format: int32
             * @description Most jobs in one batch, 1 to 1000.
             */
            size: number;
            /**
             * Format: int32
             * @description Jobs a batch waits for (up to `timeoutMs`) before it starts, 1 to
             *     1000 (default `size`; a value over `size` waits for `size`).
             */
            minSize?: number | null;
            /**
             * Format: int64
             * @description The longest a batch waits for `minSize` jobs after its first job
             *     joined, in ms (1 to 60000); then it starts with what it holds.
             */
            timeoutMs: number;
            /**
             * @description Where the job's data holds its batch key (`$.accountId`): jobs of
             *     different values never share a batch; jobs without a value (or
             *     whose data is not JSON) share the batches of the empty key.
             */
            key?: string | null;
        };
        /** @description The batch of a job's latest run in a batch, with its jobs. */
        BatchEntry: {
            /** @description The batch's id. */
            id: string;
            /**
             * Format: int32
             * @description Jobs in it.
             */
            size: number;
            /**
             * @description Its jobs, this one included, in the order the batch got them:
             *     those whose latest run in a batch was this one and whose producer
             *     is this job's (a job since run again in another batch, or removed,
             *     is left out). Empty once the batch's list expired (a week after it
             *     ran).
             */
            jobs: components["schemas"]["BatchSibling"][];
        };
        /** @description A batch a job ran in. */
        BatchInfo: {
            /**
             * @description The batch's id: the id of the host that ran it, a random part and a
             *     number.
             */
            id: string;
            /**
             * Format: int32
             * @description Jobs in the batch.
             */
            size: number;
        };
        /** @description A job of a batch. */
        BatchSibling: {
            /** @description The job, as `<queue>:<id>`. */
            ref: string;
            /**
             * @description `completed`, `failed`, or `unfinished` (waiting for a retry, or
             *     running).
             */
            state: string;
        };
        /** @description One job of a recorded batch run. */
        BatchedJob: {
            /** @description The job as the batch received it. */
            job: components["schemas"]["RecordedJob"];
            /** @description How it ended. */
            outcome: components["schemas"]["RecordedOutcome"];
        };
        /** @description A queue's binding as stored and served. */
        Binding: {
            /** @description The queue. */
            queue: string;
            /** @description The handler that runs its jobs. */
            handler: string;
            /** @description Sandbox limits of every job (a job may lower them). */
            limits: components["schemas"]["Limits"];
            /** @description Jobs run at once per host. */
            concurrency: number;
            /** @description Options applied to jobs enqueued through Airlock that do not set them. */
            defaultJobOptions: components["schemas"]["DefaultJobOptions"];
            /** @description Event names that enqueue a job on this queue (`POST /v1/events`). */
            events?: string[];
            /**
             * Format: int64
             * @description Jobs active at once across the whole fleet (BullMQ global concurrency).
             */
            globalConcurrency?: number | null;
            rateLimit?: components["schemas"]["RateLimit"] | null;
            /** @description Configuration the handler reads (`config.get`). */
            config?: {
                [key: string]: string;
            };
            /**
             * @description Where its jobs may send HTTP requests (within the host operator's
             *     `--egress-allow`); empty: nowhere.
             */
            egress?: components["schemas"]["EgressRuleDoc"][];
            /**
             * Format: int64
             * @description A job's time to finish, in milliseconds from when it became ready
             *     (its enqueue time plus the delay it was added with), across every
             *     attempt, backoff, durable sleep and wait; past it the job fails as
             *     `timed_out`. Absent: no such limit.
             */
            finishTimeoutMs?: number | null;
            /** @description Events that cancel this queue's running and sleeping jobs. */
            cancelOn?: components["schemas"]["CancelOn"][];
            keyConcurrency?: components["schemas"]["KeyConcurrency"] | null;
            keyThrottle?: components["schemas"]["KeyRate"] | null;
            keyRateLimit?: components["schemas"]["KeyRate"] | null;
            debounce?: components["schemas"]["Debounce"] | null;
            singleton?: components["schemas"]["Singleton"] | null;
            fairness?: components["schemas"]["Fairness"] | null;
            warmInstances?: components["schemas"]["WarmInstances"] | null;
            /**
             * @description Puts a W3C `traceparent` on the handler's outbound requests, so
             *     the service called joins the run's trace (on hosts that export
             *     traces, for sampled runs).
             */
            propagateTrace?: boolean;
            /** @description Records each run's transcript (`sandbox::transcript`) into the job. */
            recordTranscripts?: boolean;
            canary?: components["schemas"]["Canary"] | null;
            /**
             * @description The version (digest) this queue's new jobs run instead of its
             *     handler's current one: set by a per-queue promote or rollback.
             */
            version?: string | null;
            starts?: components["schemas"]["Starts"] | null;
            onFailure?: components["schemas"]["OnFailure"] | null;
            batch?: components["schemas"]["Batch"] | null;
        };
        /** @description A request to create or replace a binding; absent fields take defaults. */
        BindingSpec: {
            /** @description The handler name (must exist). */
            handler: string;
            /** @description Limit settings over Airlock's defaults (may raise up to the host maxima). */
            limits?: components["schemas"]["LimitsOverride"];
            /** @description `false` runs this queue without fuel metering, bounded by the timeout. */
            metered?: boolean | null;
            /** @description Jobs at once per host (default 10). */
            concurrency?: number | null;
            /** @description Default job options (attempts, backoff, retention...). */
            defaultJobOptions?: components["schemas"]["DefaultJobOptions"];
            /** @description Event names this queue subscribes to (1 to 256 characters each). */
            events?: string[];
            /**
             * Format: int64
             * @description Jobs active at once across the whole fleet.
             */
            globalConcurrency?: number | null;
            rateLimit?: components["schemas"]["RateLimit"] | null;
            /**
             * @description Configuration the handler reads (`config.get`): keys of letters,
             *     digits, `_`, `.` and `-` (starting with a letter or `_`), values of
             *     up to 8192 characters, at most 100 entries. Not for secrets: these
             *     are served back by the API.
             */
            config?: {
                [key: string]: components["schemas"]["ConfigValue"];
            };
            /**
             * @description Where its jobs may send HTTP requests, at most 100 rules; a request
             *     must also be allowed by the host operator's `--egress-allow`. Empty:
             *     nowhere.
             */
            egress?: components["schemas"]["EgressRuleDoc"][];
            /**
             * Format: int64
             * @description A job's time to finish, in milliseconds, counted from when it became
             *     ready (enqueue time plus its initial delay) across every attempt,
             *     backoff, durable sleep and wait: past it the job fails as
             *     `timed_out` and is not retried — stopped if it runs, failed when it
             *     is next taken otherwise (a durable sleep wakes at the deadline for
             *     that). Distinct from `limits.timeoutMs`, one run's deadline.
             */
            finishTimeoutMs?: number | null;
            /**
             * @description Events that cancel matching jobs of this queue once they have
             *     started (at most 10 rules). An event sent by a producer token
             *     cancels only the jobs that token enqueued.
             */
            cancelOn?: components["schemas"]["CancelOn"][];
            keyConcurrency?: components["schemas"]["KeyConcurrency"] | null;
            keyThrottle?: components["schemas"]["KeyRate"] | null;
            keyRateLimit?: components["schemas"]["KeyRate"] | null;
            debounce?: components["schemas"]["Debounce"] | null;
            singleton?: components["schemas"]["Singleton"] | null;
            fairness?: components["schemas"]["Fairness"] | null;
            warmInstances?: components["schemas"]["WarmInstances"] | null;
            /**
             * @description Put a W3C `traceparent` on every outbound HTTP request of the
             *     handler — the run's span as the parent, so the service called joins
             *     the job's trace — replacing a `traceparent` the handler set and
             *     dropping its `tracestate`. Only on hosts that export traces
             *     (`OTEL_EXPORTER_OTLP_*ENDPOINT`) and for runs whose trace is
             *     sampled; otherwise requests go as the handler wrote them. Default
             *     `false`.
             */
            propagateTrace?: boolean;
            /**
             * @description Record each run's transcript — the job as received, every durable
             *     call and its answer, each configuration read, each outbound HTTP
             *     request with its response (headers and bodies bounded), how the run
             *     ended — into the job (`GET /v1/jobs/{ref}/transcript`; kept and
             *     removed with the job), for `airlock replay`. Never a secret's value
             *     or a wait token; at most 256 KiB of calls per run. Default `false`.
             */
            recordTranscripts?: boolean;
            canary?: components["schemas"]["Canary"] | null;
            /**
             * @description The version (`digest` of one of the handler's uploads) this queue's
             *     new jobs run instead of the handler's current one; absent: the
             *     current one. `POST /v1/queues/{queue}/promote` and a per-queue
             *     rollback set it.
             */
            version?: string | null;
            starts?: components["schemas"]["Starts"] | null;
            onFailure?: components["schemas"]["OnFailure"] | null;
            batch?: components["schemas"]["Batch"] | null;
        } & (({
            /** @enum {unknown} */
            metered?: true | null;
        } | {
            limits?: {
                fuel?: null;
            };
        }) & ({
            fairness?: null;
        } | {
            globalConcurrency: number;
        }) & ({
            batch?: null;
        } | {
            warmInstances?: null;
        }));
        /** @description Accepted jobs of a bulk enqueue, in request order. */
        BulkAccepted: {
            /** @description One entry per requested job. */
            jobs: components["schemas"]["Accepted"][];
        };
        /** @description Several jobs at once: all are validated before any is added. */
        BulkEnqueueRequest: {
            /** @description The jobs, 1 to 1000. */
            jobs: components["schemas"]["EnqueueRequest"][];
        };
        /** @description One call a run made, with its answer. */
        Call: {
            /** @description The step. */
            id: string;
            /** @description Its recorded result, if any. */
            answer: components["schemas"]["Answer_Option_String"];
            /** @enum {string} */
            call: "stepLookup";
        } | {
            /** @description The step. */
            id: string;
            /** @description The result the guest recorded (redacted). */
            output: string;
            error?: components["schemas"]["RecordedError"] | null;
            /** @enum {string} */
            call: "stepRecord";
        } | {
            /** @description The sleep. */
            id: string;
            /** @description Its recorded wake-up time, if any. */
            answer: components["schemas"]["Answer_Option_u64"];
            /** @enum {string} */
            call: "sleepLookup";
        } | {
            /** @description The sleep. */
            id: string;
            /**
             * Format: int64
             * @description Its wake-up time.
             */
            wakeAt: number;
            error?: components["schemas"]["RecordedError"] | null;
            /** @enum {string} */
            call: "sleepRecord";
        } | {
            /** @description The wait. */
            id: string;
            /** @description Its state, if it was reached before. */
            answer: components["schemas"]["Answer_Option_RecordedWaitState"];
            /** @enum {string} */
            call: "waitLookup";
        } | {
            /** @description The wait. */
            id: string;
            /** @description What it waits for. */
            what: components["schemas"]["RecordedWaitFor"];
            /**
             * Format: int64
             * @description Its deadline.
             */
            deadline: number;
            /** @description An outcome that came already. */
            answer: components["schemas"]["Answer_Option_Option"];
            /** @enum {string} */
            call: "waitBegin";
        } | {
            /** @description The wait. */
            id: string;
            /** @description The outcome that stands. */
            answer: components["schemas"]["Answer_Option"];
            /** @enum {string} */
            call: "waitExpire";
        } | {
            /** @description The wait. */
            id: string;
            /** @description `<redacted>`, or the error. */
            answer: components["schemas"]["Answer_String"];
            /** @enum {string} */
            call: "waitToken";
        } | {
            /** @description The step. */
            id: string;
            /** @description The queues of the jobs started, in order. */
            queues: string[];
            /** @description Whether as children of the job (an invoke). */
            children: boolean;
            /** @description Their ids. */
            answer: components["schemas"]["Answer_Vec_String"];
            /** @enum {string} */
            call: "startJobs";
        } | {
            /** @description The step. */
            id: string;
            /** @description The state. */
            answer: components["schemas"]["Answer_RecordedInvoke"];
            /** @enum {string} */
            call: "invokeState";
        } | {
            /** @description The step. */
            id: string;
            /** @description The indexes. */
            pending: number[];
            error?: components["schemas"]["RecordedError"] | null;
            /** @enum {string} */
            call: "invokeExpire";
        } | {
            /** @description The step. */
            id: string;
            /** @description The event's name. */
            name: string;
            /** @description Its id. */
            answer: components["schemas"]["Answer_String"];
            /** @enum {string} */
            call: "sendEvent";
        } | {
            /** @description The job's count of them. */
            answer: components["schemas"]["Answer_u32"];
            /** @enum {string} */
            call: "retryAfterCount";
        } | {
            /** @description Them. */
            answer: components["schemas"]["Answer_Vec_RecordedChild"];
            /** @enum {string} */
            call: "childrenResults";
        } | {
            /** @description The key. */
            key: string;
            /** @description Its value. */
            answer: components["schemas"]["Answer_Option_String"];
            /** @enum {string} */
            call: "kvGet";
        } | {
            /** @description The key. */
            key: string;
            /** @description The value written (redacted). */
            value: string;
            /**
             * Format: int64
             * @description Its time to live, ms.
             */
            ttlMs?: number | null;
            /** @description Whether only if absent. */
            onlyIfAbsent: boolean;
            /** @description Whether it was written. */
            answer: components["schemas"]["Answer_bool"];
            /** @enum {string} */
            call: "kvSet";
        } | {
            /** @description The key. */
            key: string;
            /** @description Whether it existed. */
            answer: components["schemas"]["Answer_bool"];
            /** @enum {string} */
            call: "kvDelete";
        } | {
            /** @description The secret. */
            name: string;
            /** @description Whether it is set. */
            answer: components["schemas"]["Answer_bool"];
            /** @enum {string} */
            call: "secret";
        } | {
            /** @description The key. */
            key: string;
            /** @description Its value. */
            value?: string | null;
            /** @enum {string} */
            call: "config";
        } | {
            /** @description The value. */
            value: unknown;
            /** @enum {string} */
            call: "progress";
        } | {
            /** @description Its method. */
            method: string;
            /** @description Its URL. */
            url: string;
            /** @description Its headers (the first [`MAX_HEADERS`]; placeholders unfilled). */
            headers: [
                string,
                string
            ][];
            /** @description Its body. */
            body: components["schemas"]["RecordedBody"];
            response?: components["schemas"]["RecordedResponse"] | null;
            /** @description Why there was none (a refusal, a transport error). */
            error?: string | null;
            /** @enum {string} */
            call: "http";
        };
        /**
         * @description A canary (`canary`): `percent` of the queue's new jobs run a candidate
         *     version of its handler instead of the current one. Which jobs is
         *     decided by a hash of the job's queue and id, so a job keeps its side
         *     across retries; a job stays on the version its first run pinned, as
         *     every job does. `GET /v1/stats?queue=` reports both versions' runs,
         *     wall time and fuel side by side (`versions`).
         */
        Canary: {
            /**
             * @description The candidate: the digest of an uploaded version of the binding's
             *     handler.
             */
            digest: string;
            /**
             * Format: int32
             * @description The share of new jobs that run it, 1 to 99.
             */
            percent: number;
        };
        /** @description A canary to set. */
        CanaryRequest: {
            /**
             * @description The candidate: the digest of an uploaded version of the queue's
             *     handler (`POST /v1/handlers/{name}?candidate=true` uploads one
             *     without it taking traffic).
             */
            digest: string;
            /**
             * Format: int32
             * @description The share of new jobs that run it, 1 to 99.
             */
            percent: number;
        };
        /** @description A cancel that was accepted. */
        CancelAccepted: {
            /** @description The state the job was in when the cancel arrived. */
            was: components["schemas"]["JobState"];
            /**
             * @description The job now: a running job is stopped within milliseconds, a
             *     waiting or delayed one as soon as a worker of its queue takes it
             *     (`GET /v1/jobs/{ref}/wait` to see it fail).
             */
            job: components["schemas"]["JobSnapshot"];
        };
        /** @description Why a job is cancelled. */
        CancelBody: {
            /** @description In words, for the `failedReason` (at most 500 characters). */
            reason?: string | null;
        };
        /**
         * @description An event that cancels the jobs it matches (Inngest's `cancelOn`): a job
         *     whose data holds, at `match`, the value the event's data holds at
         *     `eventMatch` (the same path when absent) is cancelled — if it has
         *     started (it runs, sleeps, or waits for a retry): a job is matched from
         *     its first run on.
         */
        CancelOn: {
            /** @description The event name (`order.cancelled`), 1 to 256 characters. */
            event: string;
            /** @description Where the job's data holds the value to match (`$.orderId`). */
            match: string;
            /** @description Where the event's data holds it; absent: the same path as `match`. */
            eventMatch?: string | null;
        };
        /** @description A request both sent, with another body. */
        ChangedRequest: {
            /** @description Its method. */
            method: string;
            /** @description Its URL. */
            url: string;
            /** @description The recorded body. */
            recorded: string;
            /** @description The new version's. */
            replayed: string;
        };
        /** @description One child of a flow parent. */
        ChildEntry: {
            /** @description The child, as `<queue>:<id>`. */
            ref: string;
            /**
             * @description `pending` (not finished yet), `completed` or `failed` (a failure
             *     the parent was told to go on regardless of, or one that failed the
             *     parent).
             */
            state: string;
            /** @description Its return value (JSON text), or its failure reason. */
            outcome?: string | null;
        };
        /**
         * @description What a child's failure does to its parent (BullMQ's flow policies).
         * @enum {string}
         */
        ChildFailure: "fail" | "ignore" | "remove" | "continue";
        /** @description Clean finished (or other) jobs older than a grace period. */
        CleanRequest: {
            /** @description The queue's name, to confirm. */
            confirm: string;
            /** @description The state to clean. */
            state: components["schemas"]["ListState"];
            /**
             * Format: int64
             * @description Only jobs older than this many milliseconds.
             */
            graceMs?: number | null;
            /**
             * Format: int32
             * @description At most this many jobs (default 1000).
             */
            limit?: number | null;
        };
        /** @description Result of a clean. */
        Cleaned: {
            /** @description Ids of the removed jobs. */
            removed: string[];
        };
        /** @description What a validated component imports and exports. */
        ComponentInfo: {
            /** @description sha256 of the bytes, hex. */
            digest: string;
            /** @description Size in bytes. */
            size: number;
            /** @description Imported interface names (`airlock:job/context@0.2.0`, `wasi:...`). */
            imports: string[];
            /** @description Exported names (`run`; also `run-batch` for a batch handler). */
            exports: string[];
            /**
             * @description What its `producers` sections say built it, as written there by the
             *     tools themselves: languages (`language: Rust`) and tools
             *     (`rustc 1.95.0`, `ComponentizeJS 0.23.0`), once each, in the order
             *     met. A component's own claim, shown for people to read; nothing
             *     decides on it.
             */
            builtWith?: string[];
        };
        /** @description A `config` value (schema only). */
        ConfigValue: string;
        /**
         * @description Debounce: of the jobs of one key added through Airlock (the API,
         *     events) less than `periodMs` apart, only the last runs, `periodMs` after
         *     it was added — and at the latest `maxWaitMs` after the first of them.
         *     See `state::debounces`.
         */
        Debounce: {
            /** @description Where the job's data holds its key (`$.customerId`). */
            key: string;
            /**
             * Format: int64
             * @description The quiet time that ends a burst, in ms (at most a day).
             */
            periodMs: number;
            /**
             * Format: int64
             * @description The longest a burst may hold its job back, in ms (at most a day).
             */
            maxWaitMs?: number | null;
        };
        /**
         * @description BullMQ deduplication: while a job with this id exists (or for `ttl` ms),
         *     adding another with the same id adds nothing.
         */
        Deduplication: {
            /** @description The deduplication id. */
            id: string;
            /**
             * Format: int64
             * @description How long the id blocks duplicates, in milliseconds, at most a year
             *     (absent: until the job finishes).
             */
            ttl?: number | null;
            /**
             * @description A duplicate resets the id's `ttl` (BullMQ's debounce mode, with
             *     `replace`).
             */
            extend?: boolean | null;
            /**
             * @description A duplicate replaces the existing job while that one is still
             *     delayed: the last one added wins (BullMQ's debounce mode).
             */
            replace?: boolean | null;
        };
        /**
         * @description The job options a queue binding can set as defaults: everything but the
         *     per-job ones (`jobId`, `deduplication`, `limits`, which a binding sets
         *     otherwise or not at all).
         */
        DefaultJobOptions: {
            /**
             * Format: int64
             * @description Milliseconds before the job may run (at most a year).
             */
            delay?: number | null;
            /**
             * Format: int32
             * @description 1 (highest) to 2,097,152 (lowest); absent or 0 means no priority.
             */
            priority?: number | null;
            /** @description Take this job before older waiting ones (not with a priority). */
            lifo?: boolean | null;
            /**
             * Format: int32
             * @description Attempts in total (1: never retried), at most 10,000.
             */
            attempts?: number | null;
            backoff?: components["schemas"]["Backoff"] | null;
            removeOnComplete?: components["schemas"]["Retention"] | null;
            removeOnFail?: components["schemas"]["Retention"] | null;
        } & (({
            backoff?: {
                /** @constant */
                type?: "fixed";
            };
        } | {
            backoff?: {
                delay?: unknown;
            };
        } | {
            attempts?: unknown;
        } | {
            attempts: number;
            backoff?: {
                delay?: unknown;
            };
        } | {
            attempts: number;
            backoff?: {
                delay?: unknown;
            };
        } | {
            attempts: number;
            backoff?: {
                delay?: unknown;
            };
        } | {
            attempts: number;
            backoff?: {
                delay?: unknown;
            };
        }) & ({
            /** @enum {unknown} */
            lifo?: false | null;
        } | {
            priority?: unknown;
        }));
        /** @description What a delivery did. */
        Delivery: {
            /** @description The event id (generated when the event had none). */
            eventId: string;
            /**
             * @description True when every subscribed queue already had this event's job: no
             *     new job was created.
             */
            duplicate: boolean;
            /** @description The event's job on each subscribed queue, as `<queue>:<id>`. */
            jobs: string[];
            /**
             * @description The jobs it cancelled through their bindings' `cancelOn` rules, as
             *     `<queue>:<id>`.
             */
            cancelled: string[];
            /**
             * @description The jobs whose durable wait (`wait-for-event`) it ended, as
             *     `<queue>:<id>`.
             */
            resumed: string[];
        };
        /** @description Where the new version took another path. */
        Divergence: {
            /** @description The effect's position, from 1, over all runs. */
            step: number;
            /** @description In which run (from 1). */
            run: number;
            /** @description What the recording did there (`null`: nothing more). */
            recorded?: string | null;
            /** @description What the new version did there (`null`: nothing more). */
            replayed?: string | null;
        };
        /** @description Confirmation of a destructive action: must repeat the queue name. */
        DrainRequest: {
            /** @description The queue's name, to confirm. */
            confirm: string;
            /** @description Also remove delayed jobs. */
            delayed?: boolean;
        };
        /**
         * @description An egress destination pattern, `scheme://host[:port]` (schema only; the
         *     exact syntax of `sandbox::egress::PATTERN_REGEX`).
         */
        EgressPatternText: string;
        /**
         * @description An egress rule as the API documents it (schema only; the type is
         *     `sandbox::egress::EgressRule`).
         */
        EgressRuleDoc: components["schemas"]["EgressPatternText"] | {
            /** @description The destination, `scheme://host[:port]`. */
            url: components["schemas"]["EgressPatternText"];
            /** @description Allowed methods; absent: any. */
            methods?: string[] | null;
            /**
             * @description Requests' paths must be within this prefix, whole segments at a
             *     time (`/v3/mail/send` covers `/v3/mail/send/batch`, not
             *     `/v3/mail/sender`); a path with a `.` or `..` segment (also
             *     percent-encoded), an encoded `/` or `\`, a `\`, a `;` or a NUL
             *     is within none. Absent: any path.
             */
            pathPrefix?: string | null;
        };
        /** @description One job to enqueue. */
        EnqueueRequest: {
            /** @description BullMQ job name (default: the queue's name). */
            name?: string | null;
            /** @description The job's data: any JSON. */
            data: unknown;
            /** @description Job options (BullMQ spelling); absent ones take the queue's defaults. */
            opts?: components["schemas"]["JobOptions"];
        };
        /** @description The body of every error response. */
        ErrorBody: {
            /** @description The error. */
            error: components["schemas"]["ErrorDetail"];
        };
        /** @description What went wrong. */
        ErrorDetail: {
            /** @description Machine-readable code (`invalid_field`, `not_found`, `unauthorized`...). */
            code: string;
            /** @description Human-readable explanation. */
            message: string;
            /** @description The offending request field, when one is to blame. */
            field?: string | null;
        };
        /** @description An incoming event. */
        Event: {
            /** @description The event name (`order.placed`). */
            name: string;
            /** @description The event's payload. */
            data?: unknown;
            /** @description An idempotency id: the same id within 24 hours creates no new jobs. */
            id?: string | null;
        };
        /**
         * @description Fair shares between tenants (`fairness`): the queue's fleet capacity
         *     (its `globalConcurrency`) is shared between the tenants — the API
         *     tokens that enqueued the jobs, or the values at a path in the jobs'
         *     data (`tenant`) — that have jobs running or waiting, in
         *     proportion to their weights. A tenant running its share waits for its
         *     turn while another tenant is under its own; a tenant alone uses all of
         *     it. Sharing running slots charges each tenant by the wall time its jobs
         *     hold them. See `gate::fairness`.
         */
        Fairness: {
            /**
             * @description Who a job's tenant is: `producer`, the API token that enqueued it
             *     (as Airlock sealed it on the job: a producer token, or an admin
             *     token by its name; jobs without a sealed producer — added by
             *     BullMQ's own clients, by flows, by schedules or by an event an
             *     admin token sent — are one tenant together), or where the job's
             *     data names it (`$.tenantId`; a job without a value there is not
             *     governed by fairness).
             */
            tenant: string;
            /**
             * @description Weights of named tenants, 1 to 1000 (others weigh 1; at most 1000
             *     entries). A name matches a tenant whose value is that string, or
             *     whose value's JSON text it is (`"42"` matches the number 42); with
             *     `tenant: producer`, an API token's name (`null` names the jobs
             *     without a sealed producer).
             */
            weights?: {
                [key: string]: components["schemas"]["TenantWeight"];
            };
        };
        /** @description An added flow node. */
        FlowNode: {
            /** @description The job's queue. */
            queue: string;
            /** @description Its id. */
            id: string;
            /** @description `<queue>:<id>`. */
            ref: string;
            /** @description Its children. */
            children: components["schemas"]["FlowNode"][];
        };
        /**
         * @description The job options of a flow node: BullMQ flows take no deduplication,
         *     and Airlock no per-job limits inside a flow.
         */
        FlowNodeOptions: {
            /**
             * @description A custom job id (not an integer, no `:`): adding a job whose id
             *     exists adds nothing.
             */
            jobId?: string | null;
            /**
             * Format: int64
             * @description Milliseconds before the job may run (at most a year).
             */
            delay?: number | null;
            /**
             * Format: int32
             * @description 1 (highest) to 2,097,152 (lowest); absent or 0 means no priority.
             */
            priority?: number | null;
            /** @description Take this job before older waiting ones (not with a priority). */
            lifo?: boolean | null;
            /**
             * Format: int32
             * @description Attempts in total (1: never retried), at most 10,000.
             */
            attempts?: number | null;
            backoff?: components["schemas"]["Backoff"] | null;
            removeOnComplete?: components["schemas"]["Retention"] | null;
            removeOnFail?: components["schemas"]["Retention"] | null;
        } & (({
            backoff?: {
                /** @constant */
                type?: "fixed";
            };
        } | {
            backoff?: {
                delay?: unknown;
            };
        } | {
            attempts?: unknown;
        } | {
            attempts: number;
            backoff?: {
                delay?: unknown;
            };
        } | {
            attempts: number;
            backoff?: {
                delay?: unknown;
            };
        } | {
            attempts: number;
            backoff?: {
                delay?: unknown;
            };
        } | {
            attempts: number;
            backoff?: {
                delay?: unknown;
            };
        }) & ({
            /** @enum {unknown} */
            lifo?: false | null;
        } | {
            priority?: unknown;
        }));
        /** @description One node of a flow tree. */
        FlowSpec: {
            /** @description BullMQ job name. */
            name: string;
            /** @description The queue of this job (must be bound). */
            queue: string;
            /** @description The job's data. */
            data: unknown;
            /** @description Job options. */
            opts?: components["schemas"]["FlowNodeOptions"];
            /** @description Children that must finish before this job runs. */
            children?: components["schemas"]["FlowChild2"][];
        };
        /**
         * @description A handler with its history and what its current component imports and
         *     exports.
         */
        HandlerDetails: {
            /** @description Handler name. */
            name: string;
            /** @description The version new jobs run. */
            current: components["schemas"]["HandlerVersion"];
            /** @description Every upload, newest first. */
            versions: components["schemas"]["HandlerVersion"][];
            /** @description Imports and exports of the current component. */
            component: components["schemas"]["ComponentInfo"];
        };
        /** @description The handler list. */
        HandlerList: {
            /** @description Handlers by name. */
            handlers: components["schemas"]["HandlerSummary"][];
        };
        /** @description A handler-name pattern: a handler name in which `*` may stand anywhere. */
        HandlerPattern: string;
        /** @description A handler as listed. */
        HandlerSummary: {
            /** @description Handler name. */
            name: string;
            /** @description Current digest. */
            digest: string;
            /** @description Current version label. */
            version?: string | null;
            /** @description Component size. */
            size: number;
            /**
             * Format: int64
             * @description Upload time of the current version (ms since the epoch).
             */
            uploadedAt: number;
            /** @description Number of uploaded versions. */
            versions: number;
        };
        /** @description One uploaded version of a handler. */
        HandlerVersion: {
            /** @description sha256 of the component, hex. */
            digest: string;
            /** @description The uploader's label (`v1.2.0`, a git sha...). */
            version?: string | null;
            /** @description Component size in bytes. */
            size: number;
            /**
             * Format: int64
             * @description Upload time, ms since the epoch.
             */
            uploadedAt: number;
            /**
             * @description Uploaded as a candidate: stored, but not made current, so no queue
             *     runs it until a binding names it (a canary, a promote). False for
             *     an upload that became current (and in entries older hosts wrote).
             */
            candidate?: boolean;
        };
        /** @description A host as it describes itself. */
        HostInfo: {
            /** @description Host id. */
            id: string;
            /** @description Its HTTP API address, if it serves one. */
            address?: string | null;
            /** @description Airlock version. */
            version: string;
            /** @description Queues it runs workers for. */
            queues: string[];
            /** @description Jobs running now. */
            running: number;
            /** @description Jobs it can run at once (instance slots). */
            capacity: number;
            /**
             * Format: int64
             * @description Its memory budget for guests, bytes: the memory limits of the
             *     guests it runs at once add up to at most this.
             */
            memoryBudgetBytes?: number | null;
            /**
             * Format: int64
             * @description The part of the budget its running guests hold (their memory
             *     limits), bytes.
             */
            memoryHeldBytes?: number | null;
            /**
             * Format: int64
             * @description Start time, ms since the epoch.
             */
            startedAt: number;
            /**
             * Format: int64
             * @description Last heartbeat, ms since the epoch.
             */
            heartbeatAt: number;
            /** @description Running, draining or drained. */
            state: components["schemas"]["HostState"];
            /**
             * Format: int64
             * @description The registry generation this host's workers follow: every binding
             *     and handler version up to it is live here (absent until the first
             *     reconcile completes).
             */
            generation?: number | null;
        };
        /** @description The live hosts. */
        HostList: {
            /** @description By id; hosts that stopped heartbeating age out. */
            hosts: components["schemas"]["HostInfo"][];
        };
        /**
         * @description What a host is doing.
         * @enum {string}
         */
        HostState: "running" | "draining" | "drained";
        /** @description A token just created or rotated, with its secret: shown this once. */
        IssuedToken: components["schemas"]["TokenView"] & {
            /**
             * @description Its secret (`alt_` and 64 hex digits), for `Authorization: Bearer`.
             *     Not shown again: Airlock keeps its digest only.
             */
            token: string;
        };
        /** @description A job with its log. */
        JobDetails: components["schemas"]["JobSnapshot"] & {
            /** @description Its log lines (first 1000). */
            logs: string[];
            /** @description Total log lines. */
            logCount: number;
            waiting?: components["schemas"]["WaitReason"] | null;
        };
        /** @description One job of a batch run on both sides. */
        JobEnds: {
            /** @description The job, `<queue>:<id>`. */
            job: string;
            /** @description How it ended in the recorded run. */
            recorded: Record<string, never>;
            /** @description How it ended in the replayed run. */
            replayed: Record<string, never>;
        };
        /**
         * @description Options for one job, in BullMQ's JSON spelling. Absent fields take the
         *     queue binding's defaults.
         */
        JobOptions: {
            /**
             * @description A custom job id (not an integer, no `:`): adding a job whose id
             *     exists adds nothing.
             */
            jobId?: string | null;
            /**
             * Format: int64
             * @description Milliseconds before the job may run (at most a year).
             */
            delay?: number | null;
            /**
             * Format: int32
             * @description 1 (highest) to 2,097,152 (lowest); absent or 0 means no priority.
             */
            priority?: number | null;
            /** @description Take this job before older waiting ones (not with a priority). */
            lifo?: boolean | null;
            /**
             * Format: int32
             * @description Attempts in total (1: never retried), at most 10,000.
             */
            attempts?: number | null;
            backoff?: components["schemas"]["Backoff"] | null;
            removeOnComplete?: components["schemas"]["Retention"] | null;
            removeOnFail?: components["schemas"]["Retention"] | null;
            deduplication?: components["schemas"]["Deduplication"] | null;
            limits?: components["schemas"]["LimitsOverride"] | null;
        } & (({
            backoff?: {
                /** @constant */
                type?: "fixed";
            };
        } | {
            backoff?: {
                delay?: unknown;
            };
        } | {
            attempts?: unknown;
        } | {
            attempts: number;
            backoff?: {
                delay?: unknown;
            };
        } | {
            attempts: number;
            backoff?: {
                delay?: unknown;
            };
        } | {
            attempts: number;
            backoff?: {
                delay?: unknown;
            };
        } | {
            attempts: number;
            backoff?: {
                delay?: unknown;
            };
        }) & ({
            /** @enum {unknown} */
            lifo?: false | null;
        } | {
            priority?: unknown;
        }));
        /** @description A page of jobs. */
        JobPage: {
            /** @description The jobs. */
            jobs: components["schemas"]["JobSnapshot"][];
            /** @description Offset of the next page, when there may be one. */
            next?: number | null;
        };
        /** @description Everything known about one job. */
        JobSnapshot: {
            /** @description Job id. */
            id: string;
            /** @description Queue. */
            queue: string;
            /** @description BullMQ job name. */
            name: string;
            /** @description State. */
            state: components["schemas"]["JobState"];
            /** @description Data as enqueued. */
            data: unknown;
            /** @description BullMQ options as stored. */
            opts: unknown;
            /** @description Last progress report. */
            progress: unknown;
            /** @description Result, when completed. */
            returnvalue?: unknown;
            /** @description Why it failed, when failed (or why the last attempt failed). */
            failedReason?: string | null;
            /**
             * @description Airlock failure kind of the last failed attempt: the kind Airlock
             *     put in front of `failedReason` (`fuel_exhausted: ...`).
             */
            failureKind?: string | null;
            /**
             * Format: int32
             * @description Attempts that ended (failed or completed).
             */
            attemptsMade: number;
            /**
             * Format: int32
             * @description Attempts that started (including ones that stalled).
             */
            attemptsStarted: number;
            /**
             * Format: int32
             * @description Times the job was found stalled and recovered.
             */
            stalledCount: number;
            /**
             * Format: int64
             * @description Enqueue time, ms since the epoch.
             */
            timestamp: number;
            /**
             * Format: int64
             * @description Start of the last run.
             */
            processedOn?: number | null;
            /**
             * Format: int64
             * @description End of the job.
             */
            finishedOn?: number | null;
            /**
             * Format: int64
             * @description Delay in ms.
             */
            delay: number;
            /**
             * Format: int32
             * @description Priority (0: none).
             */
            priority: number;
            /** @description The handler digest the job is pinned to. */
            handlerDigest?: string | null;
            /**
             * @description The host that took it last: the worker name BullMQ records when the
             *     job becomes active (`pb`), which for Airlock's workers is their host
             *     id (a job a Node worker took shows that worker's name).
             */
            processedByHost?: string | null;
            /** @description The API token that enqueued it. */
            producer?: string | null;
            /**
             * @description The same `pb` field as `processedByHost`, under BullMQ's own
             *     name for it.
             */
            worker?: string | null;
            /** @description Measurements of the last run. */
            metrics: components["schemas"]["RunMetrics"];
            /** @description Durable steps recorded so far (ids). */
            steps: string[];
            /** @description Flow parent key (`prefix:queue:id`), if a child. */
            parentKey?: string | null;
            /**
             * @description What a delayed job is parked for beyond BullMQ's own delays:
             *     `sleeping` (a durable sleep), `event` or `token` (a durable wait);
             *     absent otherwise. `GET /v1/jobs/{ref}`'s `waiting` says more.
             */
            parked?: string | null;
            batch?: components["schemas"]["BatchInfo"] | null;
        };
        /**
         * @description Where a job is in its life (BullMQ states).
         * @enum {string}
         */
        JobState: "waiting" | "prioritized" | "delayed" | "waiting-children" | "active" | "completed" | "failed" | "unknown";
        /** @description Retention by age and/or count. */
        KeepJobs: {
            /**
             * Format: int64
             * @description Keep jobs younger than this many seconds (BullMQ uses seconds here).
             */
            age?: number | null;
            /**
             * Format: int64
             * @description Keep at most this many.
             */
            count?: number | null;
        };
        /**
         * @description Per-key concurrency: at most `limit` jobs whose data holds the same
         *     value at `key` run at once, across the fleet (the queue's
         *     `globalConcurrency` and each host's `concurrency` still cap them all).
         *     Keys take turns: a key with a deep backlog does not hold up another
         *     key's jobs. A job without a value at `key` is limited by the queue's
         *     own limits only. See `state::key_limits`.
         */
        KeyConcurrency: {
            /** @description Where the job's data holds its key (`$.customerId`). */
            key: string;
            /**
             * Format: int64
             * @description Jobs of one key at once, 1 to 100000.
             */
            limit: number;
        };
        /** @description One key's jobs now. */
        KeyJobs: {
            /** @description The key's value. */
            value: unknown;
            /**
             * Format: int64
             * @description Slots it holds (running jobs, and starts reserved for them).
             */
            running: number;
            /**
             * Format: int64
             * @description Its jobs waiting for a slot: in its line, on their way into it, and
             *     held back at enqueue among the jobs scanned.
             */
            queued: number;
        };
        /**
         * @description A per-key start rate (`keyThrottle`, `keyRateLimit`): `limit` starts per
         *     `periodMs` for the jobs whose data holds the same value at `key`,
         *     `burst` of them back to back (default 1). A job without a value at
         *     `key` is not limited. See `state::key_rates`.
         */
        KeyRate: {
            /** @description Where the job's data holds its key (`$.customerId`). */
            key: string;
            /**
             * Format: int64
             * @description Starts per period, 1 to 1000000.
             */
            limit: number;
            /**
             * Format: int64
             * @description The period in milliseconds, at most a day.
             */
            periodMs: number;
            /**
             * Format: int64
             * @description Starts allowed back to back, 1 to 1000000 (default 1).
             */
            burst?: number | null;
        };
        /**
         * @description How long runs took and waited over a window, from the per-minute
         *     tallies' buckets (bounds 1, 2, 5, 10, 20, 50, 100, 200, 500 ms, 1, 2,
         *     5, 10, 30, 60 s, 5 min, 1 h).
         */
        Latency: {
            /**
             * @description From a job's enqueue (plus its delay) to the start of its first run
             *     — including any time flow control held it; later runs (a retry, a
             *     wake-up) are not counted.
             */
            wait: components["schemas"]["Percentiles"];
            /** @description Run times (wall time in the sandbox), every run. */
            run: components["schemas"]["Percentiles"];
        };
        /** @description Everything that bounds one run of a guest. */
        Limits: {
            /**
             * Format: int64
             * @description CPU budget in fuel units (roughly one per wasm instruction). `None`
             *     runs the guest without fuel metering, bounded by `timeout` alone:
             *     fuel instrumentation costs some throughput on loop-heavy code.
             */
            fuel?: number | null;
            /**
             * Format: int64
             * @description Cap on the guest's linear memory, summed over all its memories.
             */
            memoryBytes: number;
            /**
             * Format: int64
             * @description Wall-clock deadline for the whole run, enforced by a timer on the run's
             *     future (the guest yields at every epoch tick so the timer fires)
             *     (JSON: `timeoutMs`).
             */
            timeoutMs: number;
            /**
             * Format: int64
             * @description Largest accepted return value (JSON text), in bytes.
             */
            maxOutputBytes: number;
            /**
             * Format: int64
             * @description Log bytes kept per run (guest logs plus stdout/stderr), each line
             *     counting its text plus a fixed overhead; the rest is counted and
             *     dropped so a log flood cannot exhaust host memory or Redis.
             */
            maxLogBytes: number;
            /**
             * Format: int32
             * @description Log lines kept per run (empty lines included); the rest is counted
             *     and dropped.
             */
            maxLogLines: number;
            /**
             * Format: int32
             * @description Durable steps a single run may record.
             */
            maxSteps: number;
            /**
             * Format: int64
             * @description Largest recorded step result (or KV value), in bytes.
             */
            maxStepBytes: number;
            /**
             * Format: int32
             * @description Outgoing HTTP requests a run may make; the next one is refused.
             */
            maxHttpRequests: number;
            /**
             * Format: int64
             * @description Largest outgoing request body, in bytes; a larger one fails that
             *     request.
             */
            maxHttpRequestBytes: number;
            /**
             * Format: int64
             * @description Largest response body a run reads from one request, in bytes; reading
             *     past it fails that response.
             */
            maxHttpResponseBytes: number;
            /**
             * Format: int64
             * @description Deadline of one outgoing request (connect, first byte, and between
             *     body chunks), within the run's own deadline (JSON: `httpTimeoutMs`).
             */
            httpTimeoutMs: number;
        };
        /**
         * @description Limits to set; `None` keeps the inherited value. Two uses: a binding's
         *     `limits` replace Airlock's defaults ([`Limits::default`]), up or down,
         *     checked against the host maxima ([`Limits::with_settings`],
         *     [`Limits::check_within`]); a job's `opts.limits` may only lower its
         *     binding's ([`Limits::lowered_by`]) — on an unmetered binding a job may
         *     set any fuel budget, which a host whose maximum it exceeds refuses at
         *     run time. Zero is refused either way. The schema's maxima are the
         *     default host maxima ([`HostMaxima::default`], what `airlock serve` runs
         *     with).
         */
        LimitsOverride: {
            /**
             * Format: int64
             * @description Lower fuel budget.
             */
            fuel?: number | null;
            /**
             * Format: int64
             * @description Lower memory cap, in bytes.
             */
            memoryBytes?: number | null;
            /**
             * Format: int64
             * @description Shorter timeout, in milliseconds.
             */
            timeoutMs?: number | null;
            /**
             * Format: int64
             * @description Smaller output cap.
             */
            maxOutputBytes?: number | null;
            /**
             * Format: int64
             * @description Smaller log cap.
             */
            maxLogBytes?: number | null;
            /**
             * Format: int32
             * @description Fewer log lines.
             */
            maxLogLines?: number | null;
            /**
             * Format: int32
             * @description Fewer steps.
             */
            maxSteps?: number | null;
            /**
             * Format: int64
             * @description Smaller step results.
             */
            maxStepBytes?: number | null;
            /**
             * Format: int32
             * @description Fewer outgoing HTTP requests.
             */
            maxHttpRequests?: number | null;
            /**
             * Format: int64
             * @description Smaller outgoing request bodies.
             */
            maxHttpRequestBytes?: number | null;
            /**
             * Format: int64
             * @description Smaller response bodies.
             */
            maxHttpResponseBytes?: number | null;
            /**
             * Format: int64
             * @description Shorter per-request deadline, in milliseconds.
             */
            httpTimeoutMs?: number | null;
        };
        /**
         * @description A state jobs can be listed in.
         * @enum {string}
         */
        ListState: "waiting" | "prioritized" | "delayed" | "waiting-children" | "active" | "completed" | "failed";
        /** @description An entry as listed. */
        ListedEntry: components["schemas"]["AuditEntry"] & {
            /**
             * @description Whether its seal verifies under the fleet key (`false` for an
             *     entry written or altered by hand, or on a host without the key).
             */
            sealed: boolean;
        };
        /** @description The calling token. */
        Me: {
            /** @description Its name (the producer recorded on the jobs it enqueues). */
            name: string;
            /** @description Its role: `admin`, `deployer`, `producer`, `reader` or `cron`. */
            role: string;
            scope?: components["schemas"]["Scope"] | null;
        };
        /** @description What to migrate a queue's parked jobs to. */
        MigrateTo: {
            /** @description The digest of an uploaded version of the queue's handler. */
            to: string;
            /** @description Replay and report only; move nothing. Default `false`. */
            dryRun?: boolean;
        };
        /** @description What a migration did. */
        Migration: {
            /** @description The version the jobs moved to. */
            to: string;
            /** @description Whether this was a dry run (nothing moved). */
            dryRun: boolean;
            /** @description The jobs moved (with a dry run: that would move). */
            migrated: string[];
            /** @description The parked jobs refused, and why. */
            refused: components["schemas"]["Refused"][];
            /**
             * @description Delayed jobs left alone: not parked in a sleep or wait, or already
             *     on the target version.
             */
            skipped: number;
        };
        /** @description One minute's runs. */
        MinuteStats: {
            /**
             * Format: int64
             * @description The minute's start, ms since the epoch.
             */
            at: number;
            /**
             * @description Runs that ended in it, by how: `completed`, a failure kind
             *     (`fuel_exhausted`, `guest_retry`...), `slept`, `waited`.
             */
            runs: {
                [key: string]: number;
            };
        };
        /** @description A token to create. */
        NewToken: {
            /**
             * @description Its name (1–128 of `A-Za-z0-9._-`): the caller's name in the API,
             *     and the producer of the jobs it enqueues. A live token of the name
             *     (managed or configured) is refused (409).
             */
            name: string;
            /**
             * @description What it may do: `admin`, `deployer`, `producer`, `reader` or
             *     `cron`.
             */
            role: components["schemas"]["Role"];
            scope?: components["schemas"]["Scope"] | null;
            /**
             * Format: int64
             * @description Seconds until it stops working (1 to ten years); without it, it
             *     works until revoked.
             */
            expiresInSeconds?: number | null;
        } & ({
            scope?: null;
        } | {
            /** @enum {unknown} */
            role?: "deployer" | "producer" | "reader" | "cron";
        });
        /** @description Remove the queue and every job in it. */
        ObliterateRequest: {
            /** @description The queue's name, to confirm. */
            confirm: string;
            /** @description Also when jobs are active. */
            force?: boolean;
        };
        /**
         * @description Where every job of a queue that failed for good is announced, once:
         *     a job on `queue` (a dead-letter queue, bound to any handler) and/or an
         *     event named `event`, whose data names the job and why it failed.
         */
        OnFailure: {
            /** @description The queue that receives a job per failure. */
            queue?: string | null;
            /** @description The event sent per failure. */
            event?: string | null;
        };
        Option: null | string;
        /**
         * @description Percentiles of one latency, in ms: each is the bound of the bucket it
         *     fell in, so the true value is at most that (and above the bucket
         *     below); `null` when there were no runs, or past the last bound (over
         *     an hour).
         */
        Percentiles: {
            /**
             * Format: int64
             * @description How many runs were measured.
             */
            count: number;
            /**
             * Format: int64
             * @description The median.
             */
            p50?: number | null;
            /**
             * Format: int64
             * @description The 90th percentile.
             */
            p90?: number | null;
            /**
             * Format: int64
             * @description The 99th percentile.
             */
            p99?: number | null;
        };
        /** @description What a promote did. */
        Promotion: {
            /** @description The queue's handler. */
            handler: string;
            /** @description The version the queues' new jobs ran before. */
            from: string;
            /** @description The candidate they all run now. */
            to: string;
            /** @description The queues whose new jobs run it now. */
            queues: string[];
            /**
             * @description Whether it became the handler's current version (`allQueues`), or
             *     only these queues' own.
             */
            current: boolean;
        };
        /** @description Job counts of a queue. */
        QueueCounts: {
            /**
             * Format: int64
             * @description Waiting (including while the queue is paused).
             */
            waiting: number;
            /**
             * Format: int64
             * @description Running.
             */
            active: number;
            /**
             * Format: int64
             * @description Delayed.
             */
            delayed: number;
            /**
             * Format: int64
             * @description Waiting with a priority.
             */
            prioritized: number;
            /**
             * Format: int64
             * @description Flow parents waiting for children.
             */
            waitingChildren: number;
            /**
             * Format: int64
             * @description Completed and kept.
             */
            completed: number;
            /**
             * Format: int64
             * @description Failed and kept.
             */
            failed: number;
            /** @description Whether the queue is paused. */
            paused: boolean;
        };
        /** @description Per-key state of a queue with `keyConcurrency`. */
        QueueKeys: {
            /** @description The binding's key path. */
            key: string;
            /**
             * Format: int64
             * @description Jobs of one key at once.
             */
            limit: number;
            /** @description The keys found, busiest first. */
            keys: components["schemas"]["KeyJobs"][];
            /**
             * @description How many jobs were scanned to find the keys (up to 500 each of the
             *     active, waiting, prioritized and delayed ones, newest first).
             */
            scanned: number;
        };
        /** @description The queue list. */
        QueueList: {
            /** @description Bound queues by name. */
            queues: components["schemas"]["QueueView"][];
        };
        /** @description A queue-name pattern: a queue name in which `*` may stand anywhere. */
        QueuePattern: string;
        /** @description A queue: its binding and job counts. */
        QueueView: components["schemas"]["Binding"] & {
            counts?: components["schemas"]["QueueCounts"] | null;
        };
        /** @description A fleet-wide rate limit: at most `max` jobs started per `durationMs`. */
        RateLimit: {
            /**
             * Format: int64
             * @description Jobs per window.
             */
            max: number;
            /**
             * Format: int64
             * @description Window length in milliseconds (at most a day).
             */
            durationMs: number;
        };
        /** @description How far a promote or rollback reaches. */
        Reach: {
            /**
             * @description Promote: make the candidate the handler's current version, for
             *     every queue bound to it without a version of its own (default `false`:
             *     this queue alone runs it).
             */
            allQueues?: boolean;
            /**
             * @description Rollback: go back a version on this queue alone, never moving the
             *     handler's current version (default `false`: without a canary or a
             *     version of its own, the handler goes back for every queue bound to
             *     it).
             */
            queueOnly?: boolean;
        };
        /** @description A read token for one job. */
        ReadToken: {
            /**
             * @description The token (`jrt_…`, or `jrf_…` for a flow): give it to the page
             *     that follows the job.
             */
            token: string;
            /** @description The job it opens, `<queue>:<id>`. */
            ref: string;
            /**
             * Format: int64
             * @description When it stops working (and ends a stream it opened), ms since the
             *     epoch.
             */
            expiresAt: number;
            /**
             * @description The job's event stream with the token, relative to the API's base
             *     URL: what `EventSource` opens.
             */
            eventsPath: string;
        };
        /** @description What the token opens, and for how long. */
        ReadTokenRequest: {
            /**
             * Format: int64
             * @description Seconds until it expires (1 to 3600; default 600).
             */
            expiresInSeconds?: number | null;
            /**
             * @description Also the streams of the jobs below this one in its flow (its
             *     children, theirs, …, up to a flow's 8 levels) that its producer
             *     enqueued (default `false`: this job's alone).
             */
            flow?: boolean | null;
        };
        /** @description An event as the recent-events stream keeps it. */
        RecentEvent: {
            /** @description Its id. */
            id: string;
            /** @description Its name. */
            name: string;
            /**
             * Format: int64
             * @description When Airlock received it, ms since the epoch.
             */
            ts: number;
            /** @description The producer token that sent it (none: an admin). */
            producer?: string | null;
            /** @description Its payload. */
            data: unknown;
        };
        /** @description One recent event and the jobs it created. */
        RecentEventJobs: components["schemas"]["RecentEvent"] & {
            /**
             * @description Its job on each queue now subscribed to its name, as `<queue>:<id>`,
             *     while the job exists (a debounced queue's job has another id).
             */
            jobs: string[];
            /**
             * @description The jobs whose durable wait (`wait-for-event`) it ended, as
             *     `<queue>:<id>`: those waiting when it was sent and those that
             *     started waiting later and found it among the recent events (the
             *     first 100; the record lasts 7 days from its last entry, and a job
             *     removed since stays listed).
             */
            resumed: string[];
            /**
             * @description The jobs it cancelled through their bindings' `cancelOn` rules, as
             *     `<queue>:<id>` (the first 100, in the same record).
             */
            cancelled: string[];
        };
        /** @description The recent events. */
        RecentEvents: {
            /** @description Newest first. */
            events: components["schemas"]["RecentEventJobs"][];
        };
        /**
         * @description An HTTP body as recorded: its first [`MAX_BODY_BYTES`] as UTF-8 text
         *     (lossy: bytes that are not UTF-8 become U+FFFD) and its full length.
         *     No hash of the whole body is kept: one over a body holding a weak
         *     secret would let a reader guess it.
         */
        RecordedBody: {
            /** @description The body's first bytes as UTF-8 text (lossy when not text). */
            text: string;
            /**
             * Format: int64
             * @description Its full length, bytes.
             */
            len: number;
            /** @description Whether `text` holds less than the whole body. */
            cut?: boolean;
        };
        /** @description An invoked child's end as recorded. */
        RecordedChildEnd: {
            /** @description The return value. */
            value: string;
            /** @enum {string} */
            end: "completed";
        } | {
            /** @description The failure kind. */
            kind: string;
            /** @description Why. */
            reason: string;
            /**
             * Format: int32
             * @description Attempts made.
             */
            attempts: number;
            /** @enum {string} */
            end: "failed";
        } | {
            /** @enum {string} */
            end: "timedOut";
        };
        /** @description A [`ServiceError`] as recorded. */
        RecordedError: {
            /** @description `unsupported`, `invalid`, `limitExceeded`, `unavailable`. */
            kind: string;
            /** @description Its message. */
            message: string;
        };
        /** @description The job a run received. */
        RecordedJob: {
            /** @description Job id. */
            id: string;
            /** @description Queue. */
            queue: string;
            /** @description Job name. */
            name: string;
            /** @description Its data, JSON text. */
            data: string;
            /**
             * Format: int32
             * @description The attempt, from 1.
             */
            attempt: number;
            /**
             * Format: int32
             * @description Attempts allowed.
             */
            maxAttempts: number;
            /**
             * Format: int64
             * @description Enqueued at, ms since the epoch.
             */
            enqueuedAt: number;
            /** @description Flow parent as `(queue, id)`. */
            parent?: [
                string,
                string
            ] | null;
        };
        /** @description How a recorded run ended. */
        RecordedOutcome: {
            /** @description The output. */
            output: string;
            /** @enum {string} */
            end: "completed";
        } | {
            /** @description The failure kind (`guest_retry`, `fuel_exhausted`...). */
            kind: string;
            /** @description Why. */
            reason: string;
            /** @enum {string} */
            end: "failed";
        } | {
            /** @description The sleep's id. */
            id: string;
            /** @enum {string} */
            end: "slept";
        } | {
            /** @description The wait's id. */
            id: string;
            /** @enum {string} */
            end: "waited";
        } | {
            /** @description The invoke's step id. */
            id: string;
            /** @enum {string} */
            end: "invoked";
        } | {
            /** @description `retryAfter` or `rateLimit`. */
            how: string;
            /**
             * Format: int64
             * @description For how long, ms.
             */
            ms: number;
            /** @description Why. */
            reason: string;
            /** @enum {string} */
            end: "later";
        };
        /** @description An HTTP response as recorded. */
        RecordedResponse: {
            /**
             * Format: int32
             * @description Its status.
             */
            status: number;
            /** @description Its headers (the first [`MAX_HEADERS`]). */
            headers: [
                string,
                string
            ][];
            /** @description Its body as the guest read it (up to where it stopped reading). */
            body: components["schemas"]["RecordedBody"];
        };
        /** @description What a wait waits for, as recorded. */
        RecordedWaitFor: {
            /** @description Its name. */
            name: string;
            /** @description The JSON path its data must hold `value` at. */
            path?: string | null;
            /** @description That value. */
            value?: unknown;
            /** @enum {string} */
            for: "event";
        } | {
            /** @enum {string} */
            for: "token";
        };
        /** @description One job a migration refused. */
        Refused: {
            /** @description `<queue>:<id>`. */
            job: string;
            /** @description Why. */
            reason: string;
            report?: components["schemas"]["Report"] | null;
        };
        /** @description The handler version to replay with. */
        ReplayWith: {
            /**
             * @description The digest of an uploaded handler version (64 lowercase hex
             *     digits).
             */
            digest: string;
        };
        /** @description What a replay of one job found. */
        Report: {
            /** @description The job, `<queue>:<id>`. */
            job: string;
            /** @description Same, different or diverged. */
            verdict: components["schemas"]["Verdict"];
            divergedAt?: components["schemas"]["Divergence"] | null;
            /** @description Each run replayed: how it ended on both sides. */
            runs: components["schemas"]["RunEnds"][];
            /** @description The steps each side ran, in order. */
            stepsRecorded: string[];
            /** @description The new version's. */
            stepsReplayed: string[];
            /** @description The requests compared. */
            requests: components["schemas"]["Requests"];
            /** @description Every difference of value on the common path, in words. */
            differences: string[];
            /**
             * @description Whether a recorded transcript was cut at its size cap: calls past
             *     the cut were not recorded, so the replay cannot answer them.
             */
            incomplete: boolean;
        };
        /** @description A request, as the lists show it. */
        RequestShown: {
            /** @description Its method. */
            method: string;
            /** @description Its URL. */
            url: string;
            /** @description Its body (cut at 16 KiB). */
            body: string;
        };
        /** @description The requests compared. */
        Requests: {
            /** @description Sent by the new version only. */
            added: components["schemas"]["RequestShown"][];
            /** @description Sent by the recording only. */
            missing: components["schemas"]["RequestShown"][];
            /** @description Sent by both (method and URL), with another body. */
            changed: components["schemas"]["ChangedRequest"][];
        };
        /** @description How many finished jobs to keep (BullMQ `removeOnComplete`/`removeOnFail`). */
        Retention: boolean | number | components["schemas"]["KeepJobs"];
        /** @description The jobs a bulk retry moved back to waiting. */
        Retried: {
            /** @description Their ids. */
            retried: string[];
        };
        /** @description Retry failed jobs in bulk. */
        RetryFailedRequest: {
            /** @description Only the jobs whose last failure was of this kind. */
            failureKind?: string | null;
            /**
             * Format: int32
             * @description At most this many jobs, newest failed first (default 1000).
             */
            limit?: number | null;
        };
        /**
         * @description What a token may do.
         * @enum {string}
         */
        Role: "admin" | "deployer" | "producer" | "reader" | "cron";
        /** @description What a rollback did. */
        Rollback: {
            /** @description The queue's handler. */
            handler: string;
            /** @description The canary's candidate, when the rollback removed a canary. */
            canaryRemoved?: string | null;
            /** @description The version the queues ran before (when they went back a version). */
            from?: string | null;
            /** @description The version they run now (when they went back a version). */
            to?: string | null;
            /** @description The queues whose new jobs run differently now. */
            queues: string[];
        };
        /** @description One run on both sides. */
        RunEnds: {
            /** @description The run, from 1. */
            run: number;
            /** @description How the recorded run ended. */
            recorded: Record<string, never>;
            /** @description How the replayed run ended. */
            replayed: Record<string, never>;
            /**
             * @description For a batch run, each of its jobs on both sides (the run's own end
             *     is then the batch's: `completed` when each job got an outcome).
             */
            jobs?: components["schemas"]["JobEnds"][];
        };
        /** @description One run of a job as its history keeps it (`airlock.run:<n>`). */
        RunEntry: {
            /**
             * Format: int32
             * @description Which run (1 for the first; retries, wake-ups and recoveries count).
             */
            run: number;
            /**
             * Format: int32
             * @description The attempt it belonged to: 1 for the first, one more after each
             *     failure that was retried (a wake-up after a durable sleep and a
             *     recovery after a crash are runs of the same attempt). Absent in
             *     entries older hosts wrote.
             */
            attempt?: number | null;
            /**
             * Format: int64
             * @description When it started, ms since the epoch.
             */
            startedAt: number;
            /**
             * Format: double
             * @description Its wall time, ms.
             */
            wallTimeMs: number;
            /**
             * Format: int64
             * @description Fuel it used, when metered.
             */
            fuelUsed?: number | null;
            /**
             * Format: int64
             * @description Its peak linear memory, bytes.
             */
            peakMemoryBytes: number;
            /**
             * Format: int64
             * @description HTTP requests it sent.
             */
            httpRequests: number;
            /**
             * Format: int64
             * @description HTTP requests refused before sending.
             */
            httpRefused: number;
            /**
             * Format: int64
             * @description Request body bytes sent.
             */
            httpBytesOut: number;
            /**
             * Format: int64
             * @description Response body bytes read.
             */
            httpBytesIn: number;
            /** @description The host that ran it. */
            host: string;
            /** @description How it ended: `completed`, a failure kind, `slept` or `waited`. */
            end: string;
            /**
             * @description Why a failed run failed (the message of its failure; the kind is
             *     `end`), cut to 1,000 characters (`MAX_RUN_REASON`): a job that completed
             *     on a later attempt keeps each earlier attempt's reason here, where
             *     BullMQ's `failedReason` holds only the last one's.
             */
            reason?: string | null;
            /**
             * @description The id of the durable sleep or wait a run that `slept` or `waited`
             *     parked on.
             */
            parkedOn?: string | null;
        };
        /**
         * @description Measurements of a job's last run, from Airlock's job-hash fields. They
         *     are written a moment after the run ends (hosts batch them), so a job
         *     that just finished may not have them yet; a job that retention removed
         *     at its finish never gets them.
         */
        RunMetrics: {
            /**
             * Format: int64
             * @description Fuel used (absent when the run was unmetered).
             */
            fuelUsed?: number | null;
            /**
             * Format: int64
             * @description Peak linear memory, bytes.
             */
            peakMemoryBytes?: number | null;
            /**
             * Format: double
             * @description Wall time, ms (fractional).
             */
            wallTimeMs?: number | null;
            /**
             * Format: int64
             * @description Outbound HTTP requests sent (absent when the run tried none).
             */
            httpRequests?: number | null;
            /**
             * Format: int64
             * @description Outbound HTTP requests refused by the egress rules or the limits
             *     before anything was sent.
             */
            httpRefused?: number | null;
            /**
             * Format: int64
             * @description Request body bytes sent.
             */
            httpBytesOut?: number | null;
            /**
             * Format: int64
             * @description Response body bytes read.
             */
            httpBytesIn?: number | null;
        };
        /** @description One run's transcript. */
        RunTranscript: {
            /**
             * Format: int32
             * @description Which run (BullMQ's `ats`).
             */
            run: number;
            /** @description What the run received and how it ended. */
            transcript: components["schemas"]["Transcript"];
        };
        /**
         * @description The options of the jobs a schedule creates (their ids and times are the
         *     scheduler's; per-job limits are the binding's).
         */
        ScheduleJobOptions: {
            /**
             * Format: int32
             * @description 1 (highest) to 2,097,152 (lowest); absent or 0 means no priority.
             */
            priority?: number | null;
            /** @description Take this job before older waiting ones (not with a priority). */
            lifo?: boolean | null;
            /**
             * Format: int32
             * @description Attempts in total (1: never retried), at most 10,000.
             */
            attempts?: number | null;
            backoff?: components["schemas"]["Backoff"] | null;
            removeOnComplete?: components["schemas"]["Retention"] | null;
            removeOnFail?: components["schemas"]["Retention"] | null;
        } & (({
            backoff?: {
                /** @constant */
                type?: "fixed";
            };
        } | {
            backoff?: {
                delay?: unknown;
            };
        } | {
            attempts?: unknown;
        } | {
            attempts: number;
            backoff?: {
                delay?: unknown;
            };
        } | {
            attempts: number;
            backoff?: {
                delay?: unknown;
            };
        } | {
            attempts: number;
            backoff?: {
                delay?: unknown;
            };
        } | {
            attempts: number;
            backoff?: {
                delay?: unknown;
            };
        }) & ({
            /** @enum {unknown} */
            lifo?: false | null;
        } | {
            priority?: unknown;
        }));
        /** @description A queue's schedules. */
        ScheduleList: {
            /** @description Soonest first. */
            schedules: components["schemas"]["ScheduleView"][];
        };
        /** @description A schedule as requested. */
        ScheduleSpec: {
            /** @description Cron pattern (`0 3 * * *`; six fields for seconds). Exclusive with `every`. */
            pattern?: string | null;
            /**
             * Format: int64
             * @description Interval in milliseconds (at most a year). Exclusive with `pattern`.
             */
            every?: number | null;
            /**
             * @description IANA time zone of the pattern (`Europe/Paris`; default UTC).
             * @enum {string|null}
             */
            tz?: "Africa/Abidjan" | "Africa/Accra" | "Africa/Addis_Ababa" | "Africa/Algiers" | "Africa/Asmara" | "Africa/Asmera" | "Africa/Bamako" | "Africa/Bangui" | "Africa/Banjul" | "Africa/Bissau" | "Africa/Blantyre" | "Africa/Brazzaville" | "Africa/Bujumbura" | "Africa/Cairo" | "Africa/Casablanca" | "Africa/Ceuta" | "Africa/Conakry" | "Africa/Dakar" | "Africa/Dar_es_Salaam" | "Africa/Djibouti" | "Africa/Douala" | "Africa/El_Aaiun" | "Africa/Freetown" | "Africa/Gaborone" | "Africa/Harare" | "Africa/Johannesburg" | "Africa/Juba" | "Africa/Kampala" | "Africa/Khartoum" | "Africa/Kigali" | "Africa/Kinshasa" | "Africa/Lagos" | "Africa/Libreville" | "Africa/Lome" | "Africa/Luanda" | "Africa/Lubumbashi" | "Africa/Lusaka" | "Africa/Malabo" | "Africa/Maputo" | "Africa/Maseru" | "Africa/Mbabane" | "Africa/Mogadishu" | "Africa/Monrovia" | "Africa/Nairobi" | "Africa/Ndjamena" | "Africa/Niamey" | "Africa/Nouakchott" | "Africa/Ouagadougou" | "Africa/Porto-Novo" | "Africa/Sao_Tome" | "Africa/Timbuktu" | "Africa/Tripoli" | "Africa/Tunis" | "Africa/Windhoek" | "America/Adak" | "America/Anchorage" | "America/Anguilla" | "America/Antigua" | "America/Araguaina" | "America/Argentina/Buenos_Aires" | "America/Argentina/Catamarca" | "America/Argentina/ComodRivadavia" | "America/Argentina/Cordoba" | "America/Argentina/Jujuy" | "America/Argentina/La_Rioja" | "America/Argentina/Mendoza" | "America/Argentina/Rio_Gallegos" | "America/Argentina/Salta" | "America/Argentina/San_Juan" | "America/Argentina/San_Luis" | "America/Argentina/Tucuman" | "America/Argentina/Ushuaia" | "America/Aruba" | "America/Asuncion" | "America/Atikokan" | "America/Atka" | "America/Bahia" | "America/Bahia_Banderas" | "America/Barbados" | "America/Belem" | "America/Belize" | "America/Blanc-Sablon" | "America/Boa_Vista" | "America/Bogota" | "America/Boise" | "America/Buenos_Aires" | "America/Cambridge_Bay" | "America/Campo_Grande" | "America/Cancun" | "America/Caracas" | "America/Catamarca" | "America/Cayenne" | "America/Cayman" | "America/Chicago" | "America/Chihuahua" | "America/Ciudad_Juarez" | "America/Coral_Harbour" | "America/Cordoba" | "America/Costa_Rica" | "America/Coyhaique" | "America/Creston" | "America/Cuiaba" | "America/Curacao" | "America/Danmarkshavn" | "America/Dawson" | "America/Dawson_Creek" | "America/Denver" | "America/Detroit" | "America/Dominica" | "America/Edmonton" | "America/Eirunepe" | "America/El_Salvador" | "America/Ensenada" | "America/Fort_Nelson" | "America/Fort_Wayne" | "America/Fortaleza" | "America/Glace_Bay" | "America/Godthab" | "America/Goose_Bay" | "America/Grand_Turk" | "America/Grenada" | "America/Guadeloupe" | "America/Guatemala" | "America/Guayaquil" | "America/Guyana" | "America/Halifax" | "America/Havana" | "America/Hermosillo" | "America/Indiana/Indianapolis" | "America/Indiana/Knox" | "America/Indiana/Marengo" | "America/Indiana/Petersburg" | "America/Indiana/Tell_City" | "America/Indiana/Vevay" | "America/Indiana/Vincennes" | "America/Indiana/Winamac" | "America/Indianapolis" | "America/Inuvik" | "America/Iqaluit" | "America/Jamaica" | "America/Jujuy" | "America/Juneau" | "America/Kentucky/Louisville" | "America/Kentucky/Monticello" | "America/Knox_IN" | "America/Kralendijk" | "America/La_Paz" | "America/Lima" | "America/Los_Angeles" | "America/Louisville" | "America/Lower_Princes" | "America/Maceio" | "America/Managua" | "America/Manaus" | "America/Marigot" | "America/Martinique" | "America/Matamoros" | "America/Mazatlan" | "America/Mendoza" | "America/Menominee" | "America/Merida" | "America/Metlakatla" | "America/Mexico_City" | "America/Miquelon" | "America/Moncton" | "America/Monterrey" | "America/Montevideo" | "America/Montreal" | "America/Montserrat" | "America/Nassau" | "America/New_York" | "America/Nipigon" | "America/Nome" | "America/Noronha" | "America/North_Dakota/Beulah" | "America/North_Dakota/Center" | "America/North_Dakota/New_Salem" | "America/Nuuk" | "America/Ojinaga" | "America/Panama" | "America/Pangnirtung" | "America/Paramaribo" | "America/Phoenix" | "America/Port-au-Prince" | "America/Port_of_Spain" | "America/Porto_Acre" | "America/Porto_Velho" | "America/Puerto_Rico" | "America/Punta_Arenas" | "America/Rainy_River" | "America/Rankin_Inlet" | "America/Recife" | "America/Regina" | "America/Resolute" | "America/Rio_Branco" | "America/Rosario" | "America/Santa_Isabel" | "America/Santarem" | "America/Santiago" | "America/Santo_Domingo" | "America/Sao_Paulo" | "America/Scoresbysund" | "America/Shiprock" | "America/Sitka" | "America/St_Barthelemy" | "America/St_Johns" | "America/St_Kitts" | "America/St_Lucia" | "America/St_Thomas" | "America/St_Vincent" | "America/Swift_Current" | "America/Tegucigalpa" | "America/Thule" | "America/Thunder_Bay" | "America/Tijuana" | "America/Toronto" | "America/Tortola" | "America/Vancouver" | "America/Virgin" | "America/Whitehorse" | "America/Winnipeg" | "America/Yakutat" | "America/Yellowknife" | "Antarctica/Casey" | "Antarctica/Davis" | "Antarctica/DumontDUrville" | "Antarctica/Macquarie" | "Antarctica/Mawson" | "Antarctica/McMurdo" | "Antarctica/Palmer" | "Antarctica/Rothera" | "Antarctica/South_Pole" | "Antarctica/Syowa" | "Antarctica/Troll" | "Antarctica/Vostok" | "Arctic/Longyearbyen" | "Asia/Aden" | "Asia/Almaty" | "Asia/Amman" | "Asia/Anadyr" | "Asia/Aqtau" | "Asia/Aqtobe" | "Asia/Ashgabat" | "Asia/Ashkhabad" | "Asia/Atyrau" | "Asia/Baghdad" | "Asia/Bahrain" | "Asia/Baku" | "Asia/Bangkok" | "Asia/Barnaul" | "Asia/Beirut" | "Asia/Bishkek" | "Asia/Brunei" | "Asia/Calcutta" | "Asia/Chita" | "Asia/Choibalsan" | "Asia/Chongqing" | "Asia/Chungking" | "Asia/Colombo" | "Asia/Dacca" | "Asia/Damascus" | "Asia/Dhaka" | "Asia/Dili" | "Asia/Dubai" | "Asia/Dushanbe" | "Asia/Famagusta" | "Asia/Gaza" | "Asia/Harbin" | "Asia/Hebron" | "Asia/Ho_Chi_Minh" | "Asia/Hong_Kong" | "Asia/Hovd" | "Asia/Irkutsk" | "Asia/Istanbul" | "Asia/Jakarta" | "Asia/Jayapura" | "Asia/Jerusalem" | "Asia/Kabul" | "Asia/Kamchatka" | "Asia/Karachi" | "Asia/Kashgar" | "Asia/Kathmandu" | "Asia/Katmandu" | "Asia/Khandyga" | "Asia/Kolkata" | "Asia/Krasnoyarsk" | "Asia/Kuala_Lumpur" | "Asia/Kuching" | "Asia/Kuwait" | "Asia/Macao" | "Asia/Macau" | "Asia/Magadan" | "Asia/Makassar" | "Asia/Manila" | "Asia/Muscat" | "Asia/Nicosia" | "Asia/Novokuznetsk" | "Asia/Novosibirsk" | "Asia/Omsk" | "Asia/Oral" | "Asia/Phnom_Penh" | "Asia/Pontianak" | "Asia/Pyongyang" | "Asia/Qatar" | "Asia/Qostanay" | "Asia/Qyzylorda" | "Asia/Rangoon" | "Asia/Riyadh" | "Asia/Saigon" | "Asia/Sakhalin" | "Asia/Samarkand" | "Asia/Seoul" | "Asia/Shanghai" | "Asia/Singapore" | "Asia/Srednekolymsk" | "Asia/Taipei" | "Asia/Tashkent" | "Asia/Tbilisi" | "Asia/Tehran" | "Asia/Tel_Aviv" | "Asia/Thimbu" | "Asia/Thimphu" | "Asia/Tokyo" | "Asia/Tomsk" | "Asia/Ujung_Pandang" | "Asia/Ulaanbaatar" | "Asia/Ulan_Bator" | "Asia/Urumqi" | "Asia/Ust-Nera" | "Asia/Vientiane" | "Asia/Vladivostok" | "Asia/Yakutsk" | "Asia/Yangon" | "Asia/Yekaterinburg" | "Asia/Yerevan" | "Atlantic/Azores" | "Atlantic/Bermuda" | "Atlantic/Canary" | "Atlantic/Cape_Verde" | "Atlantic/Faeroe" | "Atlantic/Faroe" | "Atlantic/Jan_Mayen" | "Atlantic/Madeira" | "Atlantic/Reykjavik" | "Atlantic/South_Georgia" | "Atlantic/St_Helena" | "Atlantic/Stanley" | "Australia/ACT" | "Australia/Adelaide" | "Australia/Brisbane" | "Australia/Broken_Hill" | "Australia/Canberra" | "Australia/Currie" | "Australia/Darwin" | "Australia/Eucla" | "Australia/Hobart" | "Australia/LHI" | "Australia/Lindeman" | "Australia/Lord_Howe" | "Australia/Melbourne" | "Australia/NSW" | "Australia/North" | "Australia/Perth" | "Australia/Queensland" | "Australia/South" | "Australia/Sydney" | "Australia/Tasmania" | "Australia/Victoria" | "Australia/West" | "Australia/Yancowinna" | "Brazil/Acre" | "Brazil/DeNoronha" | "Brazil/East" | "Brazil/West" | "CET" | "CST6CDT" | "Canada/Atlantic" | "Canada/Central" | "Canada/Eastern" | "Canada/Mountain" | "Canada/Newfoundland" | "Canada/Pacific" | "Canada/Saskatchewan" | "Canada/Yukon" | "Chile/Continental" | "Chile/EasterIsland" | "Cuba" | "EET" | "EST" | "EST5EDT" | "Egypt" | "Eire" | "Etc/GMT" | "Etc/GMT+0" | "Etc/GMT+1" | "Etc/GMT+10" | "Etc/GMT+11" | "Etc/GMT+12" | "Etc/GMT+2" | "Etc/GMT+3" | "Etc/GMT+4" | "Etc/GMT+5" | "Etc/GMT+6" | "Etc/GMT+7" | "Etc/GMT+8" | "Etc/GMT+9" | "Etc/GMT-0" | "Etc/GMT-1" | "Etc/GMT-10" | "Etc/GMT-11" | "Etc/GMT-12" | "Etc/GMT-13" | "Etc/GMT-14" | "Etc/GMT-2" | "Etc/GMT-3" | "Etc/GMT-4" | "Etc/GMT-5" | "Etc/GMT-6" | "Etc/GMT-7" | "Etc/GMT-8" | "Etc/GMT-9" | "Etc/GMT0" | "Etc/Greenwich" | "Etc/UCT" | "Etc/UTC" | "Etc/Universal" | "Etc/Zulu" | "Europe/Amsterdam" | "Europe/Andorra" | "Europe/Astrakhan" | "Europe/Athens" | "Europe/Belfast" | "Europe/Belgrade" | "Europe/Berlin" | "Europe/Bratislava" | "Europe/Brussels" | "Europe/Bucharest" | "Europe/Budapest" | "Europe/Busingen" | "Europe/Chisinau" | "Europe/Copenhagen" | "Europe/Dublin" | "Europe/Gibraltar" | "Europe/Guernsey" | "Europe/Helsinki" | "Europe/Isle_of_Man" | "Europe/Istanbul" | "Europe/Jersey" | "Europe/Kaliningrad" | "Europe/Kiev" | "Europe/Kirov" | "Europe/Kyiv" | "Europe/Lisbon" | "Europe/Ljubljana" | "Europe/London" | "Europe/Luxembourg" | "Europe/Madrid" | "Europe/Malta" | "Europe/Mariehamn" | "Europe/Minsk" | "Europe/Monaco" | "Europe/Moscow" | "Europe/Nicosia" | "Europe/Oslo" | "Europe/Paris" | "Europe/Podgorica" | "Europe/Prague" | "Europe/Riga" | "Europe/Rome" | "Europe/Samara" | "Europe/San_Marino" | "Europe/Sarajevo" | "Europe/Saratov" | "Europe/Simferopol" | "Europe/Skopje" | "Europe/Sofia" | "Europe/Stockholm" | "Europe/Tallinn" | "Europe/Tirane" | "Europe/Tiraspol" | "Europe/Ulyanovsk" | "Europe/Uzhgorod" | "Europe/Vaduz" | "Europe/Vatican" | "Europe/Vienna" | "Europe/Vilnius" | "Europe/Volgograd" | "Europe/Warsaw" | "Europe/Zagreb" | "Europe/Zaporozhye" | "Europe/Zurich" | "GB" | "GB-Eire" | "GMT" | "GMT+0" | "GMT-0" | "GMT0" | "Greenwich" | "HST" | "Hongkong" | "Iceland" | "Indian/Antananarivo" | "Indian/Chagos" | "Indian/Christmas" | "Indian/Cocos" | "Indian/Comoro" | "Indian/Kerguelen" | "Indian/Mahe" | "Indian/Maldives" | "Indian/Mauritius" | "Indian/Mayotte" | "Indian/Reunion" | "Iran" | "Israel" | "Jamaica" | "Japan" | "Kwajalein" | "Libya" | "MET" | "MST" | "MST7MDT" | "Mexico/BajaNorte" | "Mexico/BajaSur" | "Mexico/General" | "NZ" | "NZ-CHAT" | "Navajo" | "PRC" | "PST8PDT" | "Pacific/Apia" | "Pacific/Auckland" | "Pacific/Bougainville" | "Pacific/Chatham" | "Pacific/Chuuk" | "Pacific/Easter" | "Pacific/Efate" | "Pacific/Enderbury" | "Pacific/Fakaofo" | "Pacific/Fiji" | "Pacific/Funafuti" | "Pacific/Galapagos" | "Pacific/Gambier" | "Pacific/Guadalcanal" | "Pacific/Guam" | "Pacific/Honolulu" | "Pacific/Johnston" | "Pacific/Kanton" | "Pacific/Kiritimati" | "Pacific/Kosrae" | "Pacific/Kwajalein" | "Pacific/Majuro" | "Pacific/Marquesas" | "Pacific/Midway" | "Pacific/Nauru" | "Pacific/Niue" | "Pacific/Norfolk" | "Pacific/Noumea" | "Pacific/Pago_Pago" | "Pacific/Palau" | "Pacific/Pitcairn" | "Pacific/Pohnpei" | "Pacific/Ponape" | "Pacific/Port_Moresby" | "Pacific/Rarotonga" | "Pacific/Saipan" | "Pacific/Samoa" | "Pacific/Tahiti" | "Pacific/Tarawa" | "Pacific/Tongatapu" | "Pacific/Truk" | "Pacific/Wake" | "Pacific/Wallis" | "Pacific/Yap" | "Poland" | "Portugal" | "ROC" | "ROK" | "Singapore" | "Turkey" | "UCT" | "US/Alaska" | "US/Aleutian" | "US/Arizona" | "US/Central" | "US/East-Indiana" | "US/Eastern" | "US/Hawaii" | "US/Indiana-Starke" | "US/Michigan" | "US/Mountain" | "US/Pacific" | "US/Samoa" | "UTC" | "Universal" | "W-SU" | "WET" | "Zulu" | null;
            /** @description Name of the jobs created (default: the schedule's id). */
            name?: string | null;
            /** @description Data of the jobs created. */
            data?: unknown;
            /** @description Options of the jobs created (attempts, backoff, retention). */
            opts?: components["schemas"]["ScheduleJobOptions"];
            /**
             * Format: int64
             * @description Stop after this many runs.
             */
            limit?: number | null;
        } & ({
            pattern: string;
        } | {
            every: number;
        });
        /** @description A schedule as stored, with its next run. */
        ScheduleView: {
            /** @description The schedule's id. */
            id: string;
            /** @description The queue. */
            queue: string;
            /** @description Name of the jobs it creates. */
            name: string;
            /** @description Cron pattern. */
            pattern?: string | null;
            /**
             * Format: int64
             * @description Interval (ms).
             */
            every?: number | null;
            /** @description Time zone. */
            tz?: string | null;
            /**
             * Format: int64
             * @description Next run, ms since the epoch.
             */
            nextRunAt?: number | null;
            /**
             * Format: int64
             * @description Runs so far.
             */
            iterations: number;
            /**
             * Format: int64
             * @description Run limit.
             */
            limit?: number | null;
            /** @description Job data. */
            data: unknown;
        };
        /**
         * @description Queue-name and handler-name patterns: `*` stands for any run of
         *     characters (`payments*`, `*-eu`), anything else for itself.
         */
        Scope: {
            /**
             * @description The queues it may see and touch: their jobs, bindings, secrets,
             *     schedules, events and figures.
             */
            queues?: components["schemas"]["QueuePattern"][];
            /** @description The handlers it may see, deploy and bind. */
            handlers?: components["schemas"]["HandlerPattern"][];
        } & ({
            queues: unknown;
        } | {
            handlers: unknown;
        });
        /** @description What a search across queues found. */
        SearchResult: {
            /**
             * @description The matches, newest first (by when they were added); each names
             *     its queue and state.
             */
            jobs: components["schemas"]["JobSnapshot"][];
            /** @description How many jobs were looked at. */
            scanned: number;
            /**
             * @description Whether some state of some queue held more jobs than the newest
             *     `SEARCH_DEPTH` (100) looked at: an older match may exist there
             *     (a job named by its exact id is found anyway).
             */
            truncated: boolean;
        };
        /**
         * @description Where a secret may be sent, `scheme://host[:port][/path-prefix]` (schema
         *     only; the syntax `sandbox::secrets::SecretDestination` parses).
         */
        SecretDestinationText: string;
        /** @description A queue's secrets. */
        SecretList: {
            /** @description By name. */
            secrets: components["schemas"]["SecretView"][];
        };
        /** @description A secret to store. */
        SecretSpec: {
            /** @description The value (at most 16,384 characters). Never returned by any API. */
            value: string;
            /**
             * @description Destinations (`scheme://host[:port]`, `*.` for subdomains, each
             *     optionally followed by a path prefix such as `/v3/mail/send`) whose
             *     requests get the value in place of its placeholder; at least one.
             *     With a path, only requests within it (whole segments; a path with a
             *     `.` or `..` segment, also percent-encoded, an encoded `/` or `\`, a
             *     `\`, a `;` or a NUL is within none) get the value.
             */
            allow: components["schemas"]["SecretDestinationText"][];
            /**
             * @description Whether the handler may read the value itself
             *     (`config.reveal-secret`); it is then redacted from the job's logs,
             *     output, step records and failure reason.
             */
            reveal?: boolean;
            /**
             * @description Whether the value replaces its placeholder in request bodies too
             *     (headers always).
             */
            inBody?: boolean;
        };
        /** @description What a listing shows of one secret. */
        SecretView: {
            /** @description The secret's name. */
            name: string;
            /** @description Its destinations. */
            allow: string[];
            /** @description Whether the handler may read it. */
            reveal: boolean;
            /** @description Whether it is substituted in request bodies. */
            inBody: boolean;
            /**
             * Format: int64
             * @description When it was last set (ms since the epoch).
             */
            updatedAtMs: number;
            /**
             * Format: int64
             * @description How many times it was set (1: once). Every host uses the newest
             *     from its next run on: hosts read a run's secrets from Redis when
             *     the run asks for them.
             */
            version: number;
            /**
             * @description False when the stored envelope does not open with this host's key
             *     (set under another key, or altered): runs asking for it fail.
             */
            readable: boolean;
        };
        /**
         * @description One running job per key (`singleton`): a job that starts while another
         *     job of its key runs is skipped (`skip`: it fails as `skipped`, not
         *     retried) or cancels the running one and runs once it has stopped
         *     (`cancel`; a running job another producer token enqueued is not
         *     cancelled but waited for). Across the fleet, with the same leases as
         *     `keyConcurrency`.
         */
        Singleton: {
            /** @description Where the job's data holds its key (`$.customerId`). */
            key: string;
            /** @description What a new job does while one of its key runs. */
            mode: components["schemas"]["SingletonMode"];
        };
        /**
         * @description What a new job of a busy singleton key does.
         * @enum {string}
         */
        SingletonMode: "skip" | "cancel";
        /** @description One durable sleep. */
        SleepEntry: {
            /** @description Its id. */
            id: string;
            /**
             * Format: int64
             * @description When it wakes (or woke), ms since the epoch.
             */
            until: number;
        };
        /**
         * @description The queues a handler may enqueue to or invoke, and the events it may
         *     send: names, or patterns where `*` stands for any run of characters
         *     and `?` for any one character (`payments-*`, `order.*`). Empty lists:
         *     nothing.
         */
        Starts: {
            /** @description Queue names or patterns (`enqueue`, `invoke`). */
            queues?: string[];
            /** @description Event names or patterns (`send-event`). */
            events?: string[];
        };
        /** @description Runs per minute, and their latencies over the whole window. */
        Stats: {
            /** @description Oldest first, one entry per minute (empty minutes included). */
            minutes: components["schemas"]["MinuteStats"][];
            /** @description Latency percentiles of the window's runs. */
            latency: components["schemas"]["Latency"];
            /**
             * @description The window's runs by handler version, for queues whose binding has
             *     (or had, within the window) a canary: each version's runs by end,
             *     wall time and fuel, side by side. Empty otherwise.
             */
            versions: {
                [key: string]: components["schemas"]["VersionStats"];
            };
        };
        /** @description One durable step. */
        StepEntry: {
            /** @description Its id (`id#2` for a second occurrence in one run). */
            id: string;
            /** @description Its recorded result. */
            result: unknown;
            /**
             * Format: int64
             * @description When it was recorded, ms since the epoch (absent for steps recorded
             *     before Airlock kept the time).
             */
            at?: number | null;
        };
        /**
         * Format: int32
         * @description A tenant's weight in `fairness.weights` (schema only).
         */
        TenantWeight: number;
        /** @description A job's runs and durable records, oldest first. */
        Timeline: {
            /** @description Its runs (the first 100 are kept). */
            runs: components["schemas"]["RunEntry"][];
            /** @description Its recorded steps, in the order they were recorded. */
            steps: components["schemas"]["StepEntry"][];
            /** @description Its durable sleeps. */
            sleeps: components["schemas"]["SleepEntry"][];
            /** @description Its durable waits. */
            waits: components["schemas"]["WaitEntry"][];
            /**
             * @description Its children, when it is a flow parent: BullMQ's pending
             *     (`:dependencies`), finished (`:processed`), ignored-failed
             *     (`:failed`) and parent-failing (`:unsuccessful`) children.
             */
            children: components["schemas"]["ChildEntry"][];
            batch?: components["schemas"]["BatchEntry"] | null;
        };
        /** @description A completed token. */
        TokenCompleted: {
            /** @description Always true: the wait has this result, and its job runs again. */
            completed: boolean;
        };
        /** @description The tokens. */
        TokenList: {
            /**
             * @description Configured ones first, then managed ones by name (revoked ones
             *     too).
             */
            tokens: components["schemas"]["TokenView"][];
        };
        /** @description A token as listed: never its secret. */
        TokenView: {
            /** @description Its name. */
            name: string;
            /** @description What it may do. */
            role: components["schemas"]["Role"];
            scope?: components["schemas"]["Scope"] | null;
            /**
             * @description `managed` (created through the API) or `configured` (`--tokens`,
             *     `--tokens-file`: no times).
             */
            source: string;
            /**
             * Format: int64
             * @description When it was created or last rotated, ms since the epoch.
             */
            createdAt?: number | null;
            /** @description The token that created or last rotated it. */
            createdBy?: string | null;
            /**
             * Format: int64
             * @description When it stops working.
             */
            expiresAt?: number | null;
            /**
             * Format: int64
             * @description When an API host last saw it used (written every 10 s).
             */
            lastUsedAt?: number | null;
            /**
             * Format: int64
             * @description When it was revoked: it works no more.
             */
            revokedAt?: number | null;
            /** @description The token that revoked it. */
            revokedBy?: string | null;
        };
        /** @description One run's transcript. */
        Transcript: {
            /** @description The job as the run received it. */
            job: components["schemas"]["RecordedJob"];
            /**
             * Format: int64
             * @description When the run started, ms since the epoch.
             */
            startedAt: number;
            /** @description Every call, in order. */
            calls: components["schemas"]["Call"][];
            /**
             * @description The wall-clock readings the guest took, in order, ns since the
             *     epoch (the first [`MAX_CLOCK_READINGS`]).
             */
            clock?: number[];
            /** @description Whether calls past [`MAX_TRANSCRIPT_BYTES`] were left out. */
            truncated?: boolean;
            /** @description How the run ended. */
            outcome: components["schemas"]["RecordedOutcome"];
            /**
             * @description For a batch run: each job it ran, in the call's order, with its
             *     end (a batch that failed as a whole ends every job with its
             *     failure).
             */
            batch?: components["schemas"]["BatchedJob"][] | null;
        };
        /** @description A job's run transcripts (a binding with `recordTranscripts`). */
        Transcripts: {
            /**
             * @description One per run that left one (the first 25 runs; a run in a batch
             *     whose transcript expired left none), oldest first; empty when the
             *     job's binding does not record them.
             */
            runs: components["schemas"]["RunTranscript"][];
        };
        /** @description Result of a trigger. */
        Triggered: {
            /** @description The run's job, as `<queue>:<id>`. */
            ref: string;
            /**
             * @description True when a run requested just before is still waiting: this request
             *     joined it instead of adding another.
             */
            coalesced: boolean;
        };
        /**
         * @description A replay's verdict.
         * @enum {string}
         */
        Verdict: "same" | "different" | "diverged";
        /** @description One handler version's runs over the window (a binding with a canary). */
        VersionStats: {
            /** @description Runs by how they ended. */
            runs: {
                [key: string]: number;
            };
            /**
             * Format: int64
             * @description Their wall time, summed, ms.
             */
            wallMs: number;
            /**
             * Format: int64
             * @description Their fuel, summed (0 for unmetered runs).
             */
            fuel: number;
        };
        /** @description One durable wait. */
        WaitEntry: {
            /** @description Its id. */
            id: string;
            /** @description What it waits for, in words. */
            waitsFor: string;
            /**
             * Format: int64
             * @description Its deadline, ms since the epoch.
             */
            deadline: number;
            /** @description `pending`, `came` or `timed_out`. */
            outcome: string;
            /** @description What came (the event, the token's result), once it did. */
            value?: unknown;
        };
        /**
         * @description What holds a job back.
         * @enum {string}
         */
        WaitKind: "key_limit" | "tenant_turn" | "throttled" | "sleeping" | "event" | "token" | "delayed" | "children" | "paused" | "no_host" | "capacity_full" | "ready";
        /** @description Why a job waits. */
        WaitReason: {
            /** @description What holds it back. */
            kind: components["schemas"]["WaitKind"];
            /** @description The same, in words. */
            message: string;
            /**
             * Format: int64
             * @description Until when, ms since the epoch (`sleeping`, `delayed`; the deadline
             *     of `event` and `token`).
             */
            until?: number | null;
            /**
             * @description Its key's value (`key_limit`, `throttled`; its tenant for
             *     `tenant_turn`).
             */
            key?: unknown;
            /**
             * Format: int64
             * @description Slots its key (its tenant) holds now (`key_limit`, `tenant_turn`).
             */
            running?: number | null;
            /**
             * Format: int64
             * @description Its key's limit (`key_limit`; starts per period for `throttled`;
             *     its tenant's share for `tenant_turn`).
             */
            limit?: number | null;
            /**
             * Format: int64
             * @description Jobs ahead of it in its key's (tenant's) line (`key_limit`,
             *     `tenant_turn`, once it is in line).
             */
            ahead?: number | null;
            /**
             * @description The other rules that hold it back as well, now: a job in its key's
             *     line whose tenant also runs its share (or in its tenant's line with
             *     its key also at its limit) needs both to let it through. Empty when
             *     only `kind` does (and for every kind but `key_limit` and
             *     `tenant_turn`).
             */
            also?: components["schemas"]["AlsoWaits"][];
        };
        /** @description Result of a wait. */
        WaitResult: {
            /** @description Whether the job finished (completed or failed) in time. */
            finished: boolean;
            /** @description The job as it is now. */
            job: components["schemas"]["JobSnapshot"];
        };
        /**
         * @description Warm instances (`warmInstances`): a host runs a job in an instance an
         *     earlier job left, instead of a fresh one, when both are of this queue,
         *     the same handler version, the same limits and the same producer (the
         *     API token that enqueued them, as Airlock sealed it, or no producer at
         *     all). Anything but a completed job discards the instance. What
         *     persists between its jobs is the handler's module-level state, as in a
         *     BullMQ sandboxed processor's reused child process; see
         *     `sandbox::warm`.
         */
        WarmInstances: {
            /**
             * Format: int32
             * @description Jobs one instance runs at most (default 1000).
             * @default 1000
             */
            maxJobs: number;
            /**
             * Format: int64
             * @description How long an instance waits for its next job, in ms (default 60000,
             *     at most an hour).
             * @default 60000
             */
            idleMs: number;
        };
        /** @description A child node of a flow, on level 2: a flow node with a failure policy. */
        FlowChild2: {
            /** @description BullMQ job name. */
            name: string;
            /** @description The queue of this job (must be bound). */
            queue: string;
            /** @description The job's data. */
            data: unknown;
            /** @description Job options. */
            opts?: components["schemas"]["FlowNodeOptions"];
            onFailure?: components["schemas"]["ChildFailure"] | null;
            /** @description Children that must finish before this job runs. */
            children?: components["schemas"]["FlowChild3"][];
        };
        /** @description A child node of a flow, on level 3: a flow node with a failure policy. */
        FlowChild3: {
            /** @description BullMQ job name. */
            name: string;
            /** @description The queue of this job (must be bound). */
            queue: string;
            /** @description The job's data. */
            data: unknown;
            /** @description Job options. */
            opts?: components["schemas"]["FlowNodeOptions"];
            onFailure?: components["schemas"]["ChildFailure"] | null;
            /** @description Children that must finish before this job runs. */
            children?: components["schemas"]["FlowChild4"][];
        };
        /** @description A child node of a flow, on level 4: a flow node with a failure policy. */
        FlowChild4: {
            /** @description BullMQ job name. */
            name: string;
            /** @description The queue of this job (must be bound). */
            queue: string;
            /** @description The job's data. */
            data: unknown;
            /** @description Job options. */
            opts?: components["schemas"]["FlowNodeOptions"];
            onFailure?: components["schemas"]["ChildFailure"] | null;
            /** @description Children that must finish before this job runs. */
            children?: components["schemas"]["FlowChild5"][];
        };
        /** @description A child node of a flow, on level 5: a flow node with a failure policy. */
        FlowChild5: {
            /** @description BullMQ job name. */
            name: string;
            /** @description The queue of this job (must be bound). */
            queue: string;
            /** @description The job's data. */
            data: unknown;
            /** @description Job options. */
            opts?: components["schemas"]["FlowNodeOptions"];
            onFailure?: components["schemas"]["ChildFailure"] | null;
            /** @description Children that must finish before this job runs. */
            children?: components["schemas"]["FlowChild6"][];
        };
        /** @description A child node of a flow, on level 6: a flow node with a failure policy. */
        FlowChild6: {
            /** @description BullMQ job name. */
            name: string;
            /** @description The queue of this job (must be bound). */
            queue: string;
            /** @description The job's data. */
            data: unknown;
            /** @description Job options. */
            opts?: components["schemas"]["FlowNodeOptions"];
            onFailure?: components["schemas"]["ChildFailure"] | null;
            /** @description Children that must finish before this job runs. */
            children?: components["schemas"]["FlowChild7"][];
        };
        /** @description A child node of a flow, on level 7: a flow node with a failure policy. */
        FlowChild7: {
            /** @description BullMQ job name. */
            name: string;
            /** @description The queue of this job (must be bound). */
            queue: string;
            /** @description The job's data. */
            data: unknown;
            /** @description Job options. */
            opts?: components["schemas"]["FlowNodeOptions"];
            onFailure?: components["schemas"]["ChildFailure"] | null;
            /** @description Children that must finish before this job runs. */
            children?: components["schemas"]["FlowChild8"][];
        };
        /** @description A child node of a flow, on level 8: a flow node with a failure policy. */
        FlowChild8: {
            /** @description BullMQ job name. */
            name: string;
            /** @description The queue of this job (must be bound). */
            queue: string;
            /** @description The job's data. */
            data: unknown;
            /** @description Job options. */
            opts?: components["schemas"]["FlowNodeOptions"];
            onFailure?: components["schemas"]["ChildFailure"] | null;
            /** @description Children that must finish before this job runs. */
            children?: unknown[];
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    health_healthz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description ok */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    health_metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Prometheus text format */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    health_readyz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Redis unreachable: code `unavailable`, the message `redis unreachable: ` and the last probe's error */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    api_tokens_list: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TokenList"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    api_tokens_create: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NewToken"];
            };
        };
        responses: {
            /** @description Created, with its secret */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IssuedToken"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A live token has the name */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No fleet key on this host, or Redis unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    api_tokens_revoke: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Token name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Revoked */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TokenView"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No live managed token has the name */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No fleet key on this host, or Redis unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    api_tokens_rotate: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Token name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Rotated, with its new secret */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IssuedToken"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No live managed token has the name */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No fleet key on this host, or Redis unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    audit_list: {
        parameters: {
            query?: {
                /** @description Only this token's changes (its name). */
                who?: string;
                /** @description Only actions starting with this (`queue.`, `secret.set`). */
                action?: string;
                /** @description Only changes to this queue, handler, token, host or job. */
                target?: string;
                /**
                 * @description Not before this time, ms since the epoch (by Redis's clock, which
                 *     stamped the entry's stream id). After `until`: nothing matches.
                 */
                since?: number;
                /** @description Not after this time, ms since the epoch (Redis's clock). */
                until?: number;
                /** @description At most this many entries (default 100, at most 1,000). */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AuditListing"];
                };
            };
            /** @description Invalid query (the error names the parameter) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    events_recent: {
        parameters: {
            query?: {
                /** @description At most this many (default 50, at most 500). */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RecentEvents"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    events_send: {
        parameters: {
            query?: never;
            header?: {
                /** @description W3C trace context: the jobs the event creates join this trace (under its `send` span when the host exports traces). Malformed: ignored. */
                traceparent?: string | null;
                /** @description W3C trace state, carried with `traceparent`. */
                tracestate?: string | null;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["Event"];
            };
        };
        responses: {
            /** @description Delivered (or already delivered) */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Delivery"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body or event data too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    flows_add: {
        parameters: {
            query?: never;
            header?: {
                /** @description W3C trace context: every job of the flow joins this trace (under the flow's `add` span when the host exports traces). Malformed: ignored. */
                traceparent?: string | null;
                /** @description W3C trace state, carried with `traceparent`. */
                tracestate?: string | null;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["FlowSpec"];
            };
        };
        responses: {
            /** @description Added */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FlowNode"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A queue of the tree is not bound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A node's jobId names a job that exists */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body or job data too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    handlers_list: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HandlerList"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    handlers_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Handler name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HandlerDetails"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    handlers_upload: {
        parameters: {
            query?: {
                /**
                 * @description A version label for this upload (`v1.4.0`, a git sha), 1 to 128
                 *     characters.
                 */
                version?: string;
                /**
                 * @description `true`: store it as a candidate — the current version and every
                 *     queue stay as they are, and no job runs it until a binding names it
                 *     (`canary`, `PUT /v1/queues/{queue}/canary`). The handler must have a
                 *     current version (409 otherwise). Default `false`: it becomes current.
                 */
                candidate?: boolean;
            };
            header?: never;
            path: {
                /** @description Handler name */
                name: string;
            };
            cookie?: never;
        };
        /** @description The component's bytes */
        requestBody: {
            content: {
                "application/octet-stream": number[];
                "application/wasm": number[];
            };
        };
        responses: {
            /** @description Stored: current, or a candidate (`candidate`) */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HandlerVersion"];
                };
            };
            /** @description Bad name or version */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A candidate for a handler with no current version */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Component too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/wasm */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not a valid handler component */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    handlers_delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Handler name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Still bound */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    hosts_list: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HostList"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    hosts_drain: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Host id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HostList"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    hosts_resume: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Host id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HostList"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    jobs_search: {
        parameters: {
            query: {
                /**
                 * @description The text: jobs whose id, name or data (as compact JSON) contain it,
                 *     ignoring case. 1 to 200 characters.
                 */
                q: string;
                /** @description At most this many matches (default 50, at most 200). */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SearchResult"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    jobs_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `<queue>:<id>` */
                ref: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["JobDetails"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    jobs_remove: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `<queue>:<id>` */
                ref: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description No content */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Locked by a worker */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    jobs_cancel: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `<queue>:<id>` */
                ref: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CancelBody"];
            };
        };
        responses: {
            /** @description Cancel requested */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CancelAccepted"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Already finished */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    events_job_events: {
        parameters: {
            query?: {
                /**
                 * @description A read token for this job, or its flow's
                 *     (`POST /v1/jobs/{ref}/read-token`), in place of the `Authorization`
                 *     header, which a browser's `EventSource` cannot send. The stream
                 *     ends when the token expires.
                 */
                token?: string;
            };
            header?: never;
            path: {
                /** @description `<queue>:<id>` */
                ref: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description text/event-stream of the job's events */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No bearer token and no read token, or one that is unknown, expired or another job's */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    jobs_promote: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `<queue>:<id>` */
                ref: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ActionResult"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not delayed */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    jobs_read_token: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `<queue>:<id>` */
                ref: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ReadTokenRequest"];
            };
        };
        responses: {
            /** @description The token */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReadToken"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such job (or not the caller's) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No fleet key on this host, or Redis unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    jobs_repin: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `<queue>:<id>` */
                ref: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ActionResult"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    jobs_replay: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `<queue>:<id>` */
                ref: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ReplayWith"];
            };
        };
        responses: {
            /** @description The replay's report */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Report"];
                };
            };
            /** @description `digest` is malformed or names no uploaded version */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such job */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The job has no transcripts */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    jobs_retry: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `<queue>:<id>` */
                ref: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ActionResult"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not failed or completed */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    jobs_timeline: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `<queue>:<id>` */
                ref: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Timeline"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    jobs_transcript: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description `<queue>:<id>` */
                ref: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Transcripts"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    jobs_wait: {
        parameters: {
            query?: {
                /**
                 * @description How long to wait: a number with a unit, `30s`, `500ms`, `2m`
                 *     (default 30 s, at most 5 min).
                 */
                timeout?: string;
            };
            header?: never;
            path: {
                /** @description `<queue>:<id>` */
                ref: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WaitResult"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    me: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Me"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    queues_list: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["QueueList"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    queues_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["QueueView"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    queues_bind: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BindingSpec"];
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["QueueView"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    queues_unbind: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description No content */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    queues_set_canary: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CanaryRequest"];
            };
        };
        responses: {
            /** @description The binding, with its canary */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Binding"];
                };
            };
            /** @description Bad digest or percent (the field named) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not bound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    queues_clean: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CleanRequest"];
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Cleaned"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    queues_drain: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["DrainRequest"];
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["QueueView"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    events_queue_events: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description text/event-stream of queue events */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    jobs_list: {
        parameters: {
            query: {
                /** @description The state to list. */
                state: components["schemas"]["ListState"];
                /** @description Offset (newest first). */
                start?: number;
                /** @description Page size (default 50). */
                limit?: number;
                /**
                 * @description Keep only the jobs of the page whose id, name or data (as compact
                 *     JSON) contains this text, ignoring case (a page may then hold fewer
                 *     than `limit`; follow `next`).
                 */
                q?: string;
                /**
                 * @description Keep only the jobs of the page whose last failure was of this kind
                 *     (a page may then hold fewer than `limit`; follow `next`).
                 */
                failureKind?: string;
            };
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["JobPage"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Queue not bound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    jobs_enqueue: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: for 24 hours the same key (per producer token) answers with the job it first created, marked `duplicate`. Letters, digits, `-`, `_`, `.`; at most 200. */
                "Idempotency-Key"?: string;
                /** @description W3C trace context: the job's runs join this trace (under the enqueue's span when the host exports traces). Malformed: ignored, the job starts no trace of the caller's. */
                traceparent?: string | null;
                /** @description W3C trace state, carried with `traceparent`. */
                tracestate?: string | null;
            };
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["EnqueueRequest"];
            };
        };
        responses: {
            /** @description Accepted */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Accepted"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Queue not bound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body or job data too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    jobs_enqueue_bulk: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe (see the single enqueue); job i of the bulk is keyed by the key and its index. */
                "Idempotency-Key"?: string;
                /** @description W3C trace context, as for the single enqueue: every job of the bulk joins this trace. */
                traceparent?: string | null;
                /** @description W3C trace state, carried with `traceparent`. */
                tracestate?: string | null;
            };
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BulkEnqueueRequest"];
            };
        };
        responses: {
            /** @description Accepted */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BulkAccepted"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Queue not bound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body or job data too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    queues_keys: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["QueueKeys"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Queue not bound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The binding has no keyConcurrency */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    queues_migrate: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["MigrateTo"];
            };
        };
        responses: {
            /** @description What moved and what was refused */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Migration"];
                };
            };
            /** @description `to` is malformed or not a version of the queue's handler */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The queue is not bound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    queues_obliterate: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ObliterateRequest"];
            };
        };
        responses: {
            /** @description No content */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Conflict with the current state */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    queues_pause: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["QueueView"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    queues_promote: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["Reach"];
            };
        };
        responses: {
            /** @description What was promoted, and where */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Promotion"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not bound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No canary to promote */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    queues_resume: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["QueueView"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    queues_retry_failed: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RetryFailedRequest"];
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Retried"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Queue not bound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    queues_rollback: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["Reach"];
            };
        };
        responses: {
            /** @description What was rolled back */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Rollback"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not bound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No canary and no earlier version */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    schedules_list: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ScheduleList"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    schedules_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
                /** @description Schedule id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ScheduleView"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    schedules_put: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
                /** @description Schedule id */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ScheduleSpec"];
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ScheduleView"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    schedules_delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
                /** @description Schedule id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    schedules_trigger: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
                /** @description Schedule id */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Enqueued (or joined a waiting trigger) */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Triggered"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description A run of this schedule is active */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    secrets_list: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SecretList"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    secrets_put: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
                /** @description Secret name */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SecretSpec"];
            };
        };
        responses: {
            /** @description OK (never the value) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SecretView"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No secrets key on this host, or Redis unavailable */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    secrets_delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Queue name */
                queue: string;
                /** @description Secret name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not found */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    stats: {
        parameters: {
            query?: {
                /** @description How many minutes up to now (default 60, at most 1440). */
                minutes?: number;
                /** @description One queue only (default: every bound queue). */
                queue?: string;
                /**
                 * @description Only the queues bound to this handler now (with `queue`: that
                 *     queue, if this handler runs it; else none).
                 */
                handler?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Stats"];
                };
            };
            /** @description Invalid request (the error names the field) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing or unknown token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The token's role may not do this */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Queue not bound */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    tokens_complete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The wait token (`wt_` and 64 hex digits) */
                token: string;
            };
            cookie?: never;
        };
        /** @description The result: any JSON value */
        requestBody: {
            content: {
                "application/json": unknown;
            };
        };
        responses: {
            /** @description Completed: the waiting job runs again */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TokenCompleted"];
                };
            };
            /** @description The body is not JSON */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such token (or its job is gone) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Already completed, or the wait timed out */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Result too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Redis is unreachable, or failed while the request ran (the message says whether anything changed) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
}
