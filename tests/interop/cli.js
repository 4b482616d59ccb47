// What every interop script shares: its `--key value` arguments, JSON that
// may arrive as text, closing BullMQ clients without hanging, and the exit
// code convention (the script's own code; 1 with the stack on an error).
'use strict';

// Minimal `--key value` parser: keeps the scripts free of extra
// dependencies. Throws naming the first missing `required` argument.
function parseArgs(argv, required) {
  const args = {};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i];
    if (!key.startsWith('--') || i + 1 >= argv.length) {
      throw new Error(`bad argument near ${JSON.stringify(key)}`);
    }
    args[key.slice(2)] = argv[i + 1];
  }
  for (const name of required) {
    if (!args[name]) throw new Error(`--${name} is required`);
  }
  return args;
}

// The events stream stores return values as JSON text. QueueEvents in
// bullmq 6 already parses it, but be defensive in case a string slips through.
function parseMaybeJson(value) {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

// Closes BullMQ clients, giving up after 5 s so a stuck connection cannot
// keep the process (and the Rust test waiting on it) alive.
async function closeAll(closables) {
  const closing = Promise.allSettled(closables.map((c) => c.close()));
  let guard;
  const deadline = new Promise((resolve) => (guard = setTimeout(resolve, 5000)));
  await Promise.race([closing, deadline]);
  clearTimeout(guard);
}

// Runs `main` and exits with the code it returns (0 when it returns none).
function run(main) {
  main().then(
    (code) => process.exit(code ?? 0),
    (err) => {
      console.error(err && err.stack ? err.stack : String(err));
      process.exit(1);
    },
  );
}

module.exports = { parseArgs, parseMaybeJson, closeAll, run };
