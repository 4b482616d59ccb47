#!/usr/bin/env node
// A Node producer with BullMQ's own OpenTelemetry telemetry (`bullmq-otel`),
// as a team that traces its BullMQ app today would run it: adds one job
// and exports its `add` span over OTLP/HTTP (protobuf) to the endpoint
// given, so a Rust test can check that Airlock's runs of the job join the
// producer's trace.
//
//   node traced-producer.js --redis redis://127.0.0.1:PORT --prefix bull --queue Q \
//     --otlp http://127.0.0.1:PORT [--name N] [--data '{}'] [--attempts 1] \
//     [--delay MS] [--backoff MS]
//
// `--delay` adds the job delayed; `--backoff` gives its retries a fixed
// backoff of that many ms.
//
// stdout: one JSON line {"jobId":..., "metadata":..., "traceId":..., "spanId":...}:
// the job's id, the telemetry metadata BullMQ stored with it (its `tm`
// option) and the ids of the producer's `add` span. Exit 1 on error.
'use strict';

const { trace, propagation } = require('@opentelemetry/api');
const { W3CTraceContextPropagator } = require('@opentelemetry/core');
const { resourceFromAttributes } = require('@opentelemetry/resources');
const { BasicTracerProvider, SimpleSpanProcessor, InMemorySpanExporter } = require('@opentelemetry/sdk-trace-base');
const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-proto');
const { Queue } = require('bullmq');
const { BullMQOtel } = require('bullmq-otel');
const { parseArgs, closeAll, run } = require('./cli');

async function main() {
  const args = parseArgs(process.argv.slice(2), ['redis', 'queue', 'otlp']);
  const kept = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'node-producer' }),
    spanProcessors: [
      new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${args.otlp.replace(/\/$/, '')}/v1/traces` })),
      new SimpleSpanProcessor(kept),
    ],
  });
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());

  const queue = new Queue(args.queue, {
    connection: { url: args.redis },
    prefix: args.prefix || 'bull',
    telemetry: new BullMQOtel('node-producer'),
  });
  queue.on('error', (err) => console.error('queue error:', err.message));
  try {
    const opts = { attempts: Number(args.attempts || 1) };
    if (args.delay) opts.delay = Number(args.delay);
    if (args.backoff) opts.backoff = { type: 'fixed', delay: Number(args.backoff) };
    const job = await queue.add(args.name || 'traced', JSON.parse(args.data || '{}'), opts);
    await provider.forceFlush();
    const add = kept.getFinishedSpans().find((s) => s.name.startsWith('add '));
    if (!add) throw new Error('bullmq-otel made no add span');
    const { traceId, spanId } = add.spanContext();
    process.stdout.write(
      JSON.stringify({ jobId: job.id, metadata: job.opts.telemetry?.metadata ?? null, traceId, spanId }) + '\n',
    );
  } finally {
    await closeAll([queue]);
    await provider.shutdown();
  }
}

run(main);
