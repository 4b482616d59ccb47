// The payment processor as a BullMQ *sandboxed processor* file: a Worker
// given this path runs each job in a child process of its own pool instead
// of in the worker's process — BullMQ's own isolation, the peer of
// Airlock's sandbox in the language benchmark (bench-worker.js
// --processor sandboxed-payment).
'use strict';

const { processPayment } = require('./payment-processor');

module.exports = processPayment;
